"""The saved profile's tables are written in pieces (issue 16: the JSON of a 2M-sample
capture's tables is 100 MB, and the lists it was made from several hundred more); the
file must be what one encoding of the whole document gives, whatever the piece size and
whether or not the output can seek back to write the length."""
import io
from array import array

import numpy as np
import pytest

from analysis import explore, jsonio, profile_io
from analysis.location_table import COLUMNS as LOCATION_COLUMNS
from analysis.location_table import LocationTable
from analysis.stack_table import StackTable
from analysis.importers import load
from conftest import FIXTURES, SPINPOOL

CAPTURES = [SPINPOOL / "1.0.0-idle.perf.data", FIXTURES / "perfdata" / "system-wide.perf.data",
            FIXTURES / "offcpu" / "system-wide" / "sys.perf.data"]


class _Pipe(io.BytesIO):
    def seekable(self):
        return False


def _tables(p, columns: bool = True) -> bytes:
    """The document the way the whole of it was encoded before it was written in pieces:
    with the locations as columns after it (PWPROF3: the document holds their source
    files' names), or in it (PWPROF2)."""
    from dataclasses import asdict
    files = {"location_files": LocationTable.of(p.locations).columns()[1]} if columns \
        else {}
    return jsonio.dumps({
        "meta": asdict(p.meta),
        "mappings": [[m.path, m.kind, m.build_id, m.start, m.limit, m.pgoff, m.deleted]
                     for m in p.mappings],
        "functions": [[f.name, f.system_name, f.mapping_id, f.resolved] for f in p.functions],
        "locations": [] if columns else
                     [[loc.mapping_id, loc.address, list(loc.functions), loc.dso_offset,
                       loc.symbol_offset, loc.is_return] +
                      ([[list(x) for x in loc.lines]] if loc.lines else [])
                      for loc in p.locations],
        **files,
        "events": [[e.name, e.frequency, e.period] for e in p.events],
        "strings": p.strings, "notes": p.notes, "coverage": p.coverage,
        "approximate": p.approximate, "truncated_tail": p.truncated_tail,
        "switches_recorded": p.switches.recorded, "switches_watched": p.switches.watched})


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_pieces_of_any_size_make_the_one_document(path, monkeypatch):
    p = load(path)
    whole = _tables(p)
    saved = []
    for rows, out in ((20_000, io.BytesIO()), (3, io.BytesIO()), (1, _Pipe())):
        monkeypatch.setattr(profile_io, "_ROWS", rows)
        profile_io.dump(p, out)
        data = out.getvalue()
        n = int.from_bytes(data[8:16], "little")
        assert data[:8] == profile_io.MAGIC and data[16:16 + n] == whole
        saved.append(data)
    assert saved[0] == saved[1] == saved[2]
    again = profile_io.load(io.BytesIO(saved[0]))
    assert type(again.stacks) is StackTable and again.stacks.is_plain()
    assert again.stacks == p.stacks and len(again) == len(p) > 0
    assert [f.name for f in again.functions] == [f.name for f in p.functions]


def test_loading_runs_no_cyclic_collection_and_restores_the_collector(monkeypatch):
    """Loading a saved profile makes a few hundred thousand objects without a cycle: the
    collector stays paused while the tables are made (its passes were two thirds of the
    time) and is as it was afterwards, enabled or not."""
    import gc
    p = load(str(FIXTURES / "perfdata" / "system-wide.perf.data"))
    out = io.BytesIO()
    profile_io.dump(p, out)
    collections, during = [], []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])
    tables = profile_io._tables

    def watched(doc):
        before = len(collections)
        q = tables(doc)
        during.append((gc.isenabled(), len(collections) - before))
        return q
    monkeypatch.setattr(profile_io, "_tables", watched)
    threshold = gc.get_threshold()
    gc.callbacks.append(seen)
    try:
        gc.set_threshold(5)  # (a pass every 5 new containers: hundreds while decoding)
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            q = profile_io.load(io.BytesIO(out.getvalue()))
            assert gc.isenabled() is enabled
            assert len(q.locations) == len(p.locations) > 20 and q.stacks == p.stacks
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)
        gc.enable()
    assert during == [(False, 0), (False, 0)]


def _located(address: int = 0x10):
    """A profile of two locations, one with (file, line) pairs (DWARF line tables)."""
    from analysis.profile import Profile
    p = Profile()
    p.event("cpu-clock")
    m = p.mapping("/usr/bin/a")
    f, g = p.function("f", m), p.function("g \"quoted\"", m)
    a = p.add_location(m, address, (f, g), dso_offset=0x10)
    p.locations[a].lines = (("src/a.c", 12), ("src/b\\u00e9.h", 3))
    b = p.add_location(m, 0x20, (f,), symbol_offset=4, is_return=True)
    p.add_sample(p.stack((a, b)))
    return p, a, b


def test_locations_with_source_lines_are_columns_with_their_files_in_the_document():
    """A location's (file, line) pairs are written as columns, the files' names in the
    document; every field comes back, None offsets as None."""
    p, a, b = _located()
    data = _saved(p)
    n = int.from_bytes(data[8:16], "little")
    assert data[:8] == profile_io.MAGIC and data[16:16 + n] == _tables(p)
    assert b'"locations":[],"location_files":["src/a.c","src/b\\\\u00e9.h"]' in data
    again = profile_io.load(io.BytesIO(data))
    assert type(again.locations) is LocationTable
    assert list(again.locations) == list(p.locations) and again.locations[b].lines == ()
    assert again.locations[a].lines == (("src/a.c", 12), ("src/b\\u00e9.h", 3))
    assert again.locations[b].dso_offset is None and again.locations[a].symbol_offset is None


def test_locations_the_columns_cannot_hold_are_the_document_of_the_second_format():
    """A negative address (a text input can print anything) does not fit the columns
    (unsigned 64 bits, what perf prints): the profile is saved as PWPROF2, the locations a table of the document as
    the whole document's encoding writes it, and loads as the list it was."""
    p, a, b = _located(address=-5)
    data = _saved(p)
    n = int.from_bytes(data[8:16], "little")
    assert data[:8] == profile_io.MAGIC_2 and data[16:16 + n] == _tables(p, columns=False)
    assert b'[0,-5,[0,1],16,null,false,[["src/a.c",12],' in data
    again = profile_io.load(io.BytesIO(data))
    assert type(again.locations) is list and again.locations == p.locations


def test_loaded_tables_share_their_strings_and_hold_the_stacks_as_columns():
    """The loaded Functions, Locations and stacks equal the saved ones; a function's
    system name is its name's own str when equal; the stacks are the saved columns
    themselves (no tuple held: 4 bytes a frame), which the passes on columns read
    without a copy."""
    from analysis.profile_columns import stack_table
    p = load(str(FIXTURES / "perfdata" / "system-wide.perf.data"))
    out = io.BytesIO()
    profile_io.dump(p, out)
    q = profile_io.load(io.BytesIO(out.getvalue()))
    assert q.functions == p.functions and q.locations == p.locations and q.stacks == p.stacks
    assert all(f.system_name is f.name for f in q.functions if f.system_name == f.name)
    assert q.stacks.changed_rows() == [] and q.stacks.nbytes() == \
        8 * (len(p.stacks) + 1) + 4 * sum(map(len, p.stacks))
    offsets, values = q.stacks.columns()
    csr = stack_table(q)
    assert np.shares_memory(csr.values, np.frombuffer(values, dtype=np.int32))
    assert csr.values.tolist() == [loc for s in p.stacks for loc in s]


def _second_format(p, monkeypatch) -> bytes:
    """`p` saved as a file of the second format (PWPROF2): the locations a table of the
    document, the stack columns after it."""
    with monkeypatch.context() as m:
        m.setattr(profile_io, "_location_table", lambda profile: None)
        return _saved(p)


def _first_format(p, monkeypatch) -> bytes:
    """`p` saved as a file of the first format (PWPROF1): the stacks a table of the
    document, no stack columns after it."""
    data = _second_format(p, monkeypatch)
    n = int.from_bytes(data[8:16], "little")
    doc = data[16:16 + n]
    rest = io.BytesIO(data[16 + n:])
    profile_io._read_column(rest), profile_io._read_column(rest)  # (the stack columns)
    doc = doc[:-1] + b',"stacks":' + jsonio.dumps([list(s) for s in p.stacks]) + b"}"
    return profile_io.MAGIC_1 + len(doc).to_bytes(8, "little") + doc + rest.read()


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_files_of_the_second_format_still_load(path, monkeypatch):
    """Results saved before the locations were columns stay readable: the same tables,
    the locations as the list of objects they always gave, the stacks as columns."""
    p = load(path)
    data = _second_format(p, monkeypatch)
    assert data[:8] == profile_io.MAGIC_2
    q = profile_io.load(io.BytesIO(data))
    assert type(q.locations) is list and q.locations == list(p.locations)
    assert type(q.stacks) is StackTable and q.stacks == p.stacks
    assert explore.functions(q, explore.Query()) == explore.functions(p, explore.Query())


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_files_of_the_first_format_still_load(path, monkeypatch):
    """Results saved before the stacks were columns stay readable: the same tables,
    columns and views, the stacks as the list of tuples they always gave."""
    p = load(path)
    q = profile_io.load(io.BytesIO(_first_format(p, monkeypatch)))
    assert type(q.stacks) is list and q.stacks == p.stacks and len(q.stacks) > 10
    assert q.locations == p.locations and list(q.s_stack) == list(p.s_stack)
    assert list(q.s_time) == list(p.s_time) and q.switches.recorded == p.switches.recorded
    again = profile_io.load(io.BytesIO(_saved(p)))
    assert explore.functions(q, explore.Query()) == explore.functions(again, explore.Query())


def _saved(p) -> bytes:
    out = io.BytesIO()
    profile_io.dump(p, out)
    return out.getvalue()


def _with_stack_columns(data: bytes, offsets: array, values: array) -> bytes:
    """A saved profile with its stack columns replaced."""
    n = int.from_bytes(data[8:16], "little")
    rest = io.BytesIO(data[16 + n:])
    out = io.BytesIO()
    for _ in LOCATION_COLUMNS:  # (before the stacks)
        profile_io._write_column(out, profile_io._read_column(rest))
    profile_io._read_column(rest), profile_io._read_column(rest)
    profile_io._write_column(out, offsets)
    profile_io._write_column(out, values)
    return data[:16 + n] + out.getvalue() + rest.read()


@pytest.mark.parametrize("offsets,values,message", [
    (array("q", [0, 2, 1, 3]), array("i", [0, 1, 2]), "stack offsets go back"),
    (array("q", [0, 2, 4]), array("i", [0, 1, 2]), "do not span"),
    (array("q", [1, 3]), array("i", [0, 1, 2]), "do not span"),
    (array("q"), array("i"), "no stack offsets"),
    (array("q", [0, 1, 2]), array("i", [0, -1]), "location id is out of range"),
    (array("q", [0, 1, 2]), array("i", [0, 1 << 30]), "location id is out of range"),
    (array("i", [0, 1, 2]), array("i", [0, 1]), "stack columns' types"),
])
def test_damaged_stack_columns_are_refused(offsets, values, message):
    """A saved profile is kept in storage others may reach: stack columns that would
    index outside their values or the locations are refused when read, before a pass
    could read them."""
    from analysis.errors import AnalysisError
    data = _with_stack_columns(_saved(load(CAPTURES[0])), offsets, values)
    with pytest.raises(AnalysisError, match=message):
        profile_io.load(io.BytesIO(data))


def test_a_frozen_step_keeps_its_objects_out_of_the_collector_until_the_end():
    """paused_gc(freeze=True) inside frozen_until_done (the worker's engine steps): the
    profile made inside is out of the collector's generations afterwards, so the passes
    the collector runs between steps do not traverse it, and back in them at the end;
    the collector is enabled between steps and after."""
    import gc

    from analysis.gc_pause import frozen_until_done, paused_gc
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with frozen_until_done():
        with paused_gc(freeze=True):
            p = load(str(FIXTURES / "perfdata" / "system-wide.perf.data"))
        assert gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen > len(p.functions) > 20
        def tracked(o) -> bool:  # (in one of the collector's generations)
            return any(x is o for x in gc.get_objects())
        assert not tracked(p.functions) and not tracked(p.functions[0])
        assert not tracked(p.locations)  # (a LocationTable: its locations made when read)
        gc.collect()  # (a full pass: nothing of the profile is in it)
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert any(x is p.functions for x in gc.get_objects(2))  # back in the oldest


def _with_location_column(data: bytes, name: str, column) -> bytes:
    """A saved profile with one of its location columns replaced."""
    n = int.from_bytes(data[8:16], "little")
    rest = io.BytesIO(data[16 + n:])
    out = io.BytesIO()
    for each, _ in LOCATION_COLUMNS:
        col = profile_io._read_column(rest)
        profile_io._write_column(out, column(col) if each == name else col)
    return data[:16 + n] + out.getvalue() + rest.read()


@pytest.mark.parametrize("name,column,message", [
    ("mapping", lambda c: array("i", [1 << 20] * len(c)), "mapping id is out of range"),
    ("mapping", lambda c: array("i", [-1] * len(c)), "mapping id is out of range"),
    ("mapping", lambda c: array("q", c), "mapping is missing or of another type"),
    ("address", lambda c: c[:-1], "address has another length"),
    ("f_ids", lambda c: array("i", [1 << 30] * len(c)), "function id is out of range"),
    ("f_offsets", lambda c: array("q", [0] + list(c[2:]) + [c[1]]),
     "functions offsets"),
    ("f_offsets", lambda c: array("q", list(c[:-1]) + [c[-1] + 1]),
     "functions offsets do not span"),
    ("l_files", lambda c: array("i", [5] * len(c)), "file id is out of range"),
    ("l_lines", lambda c: array("q", list(c) + [7]), "line numbers and files differ"),
    ("flags", lambda c: array("B", [255] * len(c)), "flags are unknown"),
])
def test_damaged_location_columns_are_refused(name, column, message):
    """Location columns that would index outside their values, the mappings, the
    functions or the file names are refused when read, before a pass could read them."""
    from analysis.errors import AnalysisError
    p, _, _ = _located()
    data = _saved(p)
    assert profile_io.load(io.BytesIO(data)).locations == p.locations  # (as saved: fine)
    with pytest.raises(AnalysisError, match=message):
        profile_io.load(io.BytesIO(_with_location_column(data, name, column)))


def test_locations_as_columns_are_the_objects_they_were_and_appended_ones_kept():
    """A loaded capture's locations, read one by one, by iteration or sliced, equal
    the objects the import made; a copy appends its own (a transform's new frames)
    without changing the table it was copied from."""
    from analysis.profile import Location
    p = load(CAPTURES[1])
    objects = list(p.locations)
    q = profile_io.load(io.BytesIO(_saved(p)))
    table = q.locations
    assert type(table) is LocationTable and len(table) == len(objects) == 35
    assert list(table) == objects and table[5:9] == objects[5:9]
    assert table[-1] == objects[-1] and [table[i] for i in (0, 17)] == objects[:18:17]
    view = table.copy()
    view.append(Location(len(objects), 0, 1, (0,)))
    assert len(view) == len(objects) + 1 and len(table) == len(objects)
    assert view[-1].address == 1 and not view.is_plain() and table.is_plain()
    with pytest.raises(IndexError):
        table[len(objects)]
