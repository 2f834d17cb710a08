"""Firefox Profiler's Gecko profile format, gzipped: what profiler.firefox.com opens when
the file is dropped on it or loaded with "Load a profile from file".

Of the two formats it reads, the Gecko format (the one Firefox itself emits) is written
here rather than the processed one: the profiler converts it on load, upgrading any older
version, whereas a processed profile must match the version of the app's tables exactly.
Version 24 is the one the profiler's own `perf script` importer builds
(src/profile-logic/import/linux-perf.ts), so it takes the same path into the app as a
perf script text does, with our symbol names and no text to parse.

One thread per tid with its samples in time order (ms from the capture's first sample,
meta.startTime that sample's time), a stack table of (prefix, frame) pairs per thread,
frames named `function (in /path/of/dso)` (the profiler makes a library of what follows
"in"), in two categories, User and Kernel. Inline frames are frames of their own, as in
the flame graph. Samples are those of the explorer's query (analysis.export.selected);
only the on-CPU view's samples have a time each, so the off-CPU and wall views are
refused.
"""
from __future__ import annotations

import gzip
import math

from ..aggregate.functions import stack_functions
from ..errors import AnalysisError
from ..jsonio import dumps
from ..offcpu.views import ON_CPU
from ..profile import KERNEL, NO_ID, Profile
from .selected import select

GECKO_VERSION = 24
CATEGORIES = [{"name": "User", "color": "yellow", "subcategories": ["Other"]},
              {"name": "Kernel", "color": "orange", "subcategories": ["Other"]}]
USER, KERNEL_CATEGORY = 0, 1

_SAMPLES_SCHEMA = {"stack": 0, "time": 1, "responsiveness": 2}
_STACK_SCHEMA = {"prefix": 0, "frame": 1}
_FRAME_SCHEMA = {"location": 0, "relevantForJS": 1, "innerWindowID": 2, "implementation": 3,
                 "optimizations": 4, "line": 5, "column": 6, "category": 7, "subcategory": 8}
_MARKER_SCHEMA = {"name": 0, "startTime": 1, "endTime": 2, "phase": 3, "category": 4,
                  "data": 5}


class _Thread:
    def __init__(self, p: Profile, pid: int, tid: int, name: str) -> None:
        self.p, self.pid, self.tid, self.name = p, pid, tid, name
        self.strings: list[str] = []
        self.frames: list[list] = []
        self.stacks: list[list] = []
        self.samples: list[list] = []
        self._frame_of: dict[int, int] = {}  # function id -> frame
        self._stack_of: dict[tuple[int | None, int], int] = {}
        self._sample_stack: dict[int, int | None] = {}  # profile stack id -> stack

    def frame(self, fid: int) -> int:
        ix = self._frame_of.get(fid)
        if ix is None:
            fn = self.p.functions[fid]
            m = self.p.mappings[fn.mapping_id]
            self.strings.append(f"{fn.name} (in {m.path})" if m.path else fn.name)
            category = KERNEL_CATEGORY if m.kind == KERNEL else USER
            ix = self._frame_of[fid] = len(self.frames)
            self.frames.append([len(self.strings) - 1, False, 0, None, None, None, None,
                                category, 0])
        return ix

    def stack(self, sid: int) -> int | None:
        """The stack table's index of a profile stack (None: a sample of no frame)."""
        if sid in self._sample_stack:
            return self._sample_stack[sid]
        prefix: int | None = None
        for fid in reversed(stack_functions(self.p, self.p.stacks[sid])):  # root first
            key = (prefix, self.frame(fid))
            ix = self._stack_of.get(key)
            if ix is None:
                ix = self._stack_of[key] = len(self.stacks)
                self.stacks.append([prefix, key[1]])
            prefix = ix
        self._sample_stack[sid] = prefix
        return prefix

    def gecko(self) -> dict:
        self.samples.sort(key=lambda s: s[1])
        return {"name": self.name, "processType": "default", "processName": self.name,
                "registerTime": 0, "unregisterTime": None, "pid": self.pid, "tid": self.tid,
                "samples": {"schema": _SAMPLES_SCHEMA, "data": self.samples},
                "markers": {"schema": _MARKER_SCHEMA, "data": []},
                "stackTable": {"schema": _STACK_SCHEMA, "data": self.stacks},
                "frameTable": {"schema": _FRAME_SCHEMA, "data": self.frames},
                "stringTable": self.strings}


def _interval_ms(p: Profile, event: int | None) -> float:
    """The sampling interval: 1/frequency, or the fixed period of a clock event."""
    if event is None:
        return 1.0
    e = p.events[event]
    if e.frequency:
        return 1000.0 / e.frequency
    if e.period and e.name.startswith(("cpu-clock", "task-clock")):
        return e.period / 1e6
    return 1.0


def to_gecko(profile: Profile, q=None, *, name: str = "perfweb",
             start_ms: float | None = None) -> dict:
    """The Gecko profile of the query's samples (None: the whole default event).
    `start_ms`: when the recording started (ms since the epoch), when known."""
    sel = select(profile, q)
    if sel.view != ON_CPU:
        raise AnalysisError("The Firefox Profiler export holds sampled events, each sample "
                            "at its time: choose the on-CPU view (pprof exports the off-CPU "
                            "and wall views).")
    p = sel.profile
    times = p.s_time
    if sel.rows and (sel.t0 is None or any(math.isnan(times[i]) for i in sel.rows)):
        raise AnalysisError("The Firefox Profiler export needs the time of each sample, and "
                            "this capture's samples have none (a report or folded text): "
                            "export pprof or speedscope instead.")
    t0 = sel.t0 or 0.0
    threads: dict[tuple[int, int], _Thread] = {}
    stack, pid, tid, count = p.s_stack, p.s_pid, p.s_tid, p.counts()
    for i in sel.rows:
        key = (pid[i], tid[i])
        th = threads.get(key)
        if th is None:
            t = tid[i]
            comm = p.comm(i) or (f"thread {t}" if t != NO_ID else "unknown thread")
            th = threads[key] = _Thread(p, 0 if pid[i] == NO_ID else pid[i],
                                        0 if t == NO_ID else t, comm)
        at = round((times[i] - t0) * 1000.0, 6)
        s = [th.stack(stack[i]), at, 0]
        th.samples.extend([s] * count[i] if count[i] > 1 else (s,))
    meta = {"version": GECKO_VERSION, "interval": _interval_ms(p, sel.event),
            "startTime": start_ms if start_ms is not None else t0 * 1000.0,
            "shutdownTime": None, "processType": 0, "product": name, "stackwalk": 1,
            "debug": 0, "gcpoison": 0, "asyncstack": 0, "presymbolicated": True,
            "categories": CATEGORIES, "markerSchema": [],
            "misc": f"perfweb export, event {sel.event_name}" if sel.event_name else
            "perfweb export"}
    return {"meta": meta, "libs": [], "threads": [threads[k].gecko() for k in sorted(threads)],
            "processes": [], "pausedRanges": []}


def firefox_bytes(profile: Profile, q=None, **kw) -> bytes:
    """The Gecko profile as gzipped JSON (the profiler unzips what it is given)."""
    return gzip.compress(dumps(to_gecko(profile, q, **kw)), compresslevel=6)


def read_firefox(data: bytes) -> dict:
    import json
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


__all__ = ["AnalysisError", "GECKO_VERSION", "firefox_bytes", "read_firefox", "to_gecko"]
