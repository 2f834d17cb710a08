"""Everything a profile holds, as plain values, so that two imports of the same input can be
compared whole: every table in order, the interning indexes, every sample and switch
column byte for byte (NaN times and all), the notes and the metadata."""
from __future__ import annotations

from dataclasses import asdict, fields
from functools import lru_cache
from operator import attrgetter

from analysis.offcpu.switches import SwitchLog
from analysis.profile import Profile

SAMPLE_COLUMNS = ("s_stack", "s_count", "s_period", "s_pid", "s_tid", "s_cpu", "s_time",
                  "s_event", "s_comm")


@lru_cache(maxsize=None)
def _row(cls) -> attrgetter:
    """A dataclass instance's fields as a tuple (dataclasses.astuple, without its deep
    copy of every value: ten times faster, and a list is not taken for a tuple)."""
    return attrgetter(*(f.name for f in fields(cls)))


def astuple(obj) -> tuple:
    return _row(type(obj))(obj)


def snapshot(p: Profile) -> dict:
    sw = p.switches
    return {
        "meta": asdict(p.meta),
        "mappings": [astuple(m) for m in p.mappings],
        "functions": [astuple(f) for f in p.functions],
        "locations": [astuple(loc) for loc in p.locations],
        "stacks": list(p.stacks),
        "events": [astuple(e) for e in p.events],
        "strings": list(p.strings),
        "notes": list(p.notes),
        "flags": (p.approximate, p.truncated_tail),
        "columns": {c: (getattr(p, c).typecode, bytes(getattr(p, c))) for c in SAMPLE_COLUMNS},
        "switches": {c: bytes(getattr(sw, c)) for c in SwitchLog.COLUMNS},
        "switch_facts": (sw.recorded, list(sw.watched)),
        # (a loaded perf.data builds its stack and function indexes on first use: None)
        "indexes": tuple(None if ix is None else list(ix.items()) for ix in (
            p._mapping_ix, p._function_ix, p._stack_ix, p._event_ix, p._string_ix)),
    }


def differences(a: dict, b: dict) -> list[str]:
    """The parts of two snapshots that differ (empty: equal)."""
    return [k for k in a if a[k] != b[k]]
