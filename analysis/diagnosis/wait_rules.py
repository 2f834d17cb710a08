"""Rules about waiting: a server's own locks (software.WAITS), threads serialized on an
interpreter lock (software.INTERPRETER_LOCKS), and a capture under load whose threads
use little CPU. Waiting happens off-CPU, which a CPU profile does not sample: what these
rules read is the price of sleeping and waking that is on-CPU, the thread layout, and
how much CPU the threads used; each says so, and what to record to see the wait itself.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..offcpu.threads import off_cpu as off_cpu_of
from ..profile import NO_ID
from . import format_facts, knowledge, software
from .context import NO_THREADS, Capacity, Context
from .evidence import MIN_SAMPLES
from .finding import Finding, cpus_text, focus_of, pct, severity_of
from .recognise import verb, who_runs

#: how to see where threads wait: a CPU profile with context switches, or the scheduler
#: trace (perf-record(1) --switch-events; perf-sched(1))
#: -e cpu-clock/freq=499/: a frequency on the clock only; with -F perf samples the
#: tracepoint by frequency too and drops most switches (perf 6.1)
RECORD_OFF_CPU = ("perf record -g --switch-events -e cpu-clock/freq=499/ "
                  "-e sched:sched_switch -p PID -- sleep 5")
RECORD_SCHED = "perf sched record -p PID -- sleep 5"
#: what blocks a sample's frames leafward of a wait function: it sleeps or wakes
_BLOCKING = ("lock_slow", "scheduler", "wake_signal")


# ---- a server's own locks ---------------------------------------------------------------
def _server_wait(ctx: Context, sid: int) -> tuple[software.Wait, int] | None:
    """The wait (and the position of its frame) this stack is in, if any. Of the frames
    software.WAITS knows (each only when the stack sleeps or wakes below it, if it asks
    for that), the one nearest the root says why the thread waits (XactLockTableWait
    above ProcSleep above LWLockAcquire); a releasing frame (LockReleaseAll) counts only
    when nothing below it is a wait of its own (LWLockRelease waking LWLock waiters)."""
    fids = ctx.funcs[sid]
    found: list[tuple[int, software.Wait]] = []
    for i, f in enumerate(fids):
        cats = ctx.cats[f]
        if "server_wait" not in cats and "server_wait_block" not in cats:
            continue
        if "server_wait_block" in cats and not any(
                c in ctx.cats[g] for g in fids[:i] for c in _BLOCKING):
            continue
        wait = software.wait_of(ctx.name(f))
        if wait is not None:
            found.append((i, wait))
    waits = [(i, w) for i, w in found if not w.wake]
    if waits:
        i, w = waits[-1]
        return w, i
    if found:
        i, w = found[0]
        return w, i
    return None


def server_wait_stacks(ctx: Context) -> dict[int, tuple[software.Wait, int]]:
    return ctx.memo("server_waits", lambda: {
        sid: hit for sid in ctx.select(any_of=("server_wait", "server_wait_block"))
        if (hit := _server_wait(ctx, sid)) is not None})


def lock_wait(ctx: Context, t: dict) -> Finding | None:
    waits = server_wait_stacks(ctx)
    if not waits:
        return None
    groups: dict[tuple[str, str], dict[int, int]] = {}
    by_fn: dict[tuple[str, str], Counter] = {}
    callers_of: dict[tuple[str, str], Counter] = {}
    for sid, (wait, i) in waits.items():
        key = (wait.software, wait.short)
        w = ctx.weights[sid]
        groups.setdefault(key, {})[sid] = w
        fids = ctx.funcs[sid]
        by_fn.setdefault(key, Counter())[fids[i]] += w
        caller = next((f for f in fids[i + 1:] if ctx.app.get(f, False) and
                       not ctx.cats[f] & {"server_wait", "server_wait_block"}), None)
        if caller is not None:
            callers_of.setdefault(key, Counter())[caller] += w
    ranked = sorted(groups, key=lambda k: -ctx.samples(groups[k]))
    all_stacks = {sid: w for k in ranked for sid, w in groups[k].items()}
    samples = ctx.samples(all_stacks)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    top = ranked[0]
    parts = []
    for key in ranked[:3]:
        fn_text = ", ".join(
            f"{ctx.name(f)} {pct(ctx.share(c))}" +
            (f" under {ctx.name(callers_of[key].most_common(1)[0][0])}"
             if key in callers_of and j == 0 else "")
            for j, (f, c) in enumerate(by_fn[key].most_common(2)))
        what = next(w.what for w in software.WAITS if (w.software, w.short) == key)
        parts.append(f"{what}: {fn_text}")
    main_fn = ctx.name(by_fn[top].most_common(1)[0][0])
    used = ctx.cpus(ctx.samples(ctx.same_threads(all_stacks)))
    who = who_runs(ctx, all_stacks)
    note = "" if used is None else (
        f" The {who} {verb(who, 'uses', 'use')} {used:.2f} CPUs in all: the waiting "
        f"itself is off-CPU; these samples are the price of going to sleep and waking up.")
    fix = next((w.fix for w in software.WAITS if (w.software, w.short) == top and w.fix), "")
    callers = [ctx.function_row(f, c)
               for f, c in callers_of.get(top, Counter()).most_common(3)]
    funcs = [ctx.function_row(f, c)
             for key in ranked[:2] for f, c in by_fn[key].most_common(3)]
    return Finding(
        "lock-wait", f"{top[0]} waits for {top[1]}: {main_fn} in {pct(share)} of samples",
        severity_of(share, t), "high", share, samples,
        f"{pct(share)} of samples{cpus_text(ctx.cpus(samples))} wait for or wake the "
        f"waiters of {top[0]}'s own locks; " + "; ".join(parts) + "." + note,
        "A thread waiting for a lock held by another transaction or thread does no work "
        "until the holder lets go: the work behind that lock runs one at a time, and each "
        "handoff costs a sleep, a wake-up and a context switch.",
        fix, cpus=ctx.cpus(samples),
        evidence={"functions": funcs, "callers": callers,
                  "groups": [{"software": k[0], "lock": k[1],
                              "samples": ctx.samples(groups[k]),
                              "share": round(ctx.share(ctx.samples(groups[k])), 4)}
                             for k in ranked],
                  "stacks": ctx.heaviest_stacks(all_stacks)},
        focus=focus_of(callers or funcs))


# ---- interpreter locks ------------------------------------------------------------------
#: (also read by off_cpu, which leaves serialized threads to this rule)
INTERPRETER_LOCK_THRESHOLDS = {
    "min_threads": 3,  # threads running the interpreter, each with ...
    "thread_min_share": 0.02,  # ... at least this share of the samples, and ...
    "thread_interp_share": 0.5,  # ... at least half of their own in the interpreter
    "min_cpus": 0.5, "max_cpus": 1.25,  # together about one CPU
    # the lock's handoffs (futex waits and wake-ups) in this share of the samples are
    # evidence of the lock itself, when the capture does not say how many CPUs it had
    "futex_evidence": 0.03,
    "lock_fn_min_share": 0.005,  # the lock's functions, when named, are this visible
}


@dataclass
class Serialized:
    lock: software.InterpreterLock
    threads: list[tuple[int, int]]  # (tid, samples) of the interpreter's threads
    cpus: float
    stacks: dict[int, int]  # all samples of those threads


def serialized_threads(ctx: Context, t: dict) -> Serialized | None:
    """Threads that run an interpreter with a global lock and, together, use about one
    CPU: the shape of threads taking turns on the lock."""
    return ctx.memo(("serialized", tuple(sorted(t.items()))),
                    lambda: _serialized_threads(ctx, t))


def _interpreter_samples(ctx: Context) -> dict[int, Counter]:
    """thread -> {interpreter: its samples whose leaf is in that interpreter}."""
    leaves = ctx.interpreter_leaves()
    names = {lib.name for _, lib in leaves.values()}
    if len(names) != 1:
        return _interpreter_samples_by_stack(ctx)
    # one interpreter (the usual case): the threads' samples summed in one compiled pass
    name, = names
    per_thread: dict[int, int] = {}
    ctx.thread_of.sum_into(per_thread, leaves)
    return {tid: Counter({name: n}) for tid, n in per_thread.items()}


def _interpreter_samples_by_stack(ctx: Context) -> dict[int, Counter]:
    """(the same, stack by stack: each thread's interpreters in the order its samples
    meet them, which max() keeps on a tie)"""
    in_runtime: defaultdict[int, Counter] = defaultdict(Counter)
    for sid, (_, lib) in ctx.interpreter_leaves().items():
        for tid, n in ctx.thread_of.get(sid, NO_THREADS).items():
            in_runtime[tid][lib.name] += n
    return in_runtime


def _serialized_threads(ctx: Context, t: dict) -> Serialized | None:
    if ctx.cpus_busy is None or (ctx.cpus_online is not None and ctx.cpus_online < 2):
        return None
    # per thread: its samples, and those whose leaf is in an interpreter, by interpreter
    in_runtime = _interpreter_samples(ctx)
    by_runtime: dict[str, list[tuple[int, int]]] = {}
    for tid, total in ctx.thread_totals().items():
        c = in_runtime.get(tid, Counter())
        if tid in (0, -1) or total < t["thread_min_share"] * ctx.total:
            continue
        runtime, n = max(((k, v) for k, v in c.items() if k), key=lambda kv: kv[1],
                         default=("", 0))
        if runtime and n >= t["thread_interp_share"] * total:
            by_runtime.setdefault(runtime, []).append((tid, total))
    for runtime, threads in sorted(by_runtime.items(), key=lambda kv: -len(kv[1])):
        lock = software.interpreter_lock_for(runtime)
        if lock is None or len(threads) < t["min_threads"]:
            continue
        cpus = ctx.cpus(sum(n for _, n in threads)) or 0.0
        if t["min_cpus"] <= cpus <= t["max_cpus"]:
            tids = {tid for tid, _ in threads}
            stacks = ctx.of_threads(tids)
            return Serialized(lock, sorted(threads, key=lambda x: -x[1]), cpus, stacks)
    return None


def interpreter_lock(ctx: Context, t: dict) -> Finding | None:
    found = serialized_threads(ctx, t)
    if found is None:
        return None
    lock, n, cpus = found.lock, len(found.threads), found.cpus
    in_lock = {sid: w for sid, w in found.stacks.items() if ctx.has(sid, "interp_lock")}
    futex = {sid: w for sid, w in found.stacks.items() if ctx.has(sid, "lock_slow")}
    lock_funcs = [f for f in ctx.top_functions(in_lock, lambda f: "interp_lock" in
                                               ctx.cats[f], 3)
                  if f["share"] >= t["lock_fn_min_share"]]
    futex_share = ctx.share(ctx.samples(futex))
    if lock_funcs:
        seen = ", ".join(f"{f['name']} {pct(f['share'])}" for f in lock_funcs)
        evidence = f"The lock's own functions are in the stacks: {seen}."
    else:
        evidence = ("The lock's functions are not in the stacks (the interpreter and the "
                    "C library have no frame pointers)" +
                    (f", but its futex waits and wake-ups are: {pct(futex_share)} of "
                     f"samples." if futex_share else "."))
    under_load = "load" in ctx.label
    # about one CPU is the lock's limit only on a host with more: a capture that does
    # not say how many CPUs the host had, and shows nothing of the lock itself, cannot
    # tell the lock from the host's own limit (never invent the cause)
    guessed = ctx.cpus_online is None and not lock_funcs and futex_share < t["futex_evidence"]
    per = cpus / n
    names = ctx.thread_names(tid for tid, _ in found.threads)
    summary = (f"{n} {names[0] + ' ' if names else ''}threads run {lock.runtime} code in "
               f"one process and together use {cpus:.2f} CPUs ({per:.2f} each): only the "
               f"thread holding the {lock.short} runs, the others wait for it "
               f"off-CPU, so the process cannot use more than about one CPU however many "
               f"threads it has. {evidence}")
    if under_load:
        summary += " The capture is labelled as under load, so the work queues for the lock."
    if guessed:
        summary += (" The capture does not say how many CPUs the host had, so a host with "
                    "one CPU to spare would look the same: record the CPU column (perf "
                    "script -F +cpu) or upload the perf.data.")
    return Finding(
        "interpreter-lock",
        f"Threads serialized on {lock.name}: {n} threads share {cpus:.2f} CPUs",
        "low" if guessed else "high" if under_load else "medium",
        "high" if lock_funcs or under_load else "medium",
        ctx.share(ctx.samples(found.stacks)), ctx.samples(found.stacks), summary,
        f"{lock.name} lets one thread at a time run interpreted code: threads help "
        f"only while others block in I/O; CPU-bound handlers take turns, and each turn "
        f"costs a wake-up and a context switch. The waiting is off-CPU, so a CPU profile "
        f"shows the work at about one CPU, not the queue.",
        f"{lock.fix} To see the waiting itself, record context switches too: "
        f"`{RECORD_OFF_CPU}`.",
        cpus=cpus,
        evidence={"threads": [{"tid": tid, "samples": s, "cpus": ctx.cpus(s)}
                              for tid, s in found.threads],
                  "functions": lock_funcs, "lock": lock.name,
                  "futex_share": round(futex_share, 4)},
        focus=focus_of(lock_funcs, [tid for tid, _ in found.threads]))


# ---- little CPU under load --------------------------------------------------------------
#: the kinds of knowledge.SYSCALL_KINDS a thread blocks in, worth a medium finding
_BLOCKING_KINDS = ("commits to disk", "lock waits and wake-ups", "sleeping", "disk I/O")
_SERVER_LOCKS = {f"{w.software} {w.short}" for w in software.WAITS}


def _doors(ctx: Context, stacks: dict[int, int]) -> Counter:
    """Where the threads go off-CPU, as far as on-CPU samples show it: the blocking calls
    and waits their samples enter, by kind (a sample counts once)."""
    waits = server_wait_stacks(ctx)
    out: Counter = Counter()
    for sid, w in stacks.items():
        if sid in waits:
            wait = waits[sid][0]
            out[f"{wait.software} {wait.short}"] += w
            continue
        if ctx.has(sid, "commit_io"):
            out["commits to disk"] += w
            continue
        names = [ctx.name(f) for f in ctx.funcs[sid]]
        call = knowledge.syscall_of(names)
        kind = knowledge.syscall_kind(call) if call else None
        if kind in ("lock waits and wake-ups", "waiting for events", "sleeping"):
            out[kind] += w
        elif any(n.startswith(("io_schedule", "blk_mq_get_tag", "folio_wait_bit",
                               "wait_on_page_bit")) for n in names):
            out["disk I/O"] += w
    return out


def off_cpu(ctx: Context, t: dict) -> Finding | None:
    if "load" not in ctx.label or not ctx.total:
        return None
    oc = off_cpu_of(ctx.profile)
    if oc is not None and oc.timed:
        return None  # the switches say where the time goes (blocked_rules)
    if ctx.cpus_busy is None:
        return _cpus_unknown(ctx, t) if ctx.total >= MIN_SAMPLES else None
    if serialized_threads(ctx, INTERPRETER_LOCK_THRESHOLDS) is not None:
        return None  # the interpreter lock says why, and what to record
    _, capacity, active = ctx.thread_use(min_share=t["thread_min_share"])
    used = ctx.cpus_busy
    threads = f"{len(active)} busy thread{'s' if len(active) != 1 else ''}"
    if not ctx.has_threads() and ctx.cpus_online is not None:
        # perf report --header: no threads, but the host's CPUs and the threads' names,
        # one thread each at least
        capacity = Capacity(min(ctx.named_threads(), ctx.cpus_online), ctx.cpus_online)
        threads, active = "threads", [(NO_ID, ctx.total)]
    if not active or used >= t["max_use"] * capacity.most:
        return None
    # little of the CPUs the threads could use on the largest host the capture allows,
    # not on the smallest: the host's CPU count decides, and the capture does not say it
    unsure = used >= t["max_use"] * capacity.fewest
    if unsure and ctx.oversubscribed(len(ctx.busy_threads(t["thread_min_cpus"])),
                                     t["saturated"]) is None:
        return None  # scheduling-pressure says what the count would decide
    doors, where, blocking = _where_they_wait(ctx, t)
    tids = [tid for tid, _ in active if tid != NO_ID]
    evidence = {"threads": [{"tid": tid, "samples": n, "cpus": ctx.cpus(n)}
                            for tid, n in active[:16] if tid != NO_ID],
                "doors": [{"kind": k, "samples": v, "share": round(ctx.share(v), 4)}
                          for k, v in doors.most_common(6)],
                "capacity": capacity.fewest if capacity.known else list(capacity),
                "functions": []}
    # the samples it rests on: the blocking calls the threads were seen entering
    door_n = sum(doors.values())
    if unsure:
        return Finding(
            "off-cpu", f"Under load, {used:.2f} CPUs busy: off-CPU time if the host had "
            f"more than {_cpus(capacity.fewest)}, which the capture does not say",
            "low", "low", ctx.share(door_n), door_n,
            f"The capture is labelled as under load; its {threads} used {used:.2f} CPUs. "
            f"{format_facts.cpu_count_unknown(ctx.profile)}: with {_cpus(capacity.fewest)} "
            f"that is {pct(used / capacity.fewest)} of what they could use; with "
            f"{capacity.most} or more, {pct(used / capacity.most)}, and most of their "
            f"time they would wait, which a CPU profile does not sample. {where}",
            "Time a request spends blocked adds to its latency and caps the throughput, "
            "yet uses no CPU; whether there is such time depends on the CPUs the threads "
            "had.",
            f"{format_facts.upload_advice(ctx.profile)}, and the finding can say whether "
            f"the threads wait. {_RECORD_WAITS}",
            cpus=used, evidence=evidence, focus=focus_of([], tids))
    cpu_text = ("" if ctx.cpus_online is None else f" of the {ctx.cpus_online} CPUs perf saw")
    of_them = (f"{pct(used / capacity.fewest)} of what they could use" if capacity.known
               else f"at most {pct(used / capacity.fewest)} of what they could use")
    return Finding(
        "off-cpu", f"Under load, yet only {used:.2f} CPUs busy: the time goes off-CPU",
        "medium" if blocking else "low", "medium", ctx.share(door_n), door_n,
        f"The capture is labelled as under load, but its {threads} used {used:.2f} "
        f"CPUs{cpu_text}, {of_them}: most of their time they wait, which a CPU profile "
        f"does not sample. {where}",
        "Time a request spends blocked (on a lock, the disk, another service, a full run "
        "queue) adds to its latency and caps the throughput, yet uses no CPU, so CPU "
        "flame graphs do not show it.",
        _RECORD_WAITS, cpus=used, evidence=evidence, focus=focus_of([], tids))


_RECORD_WAITS = (f"Record where the threads wait, with context switches and their stacks: "
                 f"`{RECORD_OFF_CPU}` (or `{RECORD_SCHED}`, then `perf sched timehist`), "
                 f"and upload that capture: its sched_switch samples are the off-CPU "
                 f"time, by stack.")


def _where_they_wait(ctx: Context, t: dict) -> tuple[Counter, str, bool]:
    """(the blocking calls the busy samples enter, by kind; the sentence saying where
    the threads wait as far as they show; whether a blocking call stands out)."""
    doors = _doors(ctx, ctx.busy_stacks())
    kind, n = doors.most_common(1)[0] if doors else ("", 0)
    # futex calls are mutexes and condition variables alike: a pool's threads waiting
    # for work enter them too, so they are no sign of a blocking cost by themselves
    # (contended locks have their own findings, lock-contention and spin-wait, which
    # name the lock; here they would only repeat them)
    contended = kind != "lock waits and wake-ups"
    blocking = bool(kind) and (kind in _BLOCKING_KINDS or kind in _SERVER_LOCKS) and \
        ctx.share(n) >= t["door_min_share"] and contended
    listed = ", ".join(f"{k} {pct(ctx.share(v))}" for k, v in doors.most_common(3))
    if blocking:
        where = (f"The blocking calls the threads enter, as far as their on-CPU samples "
                 f"show: {listed}.")
    elif kind == "waiting for events":
        where = (f"The calls they enter are mostly event waits ({listed}): the service "
                 f"waits for requests, so the load generator, the network or a backend "
                 f"it calls may be the limit, not this process.")
    else:
        where = ("No blocking call stands out in the samples: the threads may wait for a "
                 "CPU (other work on the host, more threads than cores) or block in calls "
                 "too short to sample" + (f" ({listed})" if listed else "") + ".")
    return doors, where, blocking


def _cpus_unknown(ctx: Context, t: dict) -> Finding:
    """Under load, in a capture whose CPUs busy are unknown (no duration in perf report
    text, no frequency for a non-clock event in perf script text): how much of their
    time the threads ran is unknown; where their samples enter blocking calls is not,
    and is said."""
    doors, where, _ = _where_they_wait(ctx, t)
    door_n = sum(doors.values())
    return Finding(
        "off-cpu", "Under load: whether the threads wait off-CPU, the capture cannot say",
        "low", "low", ctx.share(door_n), door_n,
        f"The capture is labelled as under load. "
        f"{format_facts.busy_unknown(ctx.profile, ctx.event_id)[1]}, so how many CPUs the "
        f"threads used, and how long they waited, is unknown. {where}",
        "Time a request spends blocked adds to its latency and caps the throughput, yet "
        "uses no CPU, so CPU flame graphs do not show it.",
        f"{format_facts.upload_advice(ctx.profile)}, and the finding can say whether the "
        f"threads wait. {_RECORD_WAITS}",
        evidence={"doors": [{"kind": k, "samples": v, "share": round(ctx.share(v), 4)}
                            for k, v in doors.most_common(6)], "functions": []},
        focus={})


def _cpus(n: int) -> str:
    return "1 CPU" if n == 1 else f"{n} CPUs"
