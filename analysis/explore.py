"""The data behind the interactive capture page: a flame graph zoomed anywhere, inverted
or focused on one function, for any threads and time range, with small frames merged
relative to what is on screen, so a capture of any size stays light in the browser.

Every function takes a Query (what the page's URL says) and returns plain JSON data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .aggregate import stack_chart
from .aggregate.functions import stack_functions, top_functions
from .aggregate.lines import hot_lines, source_files
from .aggregate.selection import Selection, stack_weights
from .aggregate.threads import by_thread
from .aggregate.tree import DEEPER, MERGED, ROOT, Row, sandwich
from .cpu import time_range
from .errors import AnalysisError
from .offcpu.switches import RUNNABLE
from .offcpu.threads import off_cpu
from .offcpu.views import ON_CPU, VIEWS, view
from .profile import NO_ID, Profile
from .search import FunctionSearch
from .symbols.demangle import signature
from .transforms import Transform, chain as transformed, describe as described, forget, \
    kept_bytes
from .tree_index import bottom_up, top_down

#: frames narrower than this share of the zoomed frame are merged (~1 px at 2000 px)
MERGE_BELOW = 1 / 2000


@dataclass(frozen=True)
class Query:
    tids: frozenset[int] | None = None
    start: float | None = None  # seconds since the first sample
    end: float | None = None
    root: tuple[int, ...] = ()  # function ids from the tree's root to the zoomed frame
    invert: bool = False
    focus: int | None = None  # function id: callers and callees of it
    search: str = ""
    #: on-cpu (samples), off-cpu or wall (µs; analysis.offcpu.views)
    view: str = ON_CPU
    #: call-tree transforms, applied in order (analysis.transforms)
    transforms: tuple[Transform, ...] = ()
    sort: str = "self"  # the functions table's order: self, total, name or dso
    px: float | None = None  # the stack chart's seconds per pixel (0: exact boxes)
    #: the event whose samples the on-CPU view weighs (an id of profile.events; None:
    #: the profile's default event)
    event: int | None = None


def viewed(profile: Profile, q: Query) -> Profile:
    """The profile the query's view weighs (made once per profile and view)."""
    if q.view == ON_CPU:
        return profile
    if q.view not in VIEWS:
        raise AnalysisError(f"no view {q.view!r}: on-cpu, off-cpu or wall")
    return profile.memo(("view", q.view), lambda: view(profile, q.view))


def _and_views(profile: Profile) -> list[Profile]:
    """`profile` and the off-CPU and wall views made of it so far (each keeps the
    transformed profiles asked of it)."""
    made = (profile._cache.get(("view", v)) for v in VIEWS if v != ON_CPU)  # memo entries
    return [profile] + [entry[1] for entry in made if entry is not None]


def derived_bytes(profile: Profile) -> int:
    """Estimated bytes of the transformed profiles kept with `profile` and its views, for
    a cache of profiles that counts them (analysis.transforms)."""
    return sum(map(kept_bytes, _and_views(profile)))


def forget_derived(profile: Profile) -> int:
    """Let go of those; the bytes they held."""
    return sum(map(forget, _and_views(profile)))


def transformed_view(profile: Profile, q: Query) -> Profile:
    """The view's profile after the query's transforms."""
    return transformed(viewed(profile, q), q.transforms).profile


def selection(profile: Profile, q: Query) -> Selection:
    t0 = first_time(profile)
    start = None if q.start is None or t0 is None else t0 + q.start
    end = None if q.end is None or t0 is None else t0 + q.end
    # the off-CPU and wall views are profiles of their own, of one event
    event = event_of(profile, q) if q.view == ON_CPU else None
    return Selection(event_id=event, tids=q.tids, start_s=start, end_s=end)


def event_of(profile: Profile, q: Query) -> int | None:
    """The event the query weighs: the one it names, else the profile's default."""
    if q.event is None:
        return profile.default_event()
    if not 0 <= q.event < len(profile.events):
        raise AnalysisError("no such event")
    return q.event


def first_time(profile: Profile) -> float | None:
    span = time_range(profile, None)
    return span[0] if span else None


def flame(profile: Profile, q: Query) -> dict:
    """The flame graph's data: the selection's total, the search's share and the
    functions it matches among the frames sent, and the tree (zoomed, inverted or
    focused), each tree `{"nodes": [...]}` with parents before children (see _nodes).
    In the off-CPU and wall views the weights are microseconds (`unit`)."""
    sel = selection(profile, q)  # times from the capture's first sample, in every view
    applied = transformed(viewed(profile, q), q.transforms)
    profile = applied.profile
    weights = stack_weights(profile, sel)
    grand = sum(weights.values())
    search = FunctionSearch(profile, q.search) if q.search else None
    out = {"total": grand, "search": _share(profile, weights, search),
           "unit": "samples" if q.view == ON_CPU else "µs"}
    if q.transforms:
        out["transforms"] = described(applied, q.transforms)
    if q.focus is not None:
        if not 0 <= q.focus < len(profile.functions):
            raise AnalysisError("no such function")
        callers, callees = sandwich(profile, weights, q.focus, limit_of=_merge_limit)
        out.update(focus=q.focus, callers=_nodes(profile, callers),
                   callees=_nodes(profile, callees))
        trees = (callers, callees)
    else:
        grow = bottom_up if q.invert else top_down
        # an unfiltered selection's weights are the same every request: so are the
        # index's sums of them, kept with the profile
        whole = sel if sel.tids is None and sel.start_s is None and sel.end_s is None \
            else None
        tree = grow(profile, weights, q.root, limit_of=_merge_limit, whole=whole)
        root = q.root
        if tree is None:  # the zoomed frame is not in this selection
            tree, root = grow(profile, weights, limit_of=_merge_limit, whole=whole), ()
        out.update(path=[{"f": fid, "n": profile.functions[fid].name, "t": t}
                         for fid, t in zip(root, tree.path)],
                   tree=_nodes(profile, tree.rows))
        trees = (tree.rows,)
    if search is not None:
        shown = {r.key for rows in trees for r in rows if r.key >= 0}
        out["search"]["functions"] = sorted(f for f in shown if search.hit(f))
    return out


def _merge_limit(scale: int) -> int:
    return max(1, int(scale * MERGE_BELOW))


_SYNTHETIC = {ROOT: ("all", "root"), MERGED: ("[merged small frames]", "merged"),
              DEEPER: ("[deeper frames: click the frame above to zoom in]", "merged")}


def _nodes(profile: Profile, rows: list[Row]) -> dict:
    """Compact JSON: n name, d DSO, k kind, f function id (-1: no function), s self,
    t total, p the parent's index in `nodes` (-1: the root). Flat, so no JSON encoder or
    browser meets a nesting limit however deep the stacks."""
    funcs, maps = profile.functions, profile.mappings
    files = source_files(profile)
    nodes = []
    for r in rows:
        if r.key >= 0:
            fn = funcs[r.key]
            m = maps[fn.mapping_id]
            kind = m.kind if fn.resolved or m.kind != "user" else "unresolved"
            node = {"n": fn.name, "d": m.path, "k": kind, "f": r.key, "s": r.self[0],
                    "t": r.total[0], "p": r.parent}
            sig = signature(fn.name, fn.system_name) if fn.resolved else ""
            if sig:
                node["g"] = sig  # the full signature, for the tooltip
            if r.key in files:
                node["src"] = files[r.key]  # where debug info placed it
            nodes.append(node)
        else:
            name, kind = _SYNTHETIC[r.key]
            nodes.append({"n": name, "d": "", "k": kind, "f": -1, "s": r.self[0],
                          "t": r.total[0], "p": r.parent})
    return {"nodes": nodes}


def _share(profile: Profile, weights: dict[int, int],
           search: FunctionSearch | None) -> dict | None:
    """Samples whose stack has a function the search matches, as a count and a share of
    the selection."""
    if search is None:
        return None
    matched = 0
    for sid, w in weights.items():
        for fid in stack_functions(profile, profile.stacks[sid]):
            if search.hit(fid):
                matched += w
                break
    total = sum(weights.values())
    return {"pattern": search.text, "samples": matched,
            "share": matched / total if total else 0.0}


def functions(profile: Profile, q: Query, dso: str | None = None, limit: int = 200,
              offset: int = 0) -> dict:
    """The top functions table from `offset`, `limit` rows (the whole table pages: the
    report lists only the notable functions); `count` is how many there are."""
    sel = selection(profile, q)
    profile = transformed_view(profile, q)
    weights = stack_weights(profile, sel)
    total = sum(weights.values())
    rows = [f for f in top_functions(profile, weights) if dso is None or f.dso == dso]
    if q.sort != "self":  # top_functions' order
        rows.sort(key=FUNCTION_ORDERS[q.sort])
    files = source_files(profile)
    out = []
    for f in rows[offset:offset + limit]:
        fn = profile.functions[f.function_id]
        row = {"f": f.function_id, "n": f.name, "d": f.dso, "k": f.kind, "s": f.self,
               "t": f.total}
        sig = signature(fn.name, fn.system_name) if fn.resolved else ""
        if sig:
            row["g"] = sig
        if f.function_id in files:
            row["src"] = files[f.function_id]
        out.append(row)
    return {"total": total, "functions": out, "count": len(rows), "offset": offset,
            "sort": q.sort, "dsos": sorted({m.path for m in profile.mappings})}


#: the functions table's orders besides by self (the sandwich view's columns)
FUNCTION_ORDERS = {"total": lambda f: (-f.total, -f.self, f.name),
                   "name": lambda f: (f.name.casefold(), f.name, f.dso),
                   "dso": lambda f: (f.dso, -f.self, -f.total, f.name)}
SORTS = ("self", *FUNCTION_ORDERS)


#: lines a hot-lines table lists at most
LINES_LIMIT = 100


def lines(profile: Profile, q: Query, function_id: int) -> dict:
    """A function's source lines by samples in the selection (self: executing that
    line; total: the line on the stack), hottest first; empty without debug info."""
    sel = selection(profile, q)
    profile = transformed_view(profile, q)  # (a collapsed library is a function of its own)
    if not 0 <= function_id < len(profile.functions):
        raise AnalysisError("no such function")
    weights = stack_weights(profile, sel)
    fn = profile.functions[function_id]
    rows = hot_lines(profile, weights, function_id)
    return {"total": sum(weights.values()), "f": function_id, "n": fn.name,
            "g": signature(fn.name, fn.system_name) if fn.resolved else "",
            "lines": [{"file": r.file, "line": r.line, "s": r.self, "t": r.total}
                      for r in rows[:LINES_LIMIT]],
            "more": max(0, len(rows) - LINES_LIMIT)}


def stacks(profile: Profile, q: Query) -> dict:
    """The stack chart of the query's threads (else the busiest) and time range: on-CPU
    samples in time order (analysis.aggregate.stack_chart), of the stacks after the
    query's transforms as every other view (times still from the capture's first
    sample, which a dropped function may have held)."""
    t0 = first_time(profile)
    if t0 is None:
        return {"start": q.start, "end": q.end, "px": q.px, "lanes": [], "threads": 0,
                "functions": {}, "truncated": False, "sample_s": None}
    event = event_of(profile, q)
    profile = transformed(profile, q.transforms).profile
    return stack_chart.chart(profile, event, t0, q.tids, q.start, q.end, q.px)


def threads(profile: Profile, q: Query) -> dict:
    sel = selection(profile, Query(start=q.start, end=q.end, event=q.event))
    return {"threads": by_thread(profile, sel)}


#: the timeline's size does not follow what a capture claims: sample times are the
#: uploader's numbers, so two samples a billion seconds apart must not ask for a billion
#: buckets. A browser draws no more than this anyway.
MAX_BUCKETS = 6000
MAX_SERIES = 64  # threads drawn one by one; the rest are one "other threads" series
MAX_HEAT_SECONDS = 3600  # heat map columns (one per second), from the first sample


def timeline(profile: Profile, bucket_s: float = 0.1, rows_per_s: int = 50,
             event: int | None = None) -> dict:
    """Samples per thread per bucket, and the FlameScope heat map: one column per second,
    `rows_per_s` rows within it, each cell the samples in that slice of time. Buckets
    widen past MAX_BUCKETS, threads past MAX_SERIES share a series, and the heat map
    covers the first MAX_HEAT_SECONDS (`heat_seconds` says how many it shows)."""
    t0 = first_time(profile)
    if t0 is None:
        return {"bucket_s": bucket_s, "series": [], "heatmap": None, "duration": 0.0}
    times, tids, counts = profile.s_time, profile.s_tid, profile.counts()
    comm_of: dict[int, str] = {}
    per_tid: dict[int, int] = {}
    last = 0.0
    per_row: list[tuple[float, int, int]] = []
    event, events = event_of(profile, Query(event=event)), profile.s_event
    for i in range(len(profile)):
        if events[i] != event:  # the sampling event, not sched_switch's tracepoint
            continue
        t = times[i]
        if math.isnan(t):
            continue
        rel = t - t0
        last = max(last, rel)
        per_row.append((rel, tids[i], counts[i]))
        per_tid[tids[i]] = per_tid.get(tids[i], 0) + counts[i]
        if tids[i] not in comm_of:
            comm_of[tids[i]] = profile.comm(i)
    if last / bucket_s >= MAX_BUCKETS:
        bucket_s *= math.ceil(last / bucket_s / MAX_BUCKETS)
    n = int(last / bucket_s) + 1
    drawn = set(sorted(per_tid, key=lambda t: (-per_tid[t], t))[:MAX_SERIES])
    others = len(per_tid) - len(drawn)
    seconds = min(int(last) + 1, MAX_HEAT_SECONDS)
    heat = [[0] * seconds for _ in range(rows_per_s)]
    series: dict[int | None, list[int]] = {}
    for rel, tid, c in per_row:
        key = tid if tid in drawn else None
        s = series.get(key)
        if s is None:
            s = series[key] = [0] * n
        s[int(rel / bucket_s)] += c
        if rel < seconds:
            heat[min(rows_per_s - 1, int((rel % 1.0) * rows_per_s))][int(rel)] += c
    rows = [{"tid": None if tid == NO_ID else tid, "comm": comm_of[tid], "counts": c}
            for tid, c in sorted((k, v) for k, v in series.items() if k is not None)]
    if None in series:
        rows.append({"tid": None, "comm": f"{others} other threads", "counts": series[None]})
    return {"bucket_s": bucket_s, "duration": last, "series": rows,
            "heatmap": {"rows_per_s": rows_per_s, "cells": heat, "heat_seconds": seconds}}


#: columns of the thread state timeline; each cell says how the thread spent that slice
STATE_BUCKETS = 600


def thread_states(profile: Profile, buckets: int = STATE_BUCKETS) -> dict:
    """Per thread, per slice of the capture: the share of the slice it ran, was blocked
    (voluntary switch-out) or was runnable waiting for a CPU, from the context
    switches; {"threads": []} without them. Slices keep the size bounded however many
    switches there are."""
    oc = off_cpu(profile)
    if oc is None or not oc.timed:
        return {"threads": [], "bucket_s": None, "duration": 0.0}
    t0, t1 = oc.window
    dur = max(t1 - t0, 1e-9)
    width = dur / buckets
    off = {tid: ([0.0] * buckets, [0.0] * buckets) for tid in oc.threads}

    def spread(cells: list[float], a: float, b: float) -> None:
        i = min(buckets - 1, int((a - t0) / width))
        while a < b and i < buckets:
            edge = t0 + (i + 1) * width
            cells[i] += min(b, edge) - a
            a = edge
            i += 1
    for k in range(len(oc)):
        blocked, runnable = off[oc.i_tid[k]]
        spread(runnable if oc.i_state[k] == RUNNABLE else blocked, oc.i_start[k],
               oc.i_start[k] + oc.i_dur[k])
    comm_of = profile.first_comms()
    rows = []
    for tid, tt in sorted(oc.threads.items(), key=lambda kv: (-kv[1].on_cpu_s, kv[0])):
        blocked, runnable = off[tid]
        rows.append({
            "tid": tid, "comm": comm_of.get(tid, ""), "on_cpu_s": round(tt.on_cpu_s, 6),
            "blocked_s": round(tt.blocked_s, 6), "preempted_s": round(tt.preempted_s, 6),
            "blocked": [round(min(1.0, x / width), 3) for x in blocked],
            "runnable": [round(min(1.0, x / width), 3) for x in runnable]})
    return {"threads": rows[:MAX_SERIES], "bucket_s": width, "duration": dur,
            "more_threads": max(0, len(rows) - MAX_SERIES)}
