"""The data behind the interactive capture page: a flame graph zoomed anywhere, inverted
or focused on one function, for any threads and time range, with small frames merged
relative to what is on screen, so a capture of any size stays light in the browser.

Every function takes a Query (what the page's URL says) and returns plain JSON data.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .aggregate.functions import stack_functions, top_functions
from .aggregate.selection import Selection, stack_weights
from .aggregate.threads import by_thread
from .aggregate.tree import Node, bottom_up, sandwich, top_down
from .cpu import time_range
from .errors import AnalysisError
from .profile import NO_ID, Profile

#: frames narrower than this share of the zoomed frame are merged (~1 px at 2000 px)
MERGE_BELOW = 1 / 2000
MAX_SEARCH_LEN = 200


@dataclass(frozen=True)
class Query:
    tids: frozenset[int] | None = None
    start: float | None = None  # seconds since the first sample
    end: float | None = None
    root: tuple[int, ...] = ()  # function ids from the tree's root to the zoomed frame
    invert: bool = False
    focus: int | None = None  # function id: callers and callees of it
    search: str = ""


def selection(profile: Profile, q: Query) -> Selection:
    t0 = first_time(profile)
    start = None if q.start is None or t0 is None else t0 + q.start
    end = None if q.end is None or t0 is None else t0 + q.end
    return Selection(tids=q.tids, start_s=start, end_s=end)


def first_time(profile: Profile) -> float | None:
    span = time_range(profile, None)
    return span[0] if span else None


def flame(profile: Profile, q: Query) -> dict:
    weights = stack_weights(profile, selection(profile, q))
    grand = sum(weights.values())
    out = {"total": grand, "search": search_share(profile, weights, q.search)}
    if q.focus is not None:
        if not 0 <= q.focus < len(profile.functions):
            raise AnalysisError("no such function")
        callers, callees = sandwich(profile, weights, q.focus)
        out.update(focus=q.focus, callers=_tree(profile, callers, callers.total),
                   callees=_tree(profile, callees, callees.total))
        return out
    tree = (bottom_up if q.invert else top_down)(profile, weights)
    node, path = tree, []
    for fid in q.root:
        node = node.children.get(fid)
        if node is None:
            break
        path.append({"f": fid, "n": profile.functions[fid].name, "t": node.total})
    if node is None:  # the zoomed frame is not in this selection
        node, path = tree, []
    out.update(path=path, tree=_tree(profile, node, node.total))
    return out


def _tree(profile: Profile, node: Node, scale: int) -> dict:
    """Compact JSON: n name, d DSO, k kind, f function id, s self, t total, c children;
    children below MERGE_BELOW of `scale` become one `[merged]` node."""
    funcs, maps = profile.functions, profile.mappings
    limit = max(1, int(scale * MERGE_BELOW))

    def conv(n: Node) -> dict:
        if n.function_id >= 0:
            fn = funcs[n.function_id]
            m = maps[fn.mapping_id]
            d = {"n": fn.name, "d": m.path, "k": m.kind if fn.resolved or m.kind != "user"
                 else "unresolved", "f": n.function_id, "s": n.self, "t": n.total}
        else:
            d = {"n": "all", "d": "", "k": "root", "f": -1, "s": n.self, "t": n.total}
        kids = sorted(n.children.values(), key=lambda c: (-c.total, c.function_id))
        shown = [c for c in kids if c.total >= limit]
        hidden = sum(c.total for c in kids) - sum(c.total for c in shown)
        d["c"] = [conv(c) for c in shown]
        if hidden:
            d["c"].append({"n": "[merged small frames]", "d": "", "k": "merged", "f": -1,
                           "s": hidden, "t": hidden, "c": []})
        return d
    return conv(node)


def search_share(profile: Profile, weights: dict[int, int], pattern: str) -> dict | None:
    """Samples whose stack has a function matching `pattern` (a regex, or plain text when
    it is not a valid one), as a count and a share of the selection."""
    if not pattern:
        return None
    pattern = pattern[:MAX_SEARCH_LEN]
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except re.error:
        rx = re.compile(re.escape(pattern), re.IGNORECASE)
    names = profile.functions
    hit_fn: dict[int, bool] = {}
    matched = 0
    for sid, w in weights.items():
        for fid in stack_functions(profile, profile.stacks[sid]):
            hit = hit_fn.get(fid)
            if hit is None:
                hit = hit_fn[fid] = rx.search(names[fid].name) is not None
            if hit:
                matched += w
                break
    total = sum(weights.values())
    return {"pattern": pattern, "samples": matched,
            "share": matched / total if total else 0.0}


def functions(profile: Profile, q: Query, dso: str | None = None, limit: int = 200) -> dict:
    weights = stack_weights(profile, selection(profile, q))
    total = sum(weights.values())
    rows = [f for f in top_functions(profile, weights) if dso is None or f.dso == dso]
    return {"total": total, "functions": [
        {"f": f.function_id, "n": f.name, "d": f.dso, "k": f.kind, "s": f.self,
         "t": f.total} for f in rows[:limit]],
        "dsos": sorted({m.path for m in profile.mappings})}


def threads(profile: Profile, q: Query) -> dict:
    sel = selection(profile, Query(start=q.start, end=q.end))
    return {"threads": by_thread(profile, sel)}


def timeline(profile: Profile, bucket_s: float = 0.1, rows_per_s: int = 50) -> dict:
    """Samples per thread per bucket, and the FlameScope heat map: one column per second,
    `rows_per_s` rows within it, each cell the samples in that slice of time."""
    t0 = first_time(profile)
    if t0 is None:
        return {"bucket_s": bucket_s, "series": [], "heatmap": None, "duration": 0.0}
    times, tids, counts = profile.s_time, profile.s_tid, profile.s_count
    comm_of: dict[int, str] = {}
    last = 0.0
    series: dict[int, list[int]] = {}
    per_row: list[tuple[float, int, int]] = []
    for i in range(len(profile)):
        t = times[i]
        if math.isnan(t):
            continue
        rel = t - t0
        last = max(last, rel)
        per_row.append((rel, tids[i], counts[i]))
        if tids[i] not in comm_of:
            comm_of[tids[i]] = profile.comm(i)
    n = int(last / bucket_s) + 1
    seconds = int(last) + 1
    heat = [[0] * seconds for _ in range(rows_per_s)]
    for rel, tid, c in per_row:
        s = series.get(tid)
        if s is None:
            s = series[tid] = [0] * n
        s[int(rel / bucket_s)] += c
        heat[min(rows_per_s - 1, int((rel % 1.0) * rows_per_s))][int(rel)] += c
    return {"bucket_s": bucket_s, "duration": last,
            "series": [{"tid": None if tid == NO_ID else tid, "comm": comm_of[tid],
                        "counts": counts_} for tid, counts_ in sorted(series.items())],
            "heatmap": {"rows_per_s": rows_per_s, "cells": heat}}
