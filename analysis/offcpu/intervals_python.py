"""The Python twin of analysis/offcpu/_intervals.c (per-thread on/off-CPU time and the
off-CPU intervals), kept in the engine beside the compiled loop as its reference: the
tests compare the two bit for bit on real captures and random switch logs
(tests/test_offcpu_compiled.py). Read it to see what the C code does; threads.py runs the
compiled loop.
"""
from __future__ import annotations

from .switches import (BLOCKED, DEAD, EXIT, FORK, IN, OUT, RAN, RECORD,
                                      RUNNABLE, WAKE, SwitchLog)
from .threads import SAME_SWITCH_S, OffCpu, ThreadTime, _off, window_of


def compute(profile) -> OffCpu:
    """threads._compute with the threads' loop in Python."""
    from array import array
    log = profile.switches
    start, end = window_of(profile)
    if end <= start:
        from ..cpu import duration_s
        start, end = 0.0, duration_s(profile, None) or 0.0
    out = OffCpu((start, end), timed=log.has_switch_ins() or RAN in log.kind or
                 (log.recorded and not len(log)))
    times, tids, kinds = log.time, log.tid, log.kind
    rows_of: dict[int, array] = {}
    for i, tid in enumerate(tids):
        rows_of.setdefault(tid, array("i")).append(i)
    for tid in sorted(rows_of):
        rows = rows_of.pop(tid)
        if tid <= 0:
            continue
        if not any(kinds[r] in (OUT, FORK, EXIT) for r in rows):
            continue
        if any(times[a] > times[b] for a, b in zip(rows, rows[1:])):
            rows = sorted(rows, key=times.__getitem__)
        _thread(out, log.pid[rows[0]], tid, _merged(log, rows), start, end)
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
    # describes the switch-out that follows it (system-wide, the two interleave), but
    # for a dying thread's last one (dead), which ends its time with or without a record
    records = any(source[r] == RECORD for r in rows)
    told: tuple | None = None  # (time, state, stack) of a tracepoint switch-out
    for r in rows:
        t, kind, st, sk, src = time[r], kind_[r], state[r], stack[r], source[r]
        if records and src != RECORD and kind in (IN, OUT) and \
                not (kind == OUT and st == DEAD):
            if kind == OUT:
                told = (t, st, sk)
            continue
        if records and kind == OUT and told is not None:
            if t - told[0] < SAME_SWITCH_S:
                if st != RUNNABLE:
                    st = told[1]
                sk = told[2]
            told = None
        if kind == RAN or kind == WAKE or kind == FORK or kind == EXIT:
            if last is not None:
                yield last
                last = None
            yield (t, kind, 0, sk if kind == WAKE else -1, src,
                   log.value[r] if kind == RAN else log.peer[r] if kind == WAKE else 0.0)
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
    exited = False  # an EXIT with no switch after it: the thread's time ended there
    for k, (t, kind, st, sk, _src, value) in enumerate(events):
        if kind == RAN:
            ran += value
            continue
        if kind == WAKE:
            if off is not None:
                woke = (int(value), sk)
            continue
        if kind == FORK:
            # created: runnable until its first switch-in, nothing before (it did not
            # exist when the window began, or the tid was another, exited, thread's)
            if k > 0 and not exited:
                if off is not None:
                    _off(out, tt, off[0], t, off[1], off[2], woke)
                elif on_since is not None:
                    tt.on_cpu_s += t - on_since
            off = [t, RUNNABLE, -1]
            on_since = None
            came_in = False
            ran = 0.0
            woke = (-1, -1)
            exited = False
            continue
        if kind == EXIT:
            # it exits running: on a CPU up to here (or off since its last switch-out if
            # the switch-in was lost), nothing after unless a switch follows (-a records
            # the dying thread's last switch-out, in the dead state; -p stops here)
            if not exited:
                if off is not None:
                    _off(out, tt, off[0], t, off[1], off[2], woke)
                elif on_since is not None:
                    tt.on_cpu_s += t - on_since
            off = None
            on_since = t
            came_in = True
            ran = 0.0
            woke = (-1, -1)
            exited = True
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
            off = [t, st, sk] if st != DEAD else None  # dead: its last switch-out
            exited = False
        else:
            if exited:  # a new thread with the tid of one that exited (no FORK seen)
                on_since = t
                came_in = True
                ran = 0.0
                woke = (-1, -1)
                exited = False
                continue
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
    elif on_since is not None and not exited:
        tt.on_cpu_s += end - on_since


