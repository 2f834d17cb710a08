"""The saved profile's tables are written in pieces (issue 16: the JSON of a 2M-sample
capture's tables is 100 MB, and the lists it was made from several hundred more); the
file must be what one encoding of the whole document gives, whatever the piece size and
whether or not the output can seek back to write the length."""
import io
from array import array

import numpy as np
import pytest

from analysis import explore, jsonio, profile_io
from analysis.stack_table import StackTable
from analysis.importers import load
from conftest import FIXTURES, SPINPOOL

CAPTURES = [SPINPOOL / "1.0.0-idle.perf.data", FIXTURES / "perfdata" / "system-wide.perf.data",
            FIXTURES / "offcpu" / "system-wide" / "sys.perf.data"]


class _Pipe(io.BytesIO):
    def seekable(self):
        return False


def _tables(p) -> bytes:
    """The document the way the whole of it was encoded before it was written in pieces."""
    from dataclasses import asdict
    return jsonio.dumps({
        "meta": asdict(p.meta),
        "mappings": [[m.path, m.kind, m.build_id, m.start, m.limit, m.pgoff, m.deleted]
                     for m in p.mappings],
        "functions": [[f.name, f.system_name, f.mapping_id, f.resolved] for f in p.functions],
        "locations": [[loc.mapping_id, loc.address, list(loc.functions), loc.dso_offset,
                       loc.symbol_offset, loc.is_return] +
                      ([[list(x) for x in loc.lines]] if loc.lines else [])
                      for loc in p.locations],
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


def test_locations_with_source_lines_are_the_one_document_too():
    """A location with (file, line) pairs (DWARF line tables) is written with them, as
    the whole document's encoding writes it; one without has no such item."""
    from analysis.profile import Profile
    p = Profile()
    p.event("cpu-clock")
    m = p.mapping("/usr/bin/a")
    f, g = p.function("f", m), p.function("g \"quoted\"", m)
    a = p.add_location(m, 0x10, (f, g), dso_offset=0x10)
    p.locations[a].lines = (("src/a.c", 12), ("src/b\\u00e9.h", 3))
    b = p.add_location(m, 0x20, (f,), symbol_offset=4, is_return=True)
    p.add_sample(p.stack((a, b)))
    out = io.BytesIO()
    profile_io.dump(p, out)
    data = out.getvalue()
    n = int.from_bytes(data[8:16], "little")
    assert data[16:16 + n] == _tables(p)
    assert b'[0,16,[0,1],16,null,false,[["src/a.c",12],' in data
    again = profile_io.load(io.BytesIO(data))
    assert again.locations[a].lines == p.locations[a].lines and again.locations[b].lines == ()


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


def _first_format(p) -> bytes:
    """`p` saved as a file of the first format (PWPROF1): the stacks a table of the
    document, no stack columns after it."""
    out = io.BytesIO()
    profile_io.dump(p, out)
    data = out.getvalue()
    n = int.from_bytes(data[8:16], "little")
    doc = data[16:16 + n]
    rest = io.BytesIO(data[16 + n:])
    profile_io._read_column(rest), profile_io._read_column(rest)  # (the stack columns)
    doc = doc[:-1] + b',"stacks":' + jsonio.dumps([list(s) for s in p.stacks]) + b"}"
    return profile_io.MAGIC_1 + len(doc).to_bytes(8, "little") + doc + rest.read()


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_files_of_the_first_format_still_load(path):
    """Results saved before the stacks were columns stay readable: the same tables,
    columns and views, the stacks as the list of tuples they always gave."""
    p = load(path)
    q = profile_io.load(io.BytesIO(_first_format(p)))
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
    profile_io._read_column(rest), profile_io._read_column(rest)
    out = io.BytesIO()
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
        assert frozen > len(p.locations) > 20
        def tracked(o) -> bool:  # (in one of the collector's generations)
            return any(x is o for x in gc.get_objects())
        assert not tracked(p.locations) and not tracked(p.locations[0])
        gc.collect()  # (a full pass: nothing of the profile is in it)
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert any(x is p.locations for x in gc.get_objects(2))  # back in the oldest
