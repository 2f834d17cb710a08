"""The stack chart: each thread's samples in time order (speedscope's "time order",
Firefox Profiler's "stack chart"), x time, one row per stack depth, root at the top.

A sample at time t stands for the time one sample is worth (sample_seconds) from t on,
cut at the thread's next sample so that two samples never overlap; a thread that was
off the CPU between two samples leaves a gap, which is what happened. Consecutive
samples whose stacks share a prefix of frames, with no gap between them, draw that prefix
as one box per depth.

A chart answers a time range at a resolution: `px`, the seconds one pixel stands for.
Gaps narrower than a pixel are bridged, and boxes narrower than a pixel next to each
other under the same parent become one "merged" box whose frames below are not sent, so
the answer is bounded by the pixels drawn (and MAX_BOXES), not by the samples.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from statistics import median

from ..cpu import is_clock_event
from ..profile import Profile
from .tree import MAX_DEPTH, functions_of, location_functions

#: the function id of a merged box (several boxes, each narrower than a pixel)
MERGED = -2
#: boxes one answer holds at most, over all its lanes; deeper rows are cut past it
MAX_BOXES = 60_000
#: samples closer than this touch (perf's clock counts nanoseconds; float sums are off
#: by less)
TOUCH = 1e-9
#: lanes drawn when the request names no thread: the busiest threads of the range
MAX_LANES = 4


@dataclass(slots=True)
class Box:
    start: float  # seconds, on the capture's clock
    end: float
    depth: int  # 0: the root-most frame
    function: int  # function id, or MERGED
    parent: int = -1  # index of the box at depth - 1 that holds it


@dataclass
class Lane:
    tid: int
    samples: int = 0
    #: seconds the thread's samples stand for in the range (each cut at the next one)
    sampled_s: float = 0.0
    boxes: list[Box] = field(default_factory=list)
    truncated: bool = False  # rows past MAX_BOXES were not sent


def thread_rows(profile: Profile, event_id: int | None) -> dict[int, tuple[list, list]]:
    """tid -> (times, rows) of the event's timestamped samples, in time order: made once
    per profile and event, so a request bisects its range instead of reading every row."""
    def compute() -> dict[int, tuple[list, list]]:
        per: dict[int, list[tuple[float, int]]] = {}
        s_time, s_tid, s_event = profile.s_time, profile.s_tid, profile.s_event
        for i in range(len(profile)):
            if event_id is not None and s_event[i] != event_id:
                continue
            t = s_time[i]
            if math.isnan(t):
                continue
            per.setdefault(s_tid[i], []).append((t, i))
        out = {}
        for tid, pairs in per.items():
            pairs.sort()
            out[tid] = ([t for t, _ in pairs], [i for _, i in pairs])
        return out
    return profile.memo(("stack_chart_rows", event_id), compute)


def sample_seconds(profile: Profile, event_id: int | None) -> float | None:
    """The time one sample of the event stands for when its period is not a time: one
    over the sampling frequency, a clock event's fixed period, else the median gap
    between a thread's consecutive samples (a fixed-period hardware event)."""
    if event_id is None or not 0 <= event_id < len(profile.events):
        return None
    e = profile.events[event_id]
    if e.frequency:
        return 1.0 / e.frequency
    if e.period and is_clock_event(e.name):
        return e.period / 1e9

    def gaps() -> float | None:
        found = [b - a for times, _ in thread_rows(profile, event_id).values()
                 for a, b in zip(times, times[1:]) if b > a]
        return median(found) if found else None
    return profile.memo(("sample_gap", event_id), gaps)


def _ends(profile: Profile, event_id: int | None, times: list, rows: list,
          lo: int, hi: int, next_time: float) -> list[float]:
    """Where each selected sample's time ends: a clock event's period (nanoseconds of
    CPU time) after it, else sample_seconds, but never past the thread's next sample
    (that sample's own time then, exactly, so the two boxes touch)."""
    clock = event_id is not None and 0 <= event_id < len(profile.events) and \
        is_clock_event(profile.events[event_id].name)
    fixed = sample_seconds(profile, event_id) or 0.0
    period = profile.s_period
    out = []
    for k in range(lo, hi):
        d = period[rows[k]] / 1e9 if clock and period[rows[k]] else fixed
        following = times[k + 1] if k + 1 < hi else next_time
        out.append(min(times[k] + d, following))
    return out


def lane(profile: Profile, tid: int, event_id: int | None, start: float | None = None,
         end: float | None = None, px: float = 0.0, max_boxes: int = MAX_BOXES) -> Lane:
    """The boxes of thread `tid`'s samples with start <= time < end (absolute seconds),
    merged at `px` seconds a pixel (0: every box, exact)."""
    times, rows = thread_rows(profile, event_id).get(tid, ([], []))
    lo = 0 if start is None else bisect_left(times, start)
    hi = len(times) if end is None else bisect_left(times, end)
    out = Lane(tid)
    if lo >= hi:
        return out
    next_time = times[hi] if hi < len(times) else math.inf
    ends = _ends(profile, event_id, times, rows, lo, hi, next_time)
    fns = location_functions(profile)
    paths: dict[int, list[int]] = {}
    s_stack, s_count = profile.s_stack, profile.s_count
    boxes: list[Box] = []
    open_: list[int] = []  # indexes in `boxes` of the boxes still growing, by depth
    prev_end = -math.inf
    bridge = max(px, TOUCH)
    for k, stop in zip(range(lo, hi), ends):
        sid = s_stack[rows[k]]
        path = paths.get(sid)
        if path is None:
            path = paths[sid] = functions_of(fns, profile.stacks[sid], False, MAX_DEPTH)
        t = times[k]
        same = 0
        if t - prev_end <= bridge:  # no gap a pixel would show: the boxes may go on
            most = min(len(path), len(open_))
            while same < most and boxes[open_[same]].function == path[same]:
                same += 1
        del open_[same:]
        for depth in range(same, len(path)):
            boxes.append(Box(t, t, depth, path[depth], open_[-1] if open_ else -1))
            open_.append(len(boxes) - 1)
        prev_end = stop
        for ix in open_:
            boxes[ix].end = stop
        out.samples += s_count[rows[k]]
        out.sampled_s += stop - t
    out.boxes, out.truncated = _merge(boxes, px, max_boxes)
    return out


def _merge(boxes: list[Box], px: float, max_boxes: int) -> tuple[list[Box], bool]:
    """Boxes narrower than `px` that follow each other under one parent become one MERGED
    box, and what lies below a narrow box is dropped; a row of boxes that would pass
    `max_boxes` is cut with every row below it. Rows come in depth order, each in time
    order, so parents come before their children."""
    if px <= 0 and len(boxes) <= max_boxes:
        return boxes, False
    rows: list[list[int]] = []
    for i, b in enumerate(boxes):
        while len(rows) <= b.depth:
            rows.append([])
        rows[b.depth].append(i)
    keep: list[Box] = []
    new_ix: dict[int, int] = {}  # index in `boxes` -> index in `keep`
    for row in rows:
        row.sort(key=lambda i: boxes[i].start)
        made: list[Box] = []
        made_ix: dict[int, int] = {}
        last_merged: dict[int, Box] = {}  # parent (in `keep`) -> its open merged child
        for i in row:
            b = boxes[i]
            if b.parent >= 0 and b.parent not in new_ix:
                continue  # below a narrow box
            parent = new_ix.get(b.parent, -1)
            if b.end - b.start >= px:
                made_ix[i] = len(keep) + len(made)
                made.append(Box(b.start, b.end, b.depth, b.function, parent))
                last_merged.pop(parent, None)
                continue
            m = last_merged.get(parent)
            if m is not None and b.start - m.end <= max(px, TOUCH):
                m.end = b.end
                continue
            last_merged[parent] = m = Box(b.start, b.end, b.depth, MERGED, parent)
            made.append(m)
        if len(keep) + len(made) > max_boxes:
            return keep, True
        keep.extend(made)
        new_ix.update(made_ix)
    return keep, False


def busiest_threads(profile: Profile, event_id: int | None, start: float | None,
                    end: float | None, limit: int) -> tuple[list[int], int]:
    """The `limit` threads with the most samples in the range, and how many have any."""
    counts = []
    for tid, (times, _) in thread_rows(profile, event_id).items():
        lo = 0 if start is None else bisect_left(times, start)
        hi = len(times) if end is None else bisect_left(times, end)
        if hi > lo:
            counts.append((-(hi - lo), tid))
    counts.sort()
    return [tid for _, tid in counts[:limit]], len(counts)


def stack_at(lane_: Lane, t: float) -> list[int]:
    """Function ids of the boxes over time t, root first (what the chart draws there)."""
    found = sorted((b.depth, b.function) for b in lane_.boxes if b.start <= t < b.end)
    return [f for _, f in found]


#: pixels a chart is drawn across when the request does not say its resolution
DEFAULT_PIXELS = 2000


def chart(profile: Profile, event_id: int | None, t0: float, tids=None,
          start: float | None = None, end: float | None = None,
          px: float | None = None) -> dict:
    """The stack chart's JSON: times in seconds from `t0` (the capture's first sample),
    `start`/`end` likewise; lanes for `tids`, else for the busiest threads of the range.
    Each lane's boxes are columns: s start, e end, d depth, f function id (-2: merged),
    p the parent box's index (-1 at depth 0); `functions` names every id sent."""
    lo = None if start is None else t0 + start
    hi = None if end is None else t0 + end
    rows = thread_rows(profile, event_id)
    if tids:
        picked, threads = sorted(t for t in tids if t in rows), len(rows)
    else:
        picked, threads = busiest_threads(profile, event_id, lo, hi, MAX_LANES)
    if px is None or not px > 0:
        span = _span(rows, picked, lo, hi)
        px = span / DEFAULT_PIXELS if px is None else 0.0
    lanes, used, truncated = [], set(), False
    budget = MAX_BOXES
    comms = profile.first_comms()
    for tid in picked:
        ln = lane(profile, tid, event_id, lo, hi, px, max(1, budget))
        budget -= len(ln.boxes)
        truncated |= ln.truncated
        used.update(b.function for b in ln.boxes if b.function >= 0)
        lanes.append({
            "tid": tid, "comm": comms.get(tid, ""), "samples": ln.samples,
            "sampled_s": ln.sampled_s, "depth": 1 + max((b.depth for b in ln.boxes),
                                                        default=-1),
            "boxes": {"s": [b.start - t0 for b in ln.boxes], "e": [b.end - t0 for b in ln.boxes],
                      "d": [b.depth for b in ln.boxes], "f": [b.function for b in ln.boxes],
                      "p": [b.parent for b in ln.boxes]}})
    funcs, maps = profile.functions, profile.mappings
    functions = {}
    for fid in sorted(used):
        fn = funcs[fid]
        m = maps[fn.mapping_id]
        kind = m.kind if fn.resolved or m.kind != "user" else "unresolved"
        functions[str(fid)] = {"n": fn.name, "d": m.path, "k": kind}
    return {"start": start, "end": end, "px": px, "lanes": lanes, "threads": threads,
            "functions": functions, "truncated": truncated,
            "sample_s": sample_seconds(profile, event_id)}


def _span(rows: dict, tids: list[int], lo: float | None, hi: float | None) -> float:
    """Seconds the chart covers: the range asked, else that of the lanes' samples."""
    times = [t for tid in tids for t in (rows[tid][0][0], rows[tid][0][-1]) if rows[tid][0]]
    first = lo if lo is not None else min(times, default=0.0)
    last = hi if hi is not None else max(times, default=first)
    return max(last - first, 0.0)
