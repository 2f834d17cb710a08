"""The saved profile's tables are written in pieces (issue 16: the JSON of a 2M-sample
capture's tables is 100 MB, and the lists it was made from several hundred more); the
file must be what one encoding of the whole document gives, whatever the piece size and
whether or not the output can seek back to write the length."""
import io

import pytest

from analysis import jsonio, profile_io
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
        "stacks": [list(s) for s in p.stacks],
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


def test_loaded_tables_share_their_strings_and_ids():
    """The loaded Functions, Locations and stacks equal the saved ones; a function's
    system name is its name's own str when equal, and a stack's location ids are the
    ints the locations hold (one int object per id, not one per frame)."""
    p = load(str(FIXTURES / "perfdata" / "system-wide.perf.data"))
    out = io.BytesIO()
    profile_io.dump(p, out)
    q = profile_io.load(io.BytesIO(out.getvalue()))
    assert q.functions == p.functions and q.locations == p.locations and q.stacks == p.stacks
    assert all(f.system_name is f.name for f in q.functions if f.system_name == f.name)
    assert all(q.locations[s[0]].id is s[0] for s in q.stacks if s)


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
