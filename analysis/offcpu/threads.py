"""Per-thread on-CPU and off-CPU time from the context switches.

Each thread alternates: IN (it got a CPU) ... OUT (it left it, in some state, from some
stack) ... IN. An OUT to the next IN is an off-CPU interval: blocked (sleeping, waiting
for the disk) or runnable but preempted (waiting for a CPU); an IN to the next OUT is
on-CPU time. At the edges of the window a thread's first IN means it was off-CPU since
the window began, its last OUT that it stayed off until the window ended, unless the
thread was created or ended inside the window: from its FORK it is runnable until its
first IN, nothing before; at its EXIT (or a switch-out in the dead state) its time ends,
so a thread that exited is neither blocked nor on a CPU until the window's end (issue 38:
a server running a child process per request read as thousands of seconds blocked).

When both PERF_RECORD_SWITCH and the sched_switch tracepoint were recorded, perf gives
each switch-out twice, the tracepoint some microseconds before the record: the two are
one switch, timed by the record (perf's own on/off boundary) and described by the
tracepoint (state, stack).
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field

from . import _intervals
from .switches import BLOCKED, DISK, RAN, RUNNABLE, SLEEPING, SwitchLog

#: two switch-outs of one thread closer than this with no switch-in between are one
#: switch seen by both sources
SAME_SWITCH_S = 0.001


@dataclass
class ThreadTime:
    tid: int
    pid: int
    on_cpu_s: float = 0.0
    off_cpu_s: float = 0.0
    preempted_s: float = 0.0  # runnable, waiting for a CPU (involuntary switch-out)
    sleeping_s: float = 0.0  # voluntary: waiting for an event, a lock, the network
    disk_s: float = 0.0  # uninterruptible sleep: usually the disk
    blocked_unknown_s: float = 0.0  # voluntary, state not recorded
    switches: int = 0  # switch-outs

    @property
    def blocked_s(self) -> float:
        """Voluntary switch-out: every off-CPU state but runnable."""
        return self.off_cpu_s - self.preempted_s


@dataclass
class OffCpu:
    """What the switches say. Intervals are columns: thread, start, duration, state and
    the stack at switch-out (-1 when only PERF_RECORD_SWITCH saw it)."""
    window: tuple[float, float]
    threads: dict[int, ThreadTime] = field(default_factory=dict)
    i_tid: array = field(default_factory=lambda: array("i"))
    i_start: array = field(default_factory=lambda: array("d"))
    i_dur: array = field(default_factory=lambda: array("d"))
    i_state: array = field(default_factory=lambda: array("b"))
    i_stack: array = field(default_factory=lambda: array("i"))
    #: who woke the thread at the end of the interval (sched_wakeup), and from where
    i_waker: array = field(default_factory=lambda: array("i"))
    i_wake_stack: array = field(default_factory=lambda: array("i"))
    #: switch-ins were recorded: off-CPU intervals have an end (perf sched record -p
    #: and a lone sched_switch tracepoint give only switch-outs)
    timed: bool = True

    def __len__(self) -> int:
        return len(self.i_tid)


def window_of(profile) -> tuple[float, float]:
    """The capture's time window: its first and last sample or switch."""
    lo, hi = math.inf, -math.inf
    for col in (profile.s_time, profile.switches.time):
        for t in (min(col, default=math.nan), max(col, default=math.nan)):
            if t == t:
                lo, hi = min(lo, t), max(hi, t)
    return (lo, hi) if lo <= hi else (0.0, 0.0)


def off_cpu(profile) -> OffCpu | None:
    """The off-CPU intervals and per-thread times of a profile, or None without
    switches. Computed once per profile."""
    log: SwitchLog = profile.switches
    if not len(log) and not (log.recorded and log.watched):
        return None
    return profile.memo(("off_cpu", len(log)), lambda: _compute(profile, log))


def _compute(profile, log: SwitchLog) -> OffCpu:
    start, end = window_of(profile)
    if end <= start:  # nothing happened: the window is how long perf watched
        from ..cpu import duration_s
        start, end = 0.0, duration_s(profile, None) or 0.0
    out = OffCpu((start, end), timed=log.has_switch_ins() or RAN in log.kind or
                 (log.recorded and not len(log)))
    # every thread's intervals, compiled: _intervals.c says how (its Python original,
    # statement for statement, is intervals_python.py, which the tests compare)
    threads, cols = _intervals.intervals(
        len(log), log.time, log.tid, log.pid, log.kind, log.state, log.stack, log.source,
        log.value, log.peer, start, end, out.timed, SAME_SWITCH_S)
    for tid, pid, on, off, pre, sleeping, disk, unknown, switches in threads:
        out.threads[tid] = ThreadTime(tid, pid, on, off, pre, sleeping, disk, unknown,
                                      switches)
    for column, data in zip((out.i_tid, out.i_start, out.i_dur, out.i_state, out.i_stack,
                             out.i_waker, out.i_wake_stack), cols):
        column.frombytes(data)
    if log.recorded and out.timed and end > start:
        sampled = set(profile.s_tid)
        for tid in log.watched:
            if tid in out.threads:
                continue
            # no switch in the whole window: on a CPU all along if it was sampled, else
            # asleep since before perf started (an idle pool's threads)
            tt = out.threads[tid] = ThreadTime(tid, -1)
            if tid in sampled:
                tt.on_cpu_s = end - start
            else:
                _off(out, tt, start, end, BLOCKED, -1)
    return out


def _off(out: OffCpu, tt: ThreadTime, t0: float, t1: float, state: int, stack: int,
         woke: tuple[int, int] = (-1, -1)) -> None:
    d = t1 - t0
    if d <= 0:
        return
    out.i_waker.append(woke[0])
    out.i_wake_stack.append(woke[1])
    tt.off_cpu_s += d
    if state == RUNNABLE:
        tt.preempted_s += d
    elif state == SLEEPING:
        tt.sleeping_s += d
    elif state == DISK:
        tt.disk_s += d
    else:
        tt.blocked_unknown_s += d
    out.i_tid.append(tt.tid)
    out.i_start.append(t0)
    out.i_dur.append(d)
    out.i_state.append(state)
    out.i_stack.append(stack)
