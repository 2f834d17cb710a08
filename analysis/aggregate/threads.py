"""Samples per process and per thread."""
from __future__ import annotations

from collections import Counter

from .. import column_ops
from ..profile import NO_ID, Profile
from .selection import Selection, is_whole, selected_rows


def count_rows(*columns) -> dict[tuple[int, ...], int]:
    """Counter(zip(*columns)): rows per combination of values, first met first; counted
    on the columns without a tuple per row when they are int32 arrays (a capture's are)."""
    if all(getattr(c, "typecode", "") == "i" for c in columns) and columns:
        return column_ops.count_keys(*columns)
    return Counter(zip(*columns))


def by_thread(profile: Profile, sel: Selection = Selection()) -> list[dict]:
    """One row per (pid, tid, comm), heaviest first."""
    acc: dict[tuple[int, int, int], int] = {}
    count = profile.counts()
    if is_whole(profile, sel) and profile.unit_rows():
        acc = count_rows(profile.s_pid, profile.s_tid, profile.s_comm)
    else:
        for i in selected_rows(profile, sel):
            key = (profile.s_pid[i], profile.s_tid[i], profile.s_comm[i])
            acc[key] = acc.get(key, 0) + count[i]
    rows = [{"pid": None if pid == NO_ID else pid, "tid": None if tid == NO_ID else tid,
             "comm": profile.strings[c] if c >= 0 else "", "samples": n}
            for (pid, tid, c), n in acc.items()]
    rows.sort(key=lambda r: (-r["samples"], r["comm"], r["tid"] or 0))
    return rows


def by_process(profile: Profile, sel: Selection = Selection()) -> list[dict]:
    acc: dict[tuple[int, str], dict] = {}
    for r in by_thread(profile, sel):
        key = (r["pid"] if r["pid"] is not None else -1, r["comm"] if r["pid"] is None else "")
        d = acc.setdefault(key, {"pid": r["pid"], "comms": set(), "threads": 0, "samples": 0})
        d["comms"].add(r["comm"])
        d["threads"] += 1
        d["samples"] += r["samples"]
    out = [dict(d, comms=sorted(d["comms"])) for d in acc.values()]
    out.sort(key=lambda d: -d["samples"])
    return out
