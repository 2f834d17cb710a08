"""The rules: each a small unit with an id, a title, named thresholds and an evaluate
function returning a Finding or None. RULES is the one explicit list the engine runs."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..profile import KERNEL, UNKNOWN, Profile
from . import knowledge
from .context import Context

SEVERITY_RANK = {"high": 3, "medium": 2, "low": 1, "info": 0}


@dataclass
class Finding:
    rule: str
    title: str
    severity: str  # high | medium | low | info
    confidence: str  # high | medium | low
    share: float  # of the capture's samples
    samples: int
    summary: str
    why: str
    fix: str
    cpus: float | None = None
    evidence: dict = field(default_factory=dict)
    focus: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        funcs = self.evidence.get("functions", [])
        return {"rule": self.rule, "title": self.title, "severity": self.severity,
                "confidence": self.confidence, "share": round(self.share, 4),
                "samples": self.samples,
                "cpus": None if self.cpus is None else round(self.cpus, 2),
                "summary": self.summary, "functions": [f["name"] for f in funcs],
                "evidence": self.evidence, "why": self.why, "fix": self.fix,
                "focus": self.focus}


@dataclass
class Rule:
    id: str
    title: str
    evaluate: Callable[[Context, dict], Finding | None]
    thresholds: dict


def _severity(share: float, t: dict) -> str:
    return "high" if share >= t["high"] else "medium" if share >= t["medium"] else "low"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cpus_text(c: float | None) -> str:
    return "" if c is None else f", about {c:.1f} CPUs"


def _focus(funcs: list[dict], tids=()) -> dict:
    return {"functions": [{"id": f["id"], "name": f["name"]} for f in funcs[:3]],
            "threads": sorted(t for t in tids if t is not None)}


# ---- a capture read in part -------------------------------------------------------------
def damaged_capture(profile: Profile) -> Finding:
    """The one finding of a capture whose samples were read in part (meta.damaged): the
    part that is missing may hold exactly what a finding would be about, so no rule runs
    on the rest, and "idle" or "no samples" is never said of it."""
    return Finding(
        "damaged-capture", "Damaged capture: part of it could not be read", "high", "high",
        0.0, len(profile), profile.meta.damaged or "",
        "Shares and CPU use computed without the missing part can hide a problem or "
        "invent one, so no other finding is drawn from this capture; the flame graph and "
        "tables show the samples that were read.",
        "Upload the capture again from the host that recorded it (its size there, `ls -l "
        "perf.data`, should match the upload), or record it again and let perf record "
        "finish (stop it with Ctrl-C or its own duration, not kill -9).",
        evidence={"damaged": profile.meta.damaged, "samples_read": len(profile)})


# ---- CPU use ------------------------------------------------------------------------------
def cpu_use(ctx: Context, t: dict) -> Finding | None:
    if ctx.total == 0:
        return Finding("cpu-use", "Idle: no samples, no CPU used", "info", "high", 0.0, 0,
                       "The process did not run on a CPU while perf recorded.", "", "",
                       cpus=0.0)
    busy = ctx.cpus_busy
    app = ctx.matching(lambda sid: any(ctx.app.get(f) for f in ctx.funcs[sid]))
    app_share = ctx.share(ctx.samples(app))
    resolved = any(ctx.profile.functions[f].resolved for fs in ctx.funcs.values() for f in fs)
    idle_label = "idle" in ctx.label
    # "no application work": hardly any application frames, and the threads busy with
    # synchronization instead (lost frames alone must not make a busy service look idle)
    waiting = ctx.matching(lambda sid: any(ctx.has(sid, c) for c in
                                           ("lock", "yield_poll", "runtime_spin", "scheduler")))
    no_work = resolved and app_share < t["app_work"] and \
        ctx.share(ctx.samples(waiting)) >= t["waiting"]
    if busy is not None and busy >= t["busy_cpus"] and (idle_label or no_work):
        reason = "labelled idle" if idle_label else \
            f"only {_pct(app_share)} of samples are in application code"
        return Finding(
            "cpu-use", f"Idle, yet {busy:.2f} CPUs busy", "high", "high" if idle_label
            else "medium", 1.0, ctx.total,
            f"The capture is {reason}, but it kept {busy:.2f} CPUs busy "
            f"({busy * 100:.0f}% CPU).",
            "A service with no work to do should use almost no CPU; cores spent here are "
            "taken from every other process on the host and inflate cost and latency.",
            "Look at the findings below for what the threads do instead of sleeping.",
            cpus=busy, evidence={"functions": ctx.top_functions(ctx.weights, lambda f: True)},
            focus={})
    text = "unknown" if busy is None else f"{busy:.2f}"
    return Finding("cpu-use", f"{text} CPUs busy", "info", "high", 1.0, ctx.total,
                   f"{ctx.total} samples; {text} CPUs busy on average.", "", "", cpus=busy)


# ---- spinning and locks ----------------------------------------------------------------------
def spin_wait(ctx: Context, t: dict) -> Finding | None:
    sync_cats = ("lock", "yield_poll", "runtime_spin")
    sync = ctx.matching(lambda sid: any(ctx.has(sid, c) for c in sync_cats))
    per_thread = ctx.thread_totals()
    sync_threads = ctx.threads(sync)
    spinners = [tid for tid, n in sync_threads.items()
                if per_thread[tid] and n / per_thread[tid] >= t["thread_sync_share"]
                and per_thread[tid] >= t["thread_min_share"] * ctx.total]
    if not spinners:
        return None
    spin_stacks = {sid: w for sid, w in sync.items()
                   if set(ctx.thread_of.get(sid, {})) & set(spinners)}
    samples = ctx.samples(spin_stacks)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    # the application code those threads run (frame-pointer stacks often lose the caller
    # of a libc lock function, so look at all of the threads' samples, not only these)
    drivers = ctx.app_functions(spin_stacks) or ctx.app_functions(ctx.same_threads(spin_stacks))
    runtime = ctx.top_functions(spin_stacks, lambda f: "runtime_spin" in ctx.cats[f])
    prims = ctx.top_functions(spin_stacks, lambda f: bool(ctx.cats[f] & set(sync_cats)))
    cpus = ctx.cpus(samples)
    who = drivers[0]["name"] if drivers else (runtime[0]["dso"] if runtime else
                                               f"{len(spinners)} threads")
    if runtime and not drivers:
        fix = ("The thread-pool runtime spins while it waits for work: make it sleep "
               "sooner (OpenMP: OMP_WAIT_POLICY=passive, GOMP_SPINCOUNT=0 or "
               "KMP_BLOCKTIME=0; TBB: fewer arenas or a global_control on threads), or use "
               "fewer threads than cores.")
    else:
        fix = (f"Make {who} block while there is nothing to do: wait on a condition "
               f"variable (or semaphore/futex) instead of locking and unlocking in a loop, "
               f"and wake the workers when work arrives (notify_one per queued job). If it "
               f"must poll, back off with a sleep.")
    return Finding(
        "spin-wait", f"Threads spin instead of waiting: {who} burns"
        f"{_cpus_text(cpus).replace(', about', '')}", _severity(share, t),
        "high" if drivers or runtime else "medium", share, samples,
        f"{len(spinners)} thread(s) spend {_pct(share)} of all samples{_cpus_text(cpus)} "
        f"taking and releasing locks, yielding or polling, around {who}.",
        "A thread that loops on lock/unlock, trylock, sched_yield or a zero-timeout poll "
        "stays on the CPU the whole time it waits: it burns a core doing nothing, and "
        "the lock traffic slows the threads that have real work.",
        fix, cpus=cpus,
        evidence={"functions": drivers + prims[:4] + runtime[:2],
                  "stacks": ctx.heaviest_stacks(spin_stacks),
                  "threads": [{"tid": tid, "samples": per_thread[tid]} for tid in spinners]},
        focus=_focus(drivers or prims, spinners))


def lock_contention(ctx: Context, t: dict) -> Finding | None:
    slow = ctx.matching(lambda sid: ctx.has(sid, "lock_slow"))
    samples = ctx.samples(slow)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    prims = ctx.top_functions(slow, lambda f: "lock_slow" in ctx.cats[f])
    takers = ctx.app_functions(slow) or ctx.app_functions(ctx.same_threads(slow))
    who = ", ".join(f["name"] for f in takers[:2]) or "code whose frames are not in the stacks"
    return Finding(
        "lock-contention", "Lock contention: threads wait for and wake each other",
        _severity(share, t), "high", share, samples,
        f"{_pct(share)} of samples are in lock slow paths ({prims[0]['name']} ...), "
        f"taken by {who}.",
        "When a lock is contended, threads go to the kernel (futex wait/wake) to sleep and "
        "to be woken: each handoff costs system calls and context switches, and the work "
        "behind the lock runs one thread at a time.",
        "Hold the lock for less (move work out of the critical section), split it "
        "(per-shard or per-thread state), or replace it (atomics, lock-free queues, "
        "batching); check that threads are not contending only because they spin.",
        cpus=ctx.cpus(samples),
        evidence={"functions": prims[:5], "takers": takers,
                  "stacks": ctx.heaviest_stacks(slow)},
        focus=_focus(takers or prims))


# ---- kernel, I/O, memory ----------------------------------------------------------------------
def kernel_heavy(ctx: Context, t: dict) -> Finding | None:
    kernel = ctx.matching(lambda sid: ctx.kernel_leaf(sid) and not ctx.is_idle_task(sid))
    busy = ctx.matching(lambda sid: not ctx.is_idle_task(sid))
    busy_n = ctx.samples(busy)
    samples = ctx.samples(kernel)
    share = samples / busy_n if busy_n else 0.0
    if share < t["min_share"]:
        return None
    by_syscall: Counter = Counter()
    for sid, w in kernel.items():
        names_ = [ctx.name(f) for f in ctx.funcs[sid]]
        name = knowledge.syscall_of(names_)
        if name is None and names_ and (names_[0] in knowledge.SYSCALL_DISPATCH or
                                        names_[0].startswith("entry_SYSCALL")):
            name = "system call entry and exit"
        if name is None:
            name = "page faults" if any("page_fault" in n for n in names_) else \
                "interrupts" if any(n.startswith(("asm_sysvec", "asm_common_interrupt",
                                                  "irq_exit", "__irq")) for n in names_) \
                else "other kernel paths"
        by_syscall[name] += w
    paths = ctx.top_functions(kernel, lambda f: ctx.profile.mappings[
        ctx.profile.functions[f].mapping_id].kind == KERNEL and
        ctx.profile.functions[f].resolved)
    top = ", ".join(f"{k} {_pct(v / busy_n)}" for k, v in by_syscall.most_common(4))
    return Finding(
        "kernel-heavy", "Most of the CPU time is spent in the kernel", _severity(share, t),
        "high", share, samples,
        f"{_pct(share)} of the busy samples run kernel code: {top}.",
        "Time in the kernel is time the application asked for through system calls (or "
        "suffered through faults and interrupts); a high share usually means too many "
        "small calls: tiny reads/writes, futex ping-pong, polling, page faults.",
        "Find the system call with the largest share below and its callers in the "
        "flame graph: batch or buffer it, avoid it in loops, or remove the polling.",
        cpus=ctx.cpus(samples),
        evidence={"syscalls": [{"name": k, "samples": v, "share": round(v / busy_n, 4)}
                               for k, v in by_syscall.most_common(8)],
                  "functions": paths, "stacks": ctx.heaviest_stacks(kernel)},
        focus=_focus(paths))


def _category_rule(rule_id: str, category: str, title: str, why: str, fix: str):
    def evaluate(ctx: Context, t: dict) -> Finding | None:
        hits = ctx.matching(lambda sid: ctx.has(sid, category))
        samples = ctx.samples(hits)
        share = ctx.share(samples)
        if share < t["min_share"]:
            return None
        funcs = ctx.top_functions(hits, lambda f: category in ctx.cats[f])
        callers = ctx.app_functions(hits)
        if t.get("needs_app_frames") and not callers and share < t["high"]:
            return None
        where = f" under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
        return Finding(
            rule_id, title, _severity(share, t), "high" if callers else "medium", share,
            samples,
            f"{_pct(share)} of samples{_cpus_text(ctx.cpus(samples))} are in "
            f"{', '.join(f['name'] for f in funcs[:3])}{where}.",
            why, fix, cpus=ctx.cpus(samples),
            evidence={"functions": funcs, "callers": callers,
                      "stacks": ctx.heaviest_stacks(hits)},
            focus=_focus(callers or funcs))
    return evaluate


sync_io = _category_rule(
    "sync-io", "sync_io", "Synchronous writes and logging on the hot path",
    "Each write, flush or fsync made by the thread doing the work waits for the kernel "
    "and the file system; logging a line per request with a flush turns every request "
    "into system calls.",
    "Buffer the output and flush in the background (an asynchronous logger, a dedicated "
    "writer thread), lower the log level on hot paths, and avoid fflush/fsync per line.")
allocator_churn = _category_rule(
    "allocator-churn", "allocator", "Allocator churn: malloc and free on the hot path",
    "Allocating and freeing in a loop costs allocator bookkeeping, lock traffic between "
    "threads and, for large or fresh memory, page faults and zeroing by the kernel.",
    "Reuse buffers and objects (pools, arenas, reserve() up front), avoid temporary "
    "copies, or use an allocator built for the pattern (jemalloc, mimalloc, tcmalloc).")
memory_copy = _category_rule(
    "memory-copy", "copy", "Memory copying dominates",
    "Copying memory does no useful work of its own and is bound by memory bandwidth; "
    "large copies on the hot path also evict caches.",
    "Pass by reference or view (spans, string_view, move semantics), copy once instead of "
    "per stage, or hand buffers over instead of duplicating them.")


def scheduling_pressure(ctx: Context, t: dict) -> Finding | None:
    busy = ctx.busy_threads(t["thread_min_cpus"])
    cs = ctx.matching(lambda sid: ctx.has(sid, "scheduler") and not ctx.is_idle_task(sid))
    cs_share = ctx.share(ctx.samples(cs))
    cpus_n = ctx.cpus_online
    over = cpus_n is not None and len(busy) > cpus_n
    if not over and cs_share < t["min_cs_share"]:
        return None
    tids = [tid for tid, _ in busy]
    samples = ctx.samples(ctx.weights) if over else ctx.samples(cs)
    share = ctx.share(samples)
    why = ("More threads want to run than there are CPUs: the scheduler time-slices them, "
           "so each request waits for a core, caches are cold after every switch, and "
           "latency grows with the queue.")
    summary = (f"{len(busy)} busy threads compete for {cpus_n} CPUs" if over else
               f"{_pct(cs_share)} of samples are in scheduler paths")
    return Finding(
        "scheduling-pressure", "Scheduling pressure: more runnable threads than CPUs"
        if over else "Scheduling pressure: frequent context switches",
        "medium" if over else _severity(cs_share, t), "high" if over else "medium",
        share, samples, summary + ".", why,
        "Size thread pools to the CPUs the service may use (cgroup quota, not the host's "
        "core count), avoid a thread per request, and batch work handed between threads.",
        cpus=ctx.cpus_busy,
        evidence={"threads": [{"tid": tid, "samples": n, "cpus": ctx.cpus(n)}
                              for tid, n in busy[:16]],
                  "functions": ctx.top_functions(cs, lambda f: "scheduler" in ctx.cats[f])},
        focus=_focus([], tids))


def interpreter_bound(ctx: Context, t: dict) -> Finding | None:
    hits = ctx.matching(lambda sid: ctx.has(sid, "interpreter"))
    samples = ctx.samples(hits)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    funcs = ctx.top_functions(hits, lambda f: "interpreter" in ctx.cats[f])
    name = funcs[0]["name"]
    lang = "python" if "Py" in name else "java" if name == "Interpreter" else \
        "node" if "Builtins" in name else "other"
    return Finding(
        "interpreter-bound", "Time goes to a language interpreter", _severity(share, t),
        "high", share, samples,
        f"{_pct(share)} of samples run in {name}: perf sees the interpreter, not the "
        f"functions of the program it runs.",
        "Interpreted code costs many native instructions per language-level operation; "
        "the hot spots are in the program's functions, which native stacks do not show.",
        f"To see which functions are hot: {knowledge.INTERPRETER_ADVICE[lang]}. Then move "
        f"the hottest loops to vectorized or native code.",
        cpus=ctx.cpus(samples),
        evidence={"functions": funcs, "stacks": ctx.heaviest_stacks(hits)},
        focus=_focus(funcs))


def missing_symbols(ctx: Context, t: dict) -> Finding | None:
    """Samples whose own frame (leaf) has no name, per DSO."""
    unnamed: Counter = Counter()
    for sid, w in ctx.weights.items():
        fids = ctx.funcs[sid]
        if fids and not ctx.profile.functions[fids[0]].resolved:
            unnamed[ctx.profile.functions[fids[0]].mapping_id] += w
    rows = []
    for mid, n in unnamed.most_common():
        share = ctx.share(n)
        if share < t["min_share"]:
            break
        m = ctx.profile.mappings[mid]
        advice = ("a copy of /proc/kallsyms from the recording host (same boot)"
                  if m.kind == KERNEL else "the perf-PID.map of the JIT" if m.kind == "jit"
                  else "/proc/PID/maps of the process" if m.kind == UNKNOWN else
                  f"{m.path}" + (f" with build-id {m.build_id}" if m.build_id else "") +
                  " or its debug file")
        rows.append({"dso": m.path, "build_id": m.build_id or None, "samples": n,
                     "share": round(share, 4), "upload": advice})
    if not rows:
        return None
    samples = sum(r["samples"] for r in rows)
    share = ctx.share(samples)
    names = ", ".join(f"{r['dso']} ({_pct(r['share'])})" for r in rows[:3])
    return Finding(
        "missing-symbols", "Frames without names hide where the time goes",
        _severity(share, t), "high", share, samples,
        f"{_pct(share)} of samples stop in code without symbols: {names}.",
        "Without symbols a frame is only an address: the flame graph cannot say which "
        "function burns the CPU, and the other findings may miss it.",
        "Upload " + "; ".join(f"for {r['dso']}: {r['upload']}" for r in rows[:3]) +
        ". A `perf archive` of the capture collects what is needed in one file.",
        evidence={"dsos": rows, "functions": []}, focus={})


def _t(**kw) -> dict:
    return {"high": 0.30, "medium": 0.10, **kw}


RULES: list[Rule] = [
    Rule("cpu-use", "CPU use", cpu_use, {"busy_cpus": 0.25, "app_work": 0.10, "waiting": 0.5}),
    Rule("spin-wait", "Spin-wait / busy-polling", spin_wait,
         _t(thread_sync_share=0.5, thread_min_share=0.05, min_share=0.10)),
    Rule("lock-contention", "Lock contention", lock_contention, _t(min_share=0.10)),
    Rule("kernel-heavy", "Kernel and syscall heavy", kernel_heavy,
         _t(min_share=0.30, high=0.50)),
    Rule("sync-io", "Synchronous I/O and logging", sync_io,
         _t(min_share=0.05, needs_app_frames=True)),
    Rule("allocator-churn", "Allocator churn", allocator_churn, _t(min_share=0.10)),
    Rule("memory-copy", "Memory copying", memory_copy, _t(min_share=0.10)),
    Rule("scheduling-pressure", "Scheduling pressure", scheduling_pressure,
         _t(thread_min_cpus=0.1, min_cs_share=0.10)),
    Rule("interpreter-bound", "Interpreter-bound", interpreter_bound, _t(min_share=0.30,
                                                                           high=0.50)),
    Rule("missing-symbols", "Missing symbols", missing_symbols, _t(min_share=0.10)),
]

