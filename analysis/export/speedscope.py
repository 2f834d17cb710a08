"""speedscope's file format (https://www.speedscope.app/file-format-schema.json): one
"sampled" profile per thread of one event, named as perf names the thread ("comm
(tid)"), its samples in time order so that speedscope's Time Order view is the thread's
timeline, weighted in the event's unit.

One event: a capture recorded with `-e cpu-clock -e sched:sched_switch` holds switches
beside the CPU samples, and their sum is neither CPU time nor anything else (the page and
every export show one event, the page's by default: Profile.default_event).
"""
from __future__ import annotations

import io
import json
from typing import TextIO

import numpy as np

from ..aggregate.functions import stack_functions
from ..column_ops import view
from ..profile import NO_ID, Profile

SCHEMA = "https://www.speedscope.app/file-format-schema.json"

#: perf's software clock events: their sample periods are nanoseconds of CPU time
#: (perf-record(1): "cpu-clock ... task-clock", counted in ns by the kernel's hrtimer)
CLOCK_EVENTS = ("cpu-clock", "task-clock")


def unit_of(event: str) -> str:
    """speedscope's unit of the weights written for `event`: nanoseconds for a clock
    event (its periods), microseconds for perfweb's off-CPU and wall views (their rows
    count µs, analysis/offcpu/views.py), else samples ("none")."""
    if event.endswith(" µs"):
        return "microseconds"
    if event.split(":")[0].split("/")[0] in CLOCK_EVENTS:
        return "nanoseconds"
    return "none"


def write_speedscope(p: Profile, out: TextIO, name: str = "perfweb capture",
                     event_id: int | None = None) -> None:
    """The samples of `event_id` (None: the page's event) as speedscope JSON, written a
    thread at a time (each distinct stack's frame list made once)."""
    if event_id is None:
        event_id = p.default_event()
    event = p.events[event_id].name if event_id is not None else ""
    unit = unit_of(event)
    n = len(p.s_stack)
    rows = np.arange(n) if event_id is None else \
        np.flatnonzero(view(p.s_event, np.int32)[:n] == event_id)
    times = np.asarray(p.s_time, dtype=np.float64)[rows] if n else np.zeros(0)
    rows = rows[np.argsort(times, kind="stable")]  # (no time: NaN, after the others)
    if unit == "nanoseconds":
        weights = np.asarray(p.periods(), dtype=np.int64)[rows]
    else:
        weights = np.asarray(p.s_count, dtype=np.int64)[rows] if p.has_count_column() \
            else np.ones(len(rows), dtype=np.int64)
    stacks = view(p.s_stack, np.int32)[rows]
    tids = np.asarray(p.s_tid, dtype=np.int64)[rows] if n else np.zeros(0, dtype=np.int64)
    # each distinct stack's frames (root first) as JSON text, the frames shared
    frame_ix: dict[int, int] = {}
    frames: list[dict] = []
    text: dict[int, str] = {}
    for sid in np.unique(stacks).tolist():
        ids = []
        for fid in reversed(stack_functions(p, p.stacks[sid])):
            ix = frame_ix.get(fid)
            if ix is None:
                fn = p.functions[fid]
                ix = frame_ix[fid] = len(frames)
                frames.append({"name": fn.name, "file": p.mappings[fn.mapping_id].path})
            ids.append(ix)
        text[sid] = json.dumps(ids, separators=(",", ":"))
    out.write('{"$schema":' + json.dumps(SCHEMA) + ',"shared":{"frames":')
    json.dump(frames, out)
    out.write('},"profiles":[')
    by_thread = np.argsort(tids, kind="stable")  # (each thread's rows keep time order)
    bounds = np.flatnonzero(np.diff(tids[by_thread])) + 1
    for k, part in enumerate(np.split(by_thread, bounds) if len(by_thread) else []):
        tid = int(tids[part[0]])
        comm = p.comm(int(rows[part[0]]))
        label = f"{comm} ({tid})" if tid != NO_ID else (comm or "thread ?")
        w = weights[part]
        out.write(("," if k else "") + '{"type":"sampled","name":' + json.dumps(label) +
                  ',"unit":' + json.dumps(unit) + ',"startValue":0,"endValue":' +
                  str(int(w.sum())) + ',"samples":[')
        out.write(",".join(map(text.__getitem__, stacks[part].tolist())))
        out.write('],"weights":[')
        out.write(",".join(map(str, w.tolist())))
        out.write("]}")
    out.write('],"name":' + json.dumps(name) + ',"exporter":"perfweb"}')


def to_speedscope(p: Profile, name: str = "perfweb capture",
                  event_id: int | None = None) -> dict:
    """write_speedscope's document as a dict (tests, small captures)."""
    buf = io.StringIO()
    write_speedscope(p, buf, name, event_id)
    return json.loads(buf.getvalue())
