"""Rules on off-CPU time, for captures with context switches (analysis.offcpu): where
threads block, for how long per second and per unit of work, and whether that is a cost
(a lock, the disk, a peer, a full run queue) or waiting for work (an idle pool, an event
loop between requests), which is not reported as a problem.

The measure is the share of the threads' time: a thread watched for 5 s that spent 2 s
blocked on a lock lost 40% of its time to it, whatever the CPUs did meanwhile.
"""
from __future__ import annotations

from array import array
from collections import Counter, defaultdict

from .. import column_ops
from ..aggregate.functions import stack_functions
from ..offcpu import interval_sums
from ..offcpu.switches import DISK, RUNNABLE, SLEEPING
from ..offcpu.threads import off_cpu
from . import knowledge, software
from .context import Context
from .finding import Finding, focus_of, pct, seconds_text

#: what each kind of wait is, for titles, and what to change
_KIND_TEXT = {
    "lock": ("wait for a lock",
             "Shorten or split the critical section (take the lock for the update only, "
             "not for logging or I/O), shard the protected state per thread or per key, "
             "or use a lock-free counter or a per-thread buffer merged later."),
    "server lock": ("wait for the server's own locks",
                    "See the server's lock statistics for the contended object and spread "
                    "the work over more rows, keys or partitions."),
    "interpreter lock": ("wait for the interpreter lock",
                         "Run the work in processes, not threads (gunicorn --workers, "
                         "multiprocessing), or release the lock in native code."),
    "disk": ("wait for the disk",
             "Make fewer synchronous writes and flushes (batch commits, group commit, "
             "fsync once a second where that durability is enough), and read through a "
             "cache; a faster device or write cache changes the floor."),
    "network": ("wait on the network or a peer",
                "The other side is the limit: look at the service this one calls (its "
                "latency, its pool size), pipeline or batch requests, and keep "
                "connections open; disable Nagle's delay (TCP_NODELAY) for small "
                "request/response messages."),
    "pipe": ("wait on a pipe", "The process at the other end of the pipe is the limit."),
    "futex": ("wait in a futex (a lock or a condition variable: user frames missing)",
              "Record with frame pointers or --call-graph dwarf to see which lock."),
    "other": ("block", "Open the off-CPU flame graph at these stacks."),
    "unnamed": ("block in code without symbols",
                "Upload the recording host's kallsyms (and the binaries' symbols) to tell "
                "waiting for work from waiting on a lock or the disk."),
}


def _active(oc) -> int:
    """Threads that ran at all: shares are of their time (a thread asleep the whole
    window, a pool's spare worker, would only dilute them)."""
    return max(1, sum(1 for t in oc.threads.values() if t.on_cpu_s > 0))


def _classify(ctx: Context, sid: int, state: int, memo: dict) -> tuple[str, int | None]:
    """(kind of wait, the application frame that made it) of one switch-out stack."""
    key = (sid, state == DISK)
    hit = memo.get(key)
    if hit is not None:
        return hit
    p = ctx.profile
    if sid < 0:
        # only PERF_RECORD_SWITCH saw it, or the thread was off when the window began:
        # what it waited for is not known, and no finding rests on it
        memo[key] = ("unrecorded", None)
        return memo[key]
    fids = stack_functions(p, p.stacks[sid])
    names = [p.functions[f].name for f in fids if p.functions[f].resolved]
    kind = None
    if not names:
        kind = "unnamed"  # no symbols: blocked, but on what (work or a lock) is unknown
    elif any(software.interpreter_lock_of(n) for n in names):
        kind = "interpreter lock"
    elif any(software.wait_of(n) for n in names):
        kind = "server lock"
    if kind is None:
        kind = knowledge.block_kind(names, state == DISK)
    caller = None
    for f in fids:
        if ctx.passes_through(f) or not p.functions[f].resolved:
            continue
        if ctx.app.get(f, not knowledge.is_system_dso(ctx.dso(f))):
            caller = f
            break
    memo[key] = (kind, caller)
    return kind, caller


def blocked_time(ctx: Context, t: dict) -> Finding | None:
    """The costliest kind of voluntary wait, when it takes a real share of the threads'
    time: its seconds, waits, mean wait, per second and per unit of work, under which
    application frames."""
    found = _blocked(ctx, t)
    return found[0] if found else None


def _tally(ctx: Context):
    """(window seconds, threads' seconds, seconds, waits, callers, threads per kind)."""
    def compute():
        oc = off_cpu(ctx.profile)
        if oc is None or not oc.timed or not oc.threads:
            return None
        dur = oc.window[1] - oc.window[0]
        # each distinct (stack, disk wait) once, then the kinds' sums in interval order
        g, groups = interval_sums.groups(oc.i_stack, oc.i_state, RUNNABLE, 2)
        memo: dict = {}
        kind_ix: dict[str, int] = {}  # in order of first appearance, as a Counter fills
        caller_ix: dict[tuple[str, int], int] = {}
        kind_of, caller_of = array("i"), array("i")
        for sid, disk in groups:
            kind, caller = _classify(ctx, sid, DISK if disk else SLEEPING, memo)
            kind_of.append(kind_ix.setdefault(kind, len(kind_ix)))
            caller_of.append(-1 if caller is None else
                             caller_ix.setdefault((kind, caller), len(caller_ix)))
        kinds = list(kind_ix)
        s, n, pairs = interval_sums.sums(g, oc.i_dur, len(kinds), oc.i_tid, kind_of)
        secs = Counter(dict(zip(kinds, s)))
        waits = Counter(dict(zip(kinds, n)))
        tids: dict[str, set] = defaultdict(set)
        for k, tid in pairs:
            tids[kinds[k]].add(tid)
        callers: dict[str, Counter] = defaultdict(Counter)
        for (kind, caller), v in zip(caller_ix, interval_sums.sums(g, oc.i_dur, len(caller_ix),
                                                                None, caller_of)[0]):
            callers[kind][caller] = v
        return dur, dur * _active(oc), secs, waits, callers, tids
    return ctx.memo("blocked_tally", compute)


def blocked_summary(ctx: Context) -> list[dict]:
    """Per kind of wait: seconds, waits, per second of the window, share of the threads'
    time, whether it is waiting for work, and the application frames it was under
    (report["off_cpu"]["by_kind"], which comparisons read)."""
    tally = _tally(ctx)
    if tally is None:
        return []
    dur, thread_time, secs, waits, callers, tids = tally
    return [{"kind": kind, "seconds": round(s, 6), "waits": waits[kind],
             "per_second": round(s / dur, 6) if dur > 0 else None,
             "share": round(s / thread_time, 6) if thread_time > 0 else None,
             "benign": kind in knowledge.BENIGN_BLOCK or kind == "unrecorded",
             "threads": len(tids[kind]),
             "under": [{"name": ctx.name(f), "seconds": round(v, 6)}
                       for f, v in callers[kind].most_common(3)]}
            for kind, s in secs.most_common()]


def _blocked(ctx: Context, t: dict) -> list[Finding]:
    tally = _tally(ctx)
    if tally is None:
        return []
    dur, thread_time, secs, waits, callers, tids = tally
    if thread_time <= 0:
        return []
    oc = off_cpu(ctx.profile)
    out = []
    for kind, s in secs.most_common():
        if kind in knowledge.BENIGN_BLOCK or kind == "unrecorded":
            continue
        share = s / thread_time
        if share < t["min_share"]:
            continue
        what, fix = _KIND_TEXT.get(kind, _KIND_TEXT["other"])
        top = callers[kind].most_common(3)
        under = (" under " + ", ".join(ctx.name(f) for f, _ in top[:2])) if top else ""
        n = waits[kind]
        rows = [dict(ctx.function_row(f, 0), seconds=round(v, 6)) for f, v in top]
        # waiting on a peer is its latency (a server thread blocked in recv waits for
        # the next request as much as a client for a reply): a cost only when it takes
        # most of the threads' time; many short ones are round trips (round_trips)
        floor = t["peer_medium"] if kind in knowledge.PEER_BLOCK else t["medium"]
        out.append(Finding(
            "blocked-time",
            f"Threads {what}{under.split(',')[0]}: {pct(share)} of their time",
            "low" if kind == "unnamed" or share < floor else
            "high" if share >= t["high"] else "medium",
            "low" if kind == "unnamed" else "high", share, n,
            f"{len(tids[kind])} thread{'s' if len(tids[kind]) != 1 else ''} spent "
            f"{s:.3f} s blocked in {n} waits (mean {seconds_text(s / n)}){under}: "
            f"{s / dur:.2f} s of waiting per second, {pct(share)} of the {_active(oc)} "
            f"threads' {thread_time:.2f} s.",
            "A request that waits here is delayed by the whole wait; while threads wait, "
            "added CPUs or threads do not help, which is why throughput can fall while "
            "CPU use falls too.",
            fix, evidence={"kind": kind, "seconds": round(s, 6), "waits": n,
                           "per_second": round(s / dur, 6), "functions": rows,
                           "threads": sorted(tids[kind])[:32]},
            focus=focus_of(rows, sorted(tids[kind]))))
    return out


def waiting_for_cpu(ctx: Context, t: dict) -> Finding | None:
    """Runnable but not running: the threads were preempted and waited for a CPU."""
    oc = off_cpu(ctx.profile)
    if oc is None or not oc.timed or not oc.threads:
        return None
    dur = oc.window[1] - oc.window[0]
    thread_time = dur * _active(oc)
    pre = sum(tt.preempted_s for tt in oc.threads.values())
    if thread_time <= 0 or pre / thread_time < t["min_share"]:
        return None
    share = pre / thread_time
    busy = sum(1 for tt in oc.threads.values() if tt.preempted_s > 0.01 * dur)
    cpus = f" on {ctx.cpus_online} CPUs" if ctx.cpus_online else ""
    # the CPUs the process wanted (running or runnable): when they fit the CPUs, the
    # run-queue waits were other work on the host taking them
    wanted = sum(tt.on_cpu_s + tt.preempted_s for tt in oc.threads.values()) / dur
    # (any host has one CPU; how many more, only a format that records it can say)
    external = wanted <= (ctx.cpus_online or 1)
    unknown = not external and ctx.cpus_online is None
    return Finding(
        "waiting-for-cpu", f"Threads wait for a CPU: {pct(share)} of their time runnable "
                           f"but not running",
        "low" if external or unknown else "high" if share >= t["high"] else "medium",
        "high", share,
        sum(tt.switches for tt in oc.threads.values()),
        f"{busy} threads were preempted and waited {pre:.3f} s for a CPU{cpus} "
        f"({pre / dur:.2f} s per second): " + (
            f"the process wanted {wanted:.2f} CPUs, within the CPUs it has, so other "
            f"work on the host took them." if external else
            f"the process wanted {wanted:.2f} CPUs; the capture does not say how many "
            f"the host has, so whether its own threads or other work took them is "
            f"unknown (perf.data records it; perf script prints CPUs with -F +cpu)."
            if unknown else
            f"the process wanted {wanted:.2f} CPUs, more than the {ctx.cpus_online} it "
            f"has."),
        "Time in the run queue is latency added to every request that thread carries, "
        "with no work done.",
        "Run fewer busy threads than CPUs (size pools to the cores), give the service "
        "dedicated CPUs (cpusets, a less loaded host), or reduce the CPU work per request.",
        evidence={"preempted_s": round(pre, 6), "functions": [],
                  "threads": [{"tid": tid, "preempted_s": round(tt.preempted_s, 6)}
                              for tid, tt in sorted(oc.threads.items(),
                                                    key=lambda kv: -kv[1].preempted_s)[:16]]},
        focus=focus_of([], sorted(oc.threads)))


# ---- waits whose number, not their kind, is the cost ----------------------------------
#: a thread waiting for a peer this many times a second, each this short, makes round
#: trips: it sends, then waits for the reply, once per item (a query per row, a call per
#: message). A client waiting long for a slow peer is that peer's latency, not its own
#: fault; many short waits are the client's.
ROUND_TRIPS_PER_S = 200
ROUND_TRIP_MAX_S = 0.002
#: a thread doing this share of the process's on-CPU work is on the request path: its
#: sleeps, this frequent and this short, delay the work it carries (an idle timer or a
#: backoff thread sleeps long and does nothing else)
WORKER_SHARE = 0.2
SLEEPS_PER_S = 10
SLEEP_MAX_S = 0.1


def _waits(ctx: Context):
    """Per off-CPU interval of a voluntary wait: (kind index, tid, seconds, the
    application frame under which it waited), as numpy columns, with the kinds' names."""
    def compute():
        import numpy as np
        oc = off_cpu(ctx.profile)
        if oc is None or not oc.timed or not oc.threads:
            return None
        g, groups = interval_sums.groups(oc.i_stack, oc.i_state, RUNNABLE, 2)
        memo: dict = {}
        kinds: list[str] = []
        kind_ix: dict[str, int] = {}
        k_of, c_of = [], []
        for sid, disk in groups:
            kind, caller = _classify(ctx, sid, DISK if disk else SLEEPING, memo)
            k_of.append(kind_ix.setdefault(kind, len(kind_ix)))
            c_of.append(-1 if caller is None else caller)
        kinds = list(kind_ix)
        keep = g >= 0
        k_of_a, c_of_a = np.array(k_of + [-1], dtype=np.int64), np.array(c_of + [-1])
        gi = np.where(keep, g, len(k_of))
        return (kinds, k_of_a[gi][keep], np.asarray(oc.i_tid, dtype=np.int64)[keep],
                np.asarray(oc.i_dur, dtype=np.float64)[keep], c_of_a[gi][keep],
                oc.window[1] - oc.window[0], oc)
    return ctx.memo("waits_columns", compute)


def _per_thread(tids, durs):
    import numpy as np
    u, inv = column_ops.unique_inverse(np.asarray(tids))
    return u, np.bincount(inv), np.bincount(inv, weights=durs), inv


def round_trips(ctx: Context, t: dict) -> Finding | None:
    """Threads that wait for a peer hundreds of times a second, briefly each time: the
    request-reply round trips of a client doing one call per item."""
    import numpy as np
    got = _waits(ctx)
    if got is None:
        return None
    kinds, k, tid, dur, caller, window, oc = got
    peer = [i for i, name in enumerate(kinds) if name in knowledge.PEER_BLOCK]
    sel = np.isin(k, peer)
    if window <= 0 or not sel.any():
        return None
    u, n, secs, inv = _per_thread(tid[sel], dur[sel])
    rate, mean, share = n / window, secs / np.maximum(n, 1), secs / window
    hit = (rate >= ROUND_TRIPS_PER_S) & (mean <= ROUND_TRIP_MAX_S) & (share >= t["min_share"])
    if not hit.any():
        return None
    threads = u[hit].tolist()
    waits, seconds = int(n[hit].sum()), float(secs[hit].sum())
    per_thread_share = seconds / (window * len(threads))
    callers = caller[sel][np.isin(inv, np.flatnonzero(hit))]
    c_dur = dur[sel][np.isin(inv, np.flatnonzero(hit))]
    rows = []
    if (callers >= 0).any():
        sums = np.bincount(callers[callers >= 0], weights=c_dur[callers >= 0])
        for f in np.argsort(-sums, kind="stable")[:3]:
            if sums[f] > 0:
                rows.append(dict(ctx.function_row(int(f), 0), seconds=round(float(sums[f]), 6)))
    under = f" under {', '.join(r['name'] for r in rows[:2])}" if rows else ""
    per_s = waits / window
    severity = "high" if per_thread_share >= t["high"] else "medium" \
        if per_thread_share >= t["medium"] else "low"
    return Finding(
        "round-trips", f"Round trips: {per_s:,.0f} waits a second for a peer, "
                       f"{seconds_text(seconds / waits)} each",
        severity, "high", per_thread_share, waits,
        f"{len(threads)} thread{'s' if len(threads) != 1 else ''} waited for the other end "
        f"of a connection {waits:,} times in {window:.2f} s ({per_s:,.0f} a second, mean "
        f"{seconds_text(seconds / waits)}){under}: {pct(per_thread_share)} of "
        f"{'its' if len(threads) == 1 else 'their'} time. Each short wait is one request "
        f"and its reply: the work is paced by the number of round trips, not by either "
        f"side's CPU.",
        "A round trip costs the network's and the peer's latency plus two system calls "
        "and two context switches, however little it carries: one per row, per key or "
        "per message makes the latency, not the work, the limit.",
        "Send the items in bulk: batch statements (executemany with pipelining, COPY, a "
        "multi-row INSERT), pipeline requests (Redis pipelines, HTTP/2 or gRPC streams), "
        "or fetch many keys per call (MGET); keep one connection per worker.",
        evidence={"waits": waits, "seconds": round(seconds, 6), "per_second": round(per_s, 3),
                  "waits_per_second": round(per_s, 3), "functions": rows,
                  "threads": threads[:32]},
        focus=focus_of(rows, threads))


def sleeping_workers(ctx: Context, t: dict) -> Finding | None:
    """Threads that carry the process's work and sleep, often and briefly, in between:
    a blocking sleep (or a synchronous call standing in for one) on the request path."""
    import numpy as np
    got = _waits(ctx)
    if got is None or "idle" in ctx.label:
        return None
    kinds, k, tid, dur, caller, window, oc = got
    if "sleep" not in kinds or window <= 0:
        return None
    sel = k == kinds.index("sleep")
    u, n, secs, inv = _per_thread(tid[sel], dur[sel])
    on = sum(tt.on_cpu_s for tt in oc.threads.values())
    work = np.array([oc.threads[int(x)].on_cpu_s if int(x) in oc.threads else 0.0
                     for x in u])
    share = secs / window
    hit = (work >= WORKER_SHARE * on) & (n / window >= SLEEPS_PER_S) & \
        (secs / np.maximum(n, 1) <= SLEEP_MAX_S) & (share >= t["min_share"])
    if on <= 0 or not hit.any():
        return None
    threads = u[hit].tolist()
    waits, seconds = int(n[hit].sum()), float(secs[hit].sum())
    thread_share = seconds / (window * len(threads))
    mask = np.isin(inv, np.flatnonzero(hit))
    callers, c_dur = caller[sel][mask], dur[sel][mask]
    rows = []
    if (callers >= 0).any():
        sums = np.bincount(callers[callers >= 0], weights=c_dur[callers >= 0])
        for f in np.argsort(-sums, kind="stable")[:3]:
            if sums[f] > 0:
                rows.append(dict(ctx.function_row(int(f), 0), seconds=round(float(sums[f]), 6)))
    under = f" under {', '.join(r['name'] for r in rows[:2])}" if rows else \
        " (the frames above the sleep are not in the stacks)"
    names = ", ".join(ctx.thread_names(threads)[:2])
    severity = "high" if thread_share >= t["high"] else "medium" \
        if thread_share >= t["medium"] else "low"
    return Finding(
        "blocked-time", f"Threads that do the work sleep: {pct(thread_share)} of their "
                        f"time in {waits:,} sleeps",
        severity, "high", thread_share, waits,
        f"{len(threads)} thread{'s' if len(threads) != 1 else ''}"
        + (f" ({names})" if names else "") +
        f" doing {pct(float(work[hit].sum()) / on)} of the process's on-CPU work slept "
        f"{waits:,} times in {window:.2f} s (mean {seconds_text(seconds / waits)}){under}: "
        f"{pct(thread_share)} of {'its' if len(threads) == 1 else 'their'} time. A "
        f"thread that serves requests and sleeps holds every request queued behind it "
        f"for the whole sleep.",
        "A sleep (or a blocking call that waits like one) on a thread that serves "
        "requests adds its length to every request that thread carries; on an event "
        "loop it stops every connection at once.",
        "Take the wait off the thread that serves requests: await an asynchronous call "
        "(asyncio.sleep, an async client) instead of a blocking one, or run the blocking "
        "call in an executor or a worker pool; remove sleeps used as pacing or retry "
        "backoff from the request path.",
        evidence={"kind": "sleep", "seconds": round(seconds, 6), "waits": waits,
                  "per_second": round(seconds / window, 6), "functions": rows,
                  "threads": threads[:32]},
        focus=focus_of(rows, threads))
