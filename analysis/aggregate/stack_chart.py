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
#: samples one answer reads at most, over all its lanes (the first of each lane's
#: range; the rest is cut, as rows past MAX_BOXES are): every thread of a capture at
#: the finest resolution reads every sample otherwise (158,000 samples of 340 threads:
#: 1.4-5 s on this project's 2-CPU machine), without bound on larger captures
MAX_SAMPLES = 250_000


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
    truncated: bool = False  # rows past MAX_BOXES, or samples past MAX_SAMPLES, not sent
    read: int = 0  # samples read


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
    period = profile.periods()
    out = []
    for k in range(lo, hi):
        d = period[rows[k]] / 1e9 if clock and period[rows[k]] else fixed
        following = times[k + 1] if k + 1 < hi else next_time
        out.append(min(times[k] + d, following))
    return out


def lane(profile: Profile, tid: int, event_id: int | None, start: float | None = None,
         end: float | None = None, px: float = 0.0, max_boxes: int = MAX_BOXES,
         max_samples: int = MAX_SAMPLES, shared: tuple[list, dict] | None = None) -> Lane:
    """The boxes of thread `tid`'s samples with start <= time < end (absolute seconds),
    merged at `px` seconds a pixel (0: every box, exact).

    Row by row from the root: a box of depth d is a run of consecutive, touching samples
    with the same frame at d, looked for only among the samples of a box of depth d - 1
    wide enough to keep. A box narrower than `px` joins the run of narrow boxes before
    it (one MERGED box) and is not looked into, so a zoomed-out chart of a million
    samples reads the shallow rows only, and what is sent is what is drawn. Only the
    range's first `max_samples` samples are read; past them the lane is cut
    (`truncated`). `shared`: the locations' functions (tree.location_functions) and the
    stacks' function paths made so far, which the lanes of one chart share."""
    times, rows = thread_rows(profile, event_id).get(tid, ([], []))
    lo = 0 if start is None else bisect_left(times, start)
    hi = len(times) if end is None else bisect_left(times, end)
    out = Lane(tid)
    if hi - lo > max_samples:
        hi, out.truncated = lo + max(0, max_samples), True
    if lo >= hi:
        return out
    out.read = hi - lo
    next_time = times[hi] if hi < len(times) else math.inf
    stops = _ends(profile, event_id, times, rows, lo, hi, next_time)
    t = times[lo:hi]
    fns, paths = (location_functions(profile), {}) if shared is None else shared
    s_stack, s_count = profile.s_stack, profile.counts()
    stacks: list[list[int]] = []  # per sample, its function ids from the root
    for k in range(lo, hi):
        sid = s_stack[rows[k]]
        path = paths.get(sid)
        if path is None:
            path = paths[sid] = functions_of(fns, profile.stacks[sid], False, MAX_DEPTH)
        stacks.append(path)
        out.samples += s_count[rows[k]]
    out.sampled_s = sum(b - a for a, b in zip(t, stops))
    # a sample touches the one before it when no gap a pixel would show lies between
    touches = [False] + [t[k] - stops[k - 1] <= max(px, TOUCH) for k in range(1, len(t))]
    out.boxes, cut = _rows(t, stops, stacks, touches, px, max_boxes)
    out.truncated |= cut
    return out


def _rows(t: list, stops: list, stacks: list, touches: list, px: float,
          max_boxes: int) -> tuple[list[Box], bool]:
    """The boxes, depth by depth and in time order within a depth (parents before their
    children); a row that would pass `max_boxes` is cut with every row below it."""
    bridge = max(px, TOUCH)
    boxes: list[Box] = []
    level = [(-1, 0, len(t))]  # (parent box, its first sample, one past its last)
    depth = 0
    while level:
        row: list[Box] = []
        following = []
        for parent, i0, i1 in level:
            run: Box | None = None  # narrow boxes one after the other, as one
            k = i0
            while k < i1:
                path = stacks[k]
                if len(path) <= depth:  # this sample's stack ends above
                    k += 1
                    continue
                key = path[depth]
                j = k + 1
                while j < i1 and touches[j] and len(stacks[j]) > depth and \
                        stacks[j][depth] == key:
                    j += 1
                a, b = t[k], stops[j - 1]
                if b - a >= px:
                    run = None
                    row.append(Box(a, b, depth, key, parent))
                    following.append((len(boxes) + len(row) - 1, k, j))
                elif run is not None and a - run.end <= bridge:
                    run.end = b
                else:
                    run = Box(a, b, depth, MERGED, parent)
                    row.append(run)
                k = j
                # a row past the budget is cut with the rows below: at once, so an
                # exact row (px=0) of a million samples is not made to be dropped
                if len(boxes) + len(row) > max_boxes:
                    return boxes, True
        boxes.extend(row)
        level = following
        depth += 1
    return boxes, False


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
    budget, samples = MAX_BOXES, MAX_SAMPLES
    comms = profile.first_comms()
    shared = (location_functions(profile), {})
    for tid in picked:
        ln = lane(profile, tid, event_id, lo, hi, px, max(1, budget), samples, shared)
        budget -= len(ln.boxes)
        samples -= ln.read
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
