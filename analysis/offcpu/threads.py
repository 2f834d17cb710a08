"""Per-thread on-CPU and off-CPU time from the context switches.

Each thread alternates: IN (it got a CPU) ... OUT (it left it, in some state, from some
stack) ... IN. An OUT to the next IN is an off-CPU interval: blocked (sleeping, waiting
for the disk) or runnable but preempted (waiting for a CPU); an IN to the next OUT is
on-CPU time. At the edges of the window a thread's first IN means it was off-CPU since
the window began, its last OUT that it stayed off until the window ended.

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
from .switches import (BLOCKED, DISK, IN, OUT, RAN, RECORD, RUNNABLE, SLEEPING, WAKE,
                       SwitchLog)

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
    # every thread's intervals, compiled: _intervals.c is this module's _merged and
    # _thread, statement for statement, over the threads in tid order
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


def _merged(log: SwitchLog, rows):
    """One thread's switches in time order, (time, kind, state, stack, source, value),
    the two sources' views of one switch made one: timed by PERF_RECORD_SWITCH,
    described (state, stack) by the tracepoint. A generator holding one pending switch:
    memory does not grow with the number of switches."""
    last: list | None = None
    time, kind_, state, stack, source = log.time, log.kind, log.state, log.stack, \
        log.source
    # with PERF_RECORD_SWITCH rows the records time every switch; the tracepoint only
    # describes the switch-out that follows it (system-wide, the two interleave)
    records = any(source[r] == RECORD for r in rows)
    told: tuple | None = None  # (time, state, stack) of a tracepoint switch-out
    for r in rows:
        t, kind, st, sk, src = time[r], kind_[r], state[r], stack[r], source[r]
        if records and src != RECORD and kind in (IN, OUT):
            if kind == OUT:
                told = (t, st, sk)
            continue
        if records and kind == OUT and told is not None:
            if t - told[0] < SAME_SWITCH_S:
                if st != RUNNABLE:
                    st = told[1]
                sk = told[2]
            told = None
        if kind == RAN or kind == WAKE:
            if last is not None:
                yield last
                last = None
            yield (t, kind, 0, sk if kind == WAKE else -1, src,
                   log.value[r] if kind == RAN else log.peer[r])
            continue
        if last is not None and last[1] == kind and t - last[0] < SAME_SWITCH_S and \
                last[4] != src:
            if src == RECORD:
                last[0] = t
                if kind == OUT and st == RUNNABLE:
                    last[2] = RUNNABLE
            elif kind == OUT and last[2] != RUNNABLE:
                last[2] = st
            if last[3] < 0:
                last[3] = sk
            continue
        if last is not None:
            yield last
        last = [t, kind, st, sk, src, 0.0]
    if last is not None:
        yield last


def _thread(out: OffCpu, pid: int, tid: int, events, start: float, end: float) -> None:
    tt = out.threads[tid] = ThreadTime(tid, pid)
    on_since: float | None = start  # on-CPU when the window began, until told otherwise
    off: list | None = None  # the switch-out waiting for its switch-in
    came_in = False  # a switch-in says when the current on-CPU stretch began
    ran = 0.0  # seconds sched_stat_runtime says the thread ran since its last out
    woke = (-1, -1)  # (waker tid, its stack) of the wakeup since the last switch-out
    for k, (t, kind, st, sk, _src, value) in enumerate(events):
        if kind == RAN:
            ran += value
            continue
        if kind == WAKE:
            if off is not None:
                woke = (int(value), sk)
            continue
        if kind == OUT:
            if not came_in and ran > 0:
                # no switch-in seen (perf sched record -p): it came in `ran` before
                back = max(t - ran, off[0] if off is not None else start)
                if off is not None:
                    _off(out, tt, off[0], back, off[1], off[2])
                else:
                    _off(out, tt, start, back, BLOCKED, -1)
                off, on_since = None, back
            if on_since is not None:
                tt.on_cpu_s += t - on_since
            on_since = None
            came_in = False
            ran = 0.0
            tt.switches += 1
            off = [t, st, sk]
        else:
            if off is None and on_since is not None and k > 0:
                continue  # already on a CPU: a second switch-in (CPU-wide records)
            if off is not None:
                _off(out, tt, off[0], t, off[1], off[2], woke)
            elif k == 0:
                _off(out, tt, start, t, BLOCKED, -1)  # off when the window began
            off = None
            on_since = t
            came_in = True
            ran = 0.0
            woke = (-1, -1)
    if off is not None and out.timed:
        _off(out, tt, off[0], end, off[1], off[2])
    elif on_since is not None:
        tt.on_cpu_s += end - on_since


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
