"""`perf script`-style text of a profile (what Firefox Profiler and many tools import):
one block per sample, frames leaf first, with the names symbolization found."""
from __future__ import annotations

import math
from typing import TextIO

from ..profile import NO_ID, Profile


class _Made(dict):
    """A table's locations, each made once when first asked (every stack's frames are
    read, a location once or many times)."""

    def __init__(self, table) -> None:
        super().__init__()
        self.table = table

    def __missing__(self, lid: int):
        loc = self[lid] = self.table[lid]
        return loc


def write_perf_script(p: Profile, out: TextIO) -> None:
    funcs, maps = p.functions, p.mappings
    locs = p.locations if type(p.locations) is list else _Made(p.locations)
    lines_of: dict[int, list[str]] = {}
    counts, periods = p.counts(), p.periods()
    for i in range(len(p)):
        sid = p.s_stack[i]
        frames = lines_of.get(sid)
        if frames is None:
            frames = []
            for loc_id in p.stacks[sid]:
                loc = locs[loc_id]
                mapping = maps[loc.mapping_id]
                address = loc.dso_offset if loc.dso_offset is not None else loc.address
                for fid in loc.functions:
                    fn = funcs[fid]
                    name = fn.name if fn.resolved else "[unknown]"
                    frames.append(f"\t{address:16x} {name} ({mapping.path})")
            lines_of[sid] = frames
        comm = p.comm(i) or "unknown"
        pid, tid = p.s_pid[i], p.s_tid[i]
        ident = f"{tid}" if pid == NO_ID else f"{pid}/{tid}"
        t = p.s_time[i]
        when = "" if math.isnan(t) else f" {t:.6f}:"
        period = periods[i] or counts[i]
        event = p.events[p.s_event[i]].name if p.events else ""
        out.write(f"{comm} {ident}{when} {period} {event}:\n")
        for line in frames:
            out.write(line + "\n")
        out.write("\n")
