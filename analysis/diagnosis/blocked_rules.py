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

from ..aggregate.functions import stack_functions
from ..offcpu import _intervals
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
        g, groups = _intervals.groups(oc.i_stack, oc.i_state, RUNNABLE, 2)
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
        s, n, pairs = _intervals.sums(g, oc.i_dur, len(kinds), oc.i_tid, kind_of)
        secs = Counter(dict(zip(kinds, s)))
        waits = Counter(dict(zip(kinds, n)))
        tids: dict[str, set] = defaultdict(set)
        for k, tid in pairs:
            tids[kinds[k]].add(tid)
        callers: dict[str, Counter] = defaultdict(Counter)
        for (kind, caller), v in zip(caller_ix, _intervals.sums(g, oc.i_dur, len(caller_ix),
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
        out.append(Finding(
            "blocked-time",
            f"Threads {what}{under.split(',')[0]}: {pct(share)} of their time",
            "low" if kind == "unnamed" else "high" if share >= t["high"] else "medium",
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
    return Finding(
        "waiting-for-cpu", f"Threads wait for a CPU: {pct(share)} of their time runnable "
                           f"but not running",
        "high" if share >= t["high"] else "medium", "high", share,
        sum(tt.switches for tt in oc.threads.values()),
        f"{busy} threads were preempted and waited {pre:.3f} s for a CPU{cpus} "
        f"({pre / dur:.2f} s per second): more runnable threads than CPUs, here or from "
        f"other work on the host.",
        "Time in the run queue is latency added to every request that thread carries, "
        "with no work done.",
        "Run fewer busy threads than CPUs (size pools to the cores), give the service "
        "dedicated CPUs (cpusets, a less loaded host), or reduce the CPU work per request.",
        evidence={"preempted_s": round(pre, 6), "functions": [],
                  "threads": [{"tid": tid, "preempted_s": round(tt.preempted_s, 6)}
                              for tid, tt in sorted(oc.threads.items(),
                                                    key=lambda kv: -kv[1].preempted_s)[:16]]},
        focus=focus_of([], sorted(oc.threads)))
