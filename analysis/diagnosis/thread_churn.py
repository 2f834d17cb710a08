"""Threads made and ended while the capture ran, read from the samples themselves: every
format with a thread id and a time per sample carries them (perf script text as much as
perf.data). A thread that first appears after the window began and is gone well before
it ended lived briefly; tens of them a second is a program creating a thread (or a
client that owns threads: a gRPC channel, an HTTP client with its pool) per unit of work.
"""
from __future__ import annotations

import numpy as np

from ..column_ops import unique_inverse
from ..profile import NO_ID
from .context import Context
from .finding import Finding, focus_of, pct

#: a thread seen for less than this share of the window, away from its edges, is short
SHORT_SPAN = 0.1
EDGE = 0.05
MIN_THREADS = 20
MIN_PER_S = 10.0


def thread_churn(ctx: Context, t: dict) -> Finding | None:
    p = ctx.profile
    if not ctx.total or ctx.event_id is None:
        return None
    got = _threads_seen(p, ctx.event_id)
    if got is None:
        return None
    u, first, last, n, pid_of, t0, t1 = got
    window = t1 - t0
    if window <= 0:
        return None
    short = ((last - first) < SHORT_SPAN * window) & (first > t0 + EDGE * window) & \
        (last < t1 - EDGE * window)
    count = int(short.sum())
    per_s = count / window
    if count < MIN_THREADS or per_s < MIN_PER_S:
        return None
    samples = int(n[short].sum())
    share = ctx.share(samples)
    tids = u[short].tolist()
    names = ctx.thread_names(tids)[:3]
    severity = "medium" if per_s >= t["medium_per_s"] else "low"
    # a thread that is its process's first (tid == pid) is a process: a program run per
    # request (exec) is said as processes, not threads
    procs = 0
    if pid_of is not None:
        procs = int((short & (pid_of == u)).sum())
    what = (f"{count} short-lived processes" if procs == count else
            f"{count} short-lived threads ({procs} of them processes)" if procs else
            f"{count} short-lived threads")
    noun = "processes" if procs == count else "threads"
    return Finding(
        "thread-churn", f"Threads made and ended: {what} ({per_s:,.0f} a second)",
        severity, "medium", share, samples,
        f"{count} {noun}" + (f" ({', '.join(names)})" if names else "") +
        f" appeared after the capture began and were gone before it ended, each seen "
        f"for under {pct(SHORT_SPAN)} of the {window:.2f} s window: about {per_s:,.0f} "
        f"{noun} created and ended a second. Their samples are {pct(share)} of the "
        f"capture; creating and ending them (clone, stack set-up, the kernel's exit "
        f"work) is paid by whoever waits for them and is undersampled here.",
        "A thread per unit of work costs its creation, its first touches of a fresh "
        "stack and its teardown, more than the work of a short request; a client object "
        "made per call that starts its own threads (an RPC channel, an HTTP client with "
        "a pool, an executor) pays this on every call.",
        "Create threads, pools and clients once and reuse them: one RPC channel or HTTP "
        "client for the process, a fixed thread pool that takes the work.",
        cpus=ctx.cpus(samples),
        evidence={"threads_created": count, "processes": procs,
                  "per_second": round(per_s, 3),
                  "window_s": round(window, 6), "functions": [], "threads": tids[:32]},
        focus=focus_of([], tids[:32]))


#: rows read at a time: the per-row temporaries (a mask, the kept rows' copies, the
#: threads' ids) cost about 40 bytes a row, 150 MiB of a 4M-sample report's peak when
#: made for every row at once
CHUNK = 1 << 20


def _threads_seen(p, event_id: int):
    """(the thread ids in ascending order; each one's first and last sample time, its
    samples, its process id, the last its rows gave, or None when the columns do not
    carry one; the first and last time of all), over the rows of `event_id` with a
    thread (not 0, the idle task) and a time; None with fewer than two such rows. Read
    a chunk of rows at a time, then merged per thread."""
    # (the columns as they are: views, not int64 copies of millions of rows)
    tid, time = np.asarray(p.s_tid), np.asarray(p.s_time, dtype=np.float64)
    pid = np.asarray(p.s_pid) if len(p.s_pid) == len(p.s_tid) else None
    event = None if p.only_event(event_id) else np.asarray(p.s_event)
    parts = []
    for a in range(0, len(tid), CHUNK):
        b = a + CHUNK
        ok = (tid[a:b] != NO_ID) & (tid[a:b] != 0) & np.isfinite(time[a:b])
        if event is not None:
            ok &= event[a:b] == event_id
        if not ok.any():
            continue
        t_c, when = tid[a:b][ok], time[a:b][ok]
        u, inv = unique_inverse(t_c)
        first, last = np.full(len(u), np.inf), np.full(len(u), -np.inf)
        np.minimum.at(first, inv, when)
        np.maximum.at(last, inv, when)
        of = np.zeros(len(u), dtype=np.int64)
        if pid is not None:  # (each thread's last row's: a later row's assignment wins)
            of[inv] = pid[a:b][ok]
        parts.append((u, first, last, np.bincount(inv, minlength=len(u)), of))
    if sum(int(x[3].sum()) for x in parts) < 2:
        return None
    u_all, f_all, l_all, n_all, p_all = (np.concatenate(c) for c in zip(*parts))
    u, inv = unique_inverse(u_all)
    first, last = np.full(len(u), np.inf), np.full(len(u), -np.inf)
    np.minimum.at(first, inv, f_all)
    np.maximum.at(last, inv, l_all)
    n = np.zeros(len(u), dtype=np.int64)
    np.add.at(n, inv, n_all)
    pid_of = None
    if pid is not None:
        pid_of = np.zeros(len(u), dtype=np.int64)
        pid_of[inv] = p_all  # (chunks in row order: the last row's process wins)
    return u, first, last, n, pid_of, float(f_all.min()), float(l_all.max())
