"""The rules: each a small unit with an id, a title, named thresholds and an evaluate
function returning a Finding or None. RULES is the one explicit list the engine runs."""
from __future__ import annotations

from collections import Counter
from itertools import compress

import numpy as np

from .. import cpu
from ..aggregate import stack_walks
from ..identity import library_identity
from ..profile import KERNEL, NO_ID, UNKNOWN, Profile
from ..profile_columns import WeightDict, weight_arrays
from . import (blocked_rules, build_rules, code_rules, format_facts, hot_spots, io_rules,
               knowledge, search_rules, setup_rules, software, stack_rules, thread_churn,
               wait_rules)
from .context import APP, Context
from .evidence import MIN_SAMPLES
from .finding import (SEVERITY_RANK, Finding, Rule, cpus_text, focus_of, pct,
                      severity_of)

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
    if ctx.total == 0 and ctx.cpus_busy:  # scheduler events only: CPU from the switches
        return Finding("cpu-use", f"{ctx.cpus_busy:.2f} CPUs busy", "info", "high", 1.0, 0,
                       f"{ctx.cpus_busy:.2f} CPUs busy on average, from the context "
                       f"switches (the capture has no CPU samples to say where).", "", "",
                       cpus=ctx.cpus_busy)
    if ctx.total == 0:
        return Finding("cpu-use", "Idle: no samples, no CPU used", "info", "high", 0.0, 0,
                       "The process did not run on a CPU while perf recorded.", "", "",
                       cpus=0.0)
    busy = ctx.cpus_busy
    if ctx.total < MIN_SAMPLES:  # (a CPU figure from a few samples is noise)
        text = "unknown" if busy is None else f"{busy:.2f}"
        return Finding("cpu-use", f"{ctx.total} samples: too few to say how busy",
                       "info", "low", 1.0, ctx.total,
                       f"{ctx.total} samples ({text} CPUs busy by their count): too few "
                       f"for any figure of CPU use or any finding; record longer or at a "
                       f"higher frequency (perf record -F 999) to see more.", "", "",
                       cpus=busy)
    app = ctx.select(any_of=(APP,))
    app_share = ctx.share(ctx.samples(app))
    resolved = bool(ctx.named)  # (a named function in the stacks)
    idle_label = "idle" in ctx.label
    # "no application work": hardly any application frames, and the threads busy with
    # synchronization instead (lost frames alone must not make a busy service look idle)
    waiting = ctx.select(any_of=("lock", "yield_poll", "runtime_spin", "scheduler"))
    no_work = resolved and app_share < t["app_work"] and \
        ctx.share(ctx.samples(waiting)) >= t["waiting"]
    # (a capture its user calls busy or under load is not idle, whatever its threads
    # do: spinning and waiting are the other rules' findings)
    loaded = any(w in ctx.label for w in ("load", "busy"))
    if busy is not None and busy >= t["busy_cpus"] and (idle_label or no_work and not loaded):
        reason = "labelled idle" if idle_label else \
            f"only {pct(app_share)} of samples are in application code"
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
    if busy is None:
        return _busy_unknown(ctx)
    return Finding("cpu-use", f"{busy:.2f} CPUs busy", "info", "high", 1.0, ctx.total,
                   f"{ctx.total} samples; {busy:.2f} CPUs busy on average.", "", "", cpus=busy)


def _busy_unknown(ctx: Context) -> Finding:
    """The headline of a capture without a duration (perf report text): the CPU time
    its clock event states, and what is missing to make it CPUs."""
    secs = cpu.cpu_seconds(ctx.profile, ctx.event_id)
    spent = f"{secs:.2f} s of CPU time" if secs else "no figure of CPU time"
    missing, sentence = format_facts.busy_unknown(ctx.profile, ctx.event_id)
    return Finding(
        "cpu-use", f"CPUs busy unknown: the capture has no {missing}", "info", "high", 1.0,
        ctx.total,
        f"{ctx.total} samples, {spent}. {sentence}, so how many CPUs were busy is "
        f"unknown, and findings that need it say so.",
        "", "")


# ---- spinning and locks -------------------------------------------------------------
def spin_wait(ctx: Context, t: dict) -> Finding | None:
    """Threads whose samples are mostly synchronization (lock/unlock, yield, polling),
    plus every sample a thread-pool runtime spends in its own spin loop (software.py
    SPIN_POOLS: OpenBLAS's blas_thread_server, libgomp's do_spin...), which is waiting
    whatever share of its thread it takes."""
    sync_cats = ("lock", "yield_poll", "runtime_spin")
    collecting = hot_spots.collector_stacks(ctx)
    sync = {sid: w for sid, w in ctx.select(any_of=sync_cats).items()
            if sid not in collecting}
    per_thread = ctx.thread_totals()
    sync_threads = ctx.threads(sync)
    # a thread spins only if it burns a CPU doing so: one that polls now and then (an
    # event loop's selector lock, a pool's idle check) and sleeps in between is waiting
    # (a thread-pool runtime's own wait code spins by nature, however little CPU each
    # of its oversubscribed threads gets)
    pool_threads = ctx.threads(ctx.having("runtime_spin"))
    spinners = [tid for tid, n in sync_threads.items()
                if per_thread[tid] and n / per_thread[tid] >= t["thread_sync_share"]
                and per_thread[tid] >= t["thread_min_share"] * ctx.total
                and (ctx.cpus(per_thread[tid]) is None or
                     ctx.cpus(per_thread[tid]) >= t["thread_min_cpus"] or
                     pool_threads[tid] >= t["thread_sync_share"] * per_thread[tid])]
    loops = ctx.select(leaf_any=("spin_loop",))
    if not spinners and not loops:
        return None
    spinning = set(spinners)
    spin_stacks = {sid: w for sid, w in sync.items()
                   if ctx.thread_of.on_any(sid, spinning)}
    spin_stacks.update(loops)
    samples = ctx.samples(spin_stacks)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    spinners = sorted(set(spinners) | set(ctx.threads(loops)) - {NO_ID},
                      key=lambda tid: -per_thread[tid])
    # the application code those threads run (frame-pointer stacks often lose the caller
    # of a libc lock function, so look at all of the threads' samples, not only these)
    drivers = ctx.app_functions(spin_stacks) or \
        ctx.app_functions(ctx.same_threads(spin_stacks))
    runtime = ctx.top_functions(spin_stacks, lambda f: "runtime_spin" in ctx.cats[f])
    prims = ctx.top_functions(spin_stacks, lambda f: bool(ctx.cats[f] & set(sync_cats)))
    loop_funcs = ctx.top_functions(loops, lambda f: "spin_loop" in ctx.cats[f], 3)
    pool = software.spin_pool_of(loop_funcs[0]["name"], loop_funcs[0]["dso"]) \
        if loop_funcs else None
    cpus = ctx.cpus(samples)
    # a stripped pool runtime (a wheel's bundled libgomp) is known by its file: when its
    # code holds most of the spinning, the spinning is the pool's, whoever called it
    in_pool = ctx.samples(ctx.select(any_of=("runtime_spin",))) if runtime else 0
    by_file = software.spin_pool_of_file(runtime[0]["dso"]) if runtime else None
    if pool is None and by_file is not None and in_pool * 2 >= samples:
        pool, loop_funcs = by_file, runtime[:2]
        loops = spin_stacks
    plural = False
    if pool is not None and ctx.samples(loops) * 2 >= samples:
        names = ", ".join(f["name"] for f in loop_funcs[:2])
        who = f"{pool.name}'s thread pool ({names})"
        fix = pool.fix
    else:
        n = len(spinners)
        who = drivers[0]["name"] if drivers else (runtime[0]["dso"] if runtime else
                                                   f"{n} thread{'s' if n != 1 else ''}"
                                                   if ctx.has_threads() else "the threads")
        plural = not drivers and not runtime and (n != 1 or not ctx.has_threads())
        # (the pool's own wait code holding most of the spinning: its threads wait for
        # each other, and the fix is the pool's, whatever application code it runs)
        if runtime and (not drivers or in_pool * 2 >= samples):
            fix = ("The thread-pool runtime spins while it waits for work or for its other "
                   "threads: make it sleep sooner (OpenMP: OMP_WAIT_POLICY=passive, "
                   "GOMP_SPINCOUNT=0 or KMP_BLOCKTIME=0; TBB: fewer arenas or a "
                   "global_control on threads), and give it fewer threads than the CPUs "
                   "the process really gets (a thread preempted at a barrier makes every "
                   "other one spin until it runs again).")
        else:
            fix = (f"Make {who if drivers else 'the spinning code'} block while there is "
                   f"nothing to do: wait on a condition variable (or semaphore/futex) "
                   f"instead of locking and unlocking in a loop, and wake the workers when "
                   f"work arrives (notify_one per queued job). If it must poll, back off "
                   f"with a sleep.")
    how = ("taking and releasing locks, yielding or polling" if not loop_funcs else
           "in the spin loops of the pool, waiting for work or for each other"
           if len(loops) == len(spin_stacks) else
           "in spin loops, taking and releasing locks, yielding or polling")
    # most of it a waiting call that returns at once (epoll_wait with a zero timeout
    # called again and again): the thread never sleeps, and the fix is to wait in it
    polls = ctx.top_functions(
        spin_stacks, lambda f: bool(knowledge.POLL_CALL.match(ctx.name(f))), 3)
    if pool is None and polls and polls[0]["samples"] * 2 >= samples:
        call = knowledge.POLL_CALL.match(polls[0]["name"]).group("call")
        how = (f"calling {call}() in a loop that returns at once, never sleeping "
               f"(polling with a zero timeout)")
        fix = (f"Make {who if drivers else 'the polling code'} wait in {call}() until "
               f"something is ready: a timeout of -1, or until the next timer is due, "
               f"instead of 0 (a zero timeout is for draining what is already ready). A "
               f"thread that must poll a device or a queue should sleep between polls.")
    return Finding(
        "spin-wait", f"Threads spin instead of waiting: {who} burn{'' if plural else 's'}"
        f"{cpus_text(cpus).replace(', about', '') or ' CPU time'}", severity_of(share, t),
        "high" if drivers or runtime or pool else "medium", share, samples,
        (f"{len(spinners)} thread(s) spend" if ctx.has_threads() else
         f"Its threads ({format_facts.format_name(ctx.profile)} does not say which) "
         f"spend") + f" {pct(share)} of all samples{cpus_text(cpus)} "
        f"{how}" + (f", around {who}." if drivers or runtime or pool else "."),
        "A thread that loops on lock/unlock, trylock, sched_yield or a zero-timeout poll "
        "stays on the CPU the whole time it waits: it burns a core doing nothing, and "
        "the lock traffic slows the threads that have real work.",
        fix, cpus=cpus,
        evidence={"functions": drivers + loop_funcs + prims[:4] + runtime[:2],
                  "stacks": ctx.heaviest_stacks(spin_stacks),
                  "threads": [{"tid": tid, "samples": per_thread[tid]} for tid in spinners]},
        focus=focus_of(ctx.on_stacks(drivers, spin_stacks) or loop_funcs or prims, spinners))


def lock_contention(ctx: Context, t: dict) -> Finding | None:
    """pthread/std::mutex (futex) slow paths, under the application frame that takes the
    lock (not condition variables' and semaphores' futex calls: a handoff); waits inside
    a server's own locks or an interpreter lock are left to lock-wait and
    interpreter-lock, which can name them."""
    named = wait_rules.server_wait_stacks(ctx)
    # a futex under a condition variable or a semaphore is a thread handing work to
    # another (an acceptor waking the thread that serves a connection), not contention,
    # unless a mutex's own slow path is on the stack too (the condvar's mutex taken back)
    slow = {sid: w for sid, w in ctx.select(any_of=("lock_slow",),
                                            none_of=("interp_lock",)).items()
            if sid not in named and (not ctx.has(sid, "handoff") or
                                     ctx.has(sid, "mutex_slow"))}
    samples = ctx.samples(slow)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    prims = ctx.top_functions(slow, lambda f: "lock_slow" in ctx.cats[f])
    takers = ctx.app_functions(slow) or ctx.app_functions(ctx.same_threads(slow))
    who = ", ".join(f["name"] for f in takers[:2]) or "code whose frames are not in the stacks"
    inside, guarded = _libc_lock_users(ctx, slow, prims)
    fix = ("Hold the lock for less (move work out of the critical section), split it "
           "(per-shard or per-thread state), or replace it (atomics, lock-free queues, "
           "batching); check that threads are not contending only because they spin.")
    if inside:
        fix = f"Give each thread its own: {guarded}. " + fix
    return Finding(
        "lock-contention", "Lock contention: threads wait for and wake each other",
        severity_of(share, t), "high", share, samples,
        f"{pct(share)} of samples are in lock slow paths ({prims[0]['name']} ...), "
        f"taken by {who}." + (
            f" The lock is the C library's own (a private lock): of what these threads "
            f"run, {', '.join(f['name'] for f in inside[:2])} "
            f"{'takes' if len(inside[:2]) == 1 else 'take'} one per call, "
            f"guarding {guarded.split(' (')[0]}." if inside else ""),
        "When a lock is contended, threads go to the kernel (futex wait/wake) to sleep and "
        "to be woken: each handoff costs system calls and context switches, and the work "
        "behind the lock runs one thread at a time.",
        fix,
        cpus=ctx.cpus(samples),
        evidence={"functions": prims[:5], "takers": takers, "libc_lock_users": inside,
                  "stacks": ctx.heaviest_stacks(slow)},
        focus=focus_of(ctx.on_stacks(takers, slow) or prims))


def _libc_lock_users(ctx: Context, slow: dict[int, int], prims: list[dict]
                     ) -> tuple[list[dict], str]:
    """When the contended lock is the C library's own (its private futex lock) and the
    stacks lost who took it (a libc without frame pointers): the functions of these
    threads that take such a lock per call (knowledge.LIBC_LOCKED), most sampled first,
    and what the first one's lock guards."""
    if not any(knowledge.LIBC_PRIVATE_LOCK.match(f["name"]) for f in prims):
        return [], ""

    def guarded(f: int) -> str | None:
        if not knowledge.is_c_library(ctx.dso(f)):
            return None
        name = ctx.name(f)
        return next((what for r, what in knowledge.LIBC_LOCKED if r.match(name)), None)
    users = ctx.top_functions(ctx.same_threads(slow), lambda f: guarded(f) is not None, 3)
    return (users, guarded(users[0]["id"])) if users else ([], "")


# ---- kernel, I/O, memory ------------------------------------------------------------
def kernel_heavy(ctx: Context, t: dict) -> Finding | None:
    busy = ctx.busy_stacks()
    kernel_leaf = ctx.kernel_leaf_stacks  # (a byte per stack id)
    sids, w = weight_arrays(busy)  # (the busy stacks' columns: no dict filled)
    on = np.frombuffer(kernel_leaf, dtype=np.uint8)[sids] != 0 if len(sids) else \
        np.zeros(0, dtype=bool)
    kernel = WeightDict(sids[on], w[on])
    busy_n = ctx.samples(busy)
    samples = ctx.samples(kernel)
    share = samples / busy_n if busy_n else 0.0
    if share < t["min_share"]:
        return None
    by_syscall: Counter = Counter()
    kinds: Counter = Counter()
    waits = wait_rules.server_wait_stacks(ctx)
    for sid, w in kernel.items():
        names_ = [ctx.name(f) for f in ctx.funcs[sid]]
        name = knowledge.syscall_of(names_)
        if name is None and names_ and (names_[0] in knowledge.SYSCALL_DISPATCH or
                                        names_[0].startswith("entry_SYSCALL")):
            # the entry and exit of a call are that call's, when the C library's
            # wrapper above them says which (epoll_wait called in a loop)
            name = _wrapped_call(ctx, sid) or "system call entry and exit"
        if name is None:
            name = "page faults" if any("page_fault" in n for n in names_) else \
                "interrupts" if any(n.startswith(("asm_sysvec", "asm_common_interrupt",
                                                  "irq_exit", "__irq")) for n in names_) \
                else "other kernel paths"
        by_syscall[name] += w
        # what the call is for: a wait in a server's own or an interpreter's lock (epoll
        # under PostgreSQL's WaitLatch, kill() waking a waiter) is lock waiting whatever
        # the call; a commit is a commit
        kinds["lock waits and wake-ups" if sid in waits or ctx.has(sid, "interp_lock") else
              "commits to disk" if ctx.has(sid, "commit_io") else
              name if name in _NOT_SYSCALLS else knowledge.syscall_kind(name)] += w
    paths = ctx.top_functions(kernel, lambda f: ctx.profile.mappings[
        ctx.profile.functions[f].mapping_id].kind == KERNEL and
        ctx.profile.functions[f].resolved)
    top = ", ".join(f"{k} {pct(v / busy_n)}" for k, v in by_syscall.most_common(4))
    overhead = sum(w for sid, w in kernel.items()
                   if knowledge.SYSCALL_OVERHEAD.match(ctx.name(ctx.funcs[sid][0])))
    callers = ctx.callers_above(kernel, lambda f: ctx.profile.mappings[
        ctx.profile.functions[f].mapping_id].kind == KERNEL)
    where = f", entered under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
    main_kind, main_n = kinds.most_common(1)[0]
    # many small calls: the part every call pays whatever it does (entry, exit,
    # descriptor and permission checks, a fraction of a microsecond each) is a large part
    # of the kernel time, or alone a noticeable part of all the busy time (a send per
    # formatted piece of a response: 10% of the CPU entering and leaving the kernel; a
    # server making one call per reply stays under 5%)
    # (waiting calls made again and again are a thread that polls: its spin-wait
    # finding says so; entering and leaving them is not work to batch)
    calls_heavy = main_kind not in _WAITING_KINDS and (
        overhead >= t["overhead_share"] * samples or (
            main_kind in _DATA_KINDS and overhead >= t["overhead_busy_share"] * busy_n))
    summary = (f"{pct(share)} of the busy samples run kernel code{where}: {top}. By kind: "
               + ", ".join(f"{k} {pct(v / busy_n)}" for k, v in kinds.most_common(3)) +
               f"; {pct(overhead / busy_n)} is the cost of making calls at all (entry, "
               f"exit, file-descriptor and permission checks).")
    fix = _KERNEL_FIX.get("overhead" if calls_heavy else main_kind, _KERNEL_FIX["other"])
    # the finding that names the cause of this kernel time, to be read first
    explained_by = [] if calls_heavy else list(_EXPLAINED_BY.get(main_kind, ()))
    first = by_syscall.most_common(1)[0]
    # the kernel doing the I/O the program asked for (a server sending its replies, a
    # copy reading and writing its files), or threads waiting in it, is where the time
    # goes, not a fault: only the price of many small calls, or kernel work of a costly
    # kind (mapping memory, commits, lock handoffs a finding explains), is
    work = not calls_heavy and main_kind not in _KERNEL_A_COST
    title = ("System-call overhead: many small calls" if calls_heavy else
             "The kernel moving data and waiting for the program" if work else
             "Most of the CPU time is spent in the kernel" if share >= 0.5 else
             f"{pct(share)} of the CPU time is spent in the kernel") + \
        f" ({first[0]} {pct(first[1] / busy_n)})"
    return Finding(
        "kernel-heavy", title, "low" if work else severity_of(share, t), "high", share,
        samples, summary,
        "Time in the kernel is time the application asked for through system calls (or "
        "suffered through faults and interrupts). It is either the price of many small "
        "calls (entry and exit, descriptor lookups: batch them), waiting machinery "
        "(futex, epoll: see the lock and wait findings), or the kernel doing the data "
        "work itself (copying, network, file systems: move less data, or move it once).",
        fix, cpus=ctx.cpus(samples),
        evidence={"syscalls": [{"name": k, "samples": v, "share": round(v / busy_n, 4)}
                               for k, v in by_syscall.most_common(8)],
                  "kinds": [{"kind": k, "samples": v, "share": round(v / busy_n, 4)}
                            for k, v in kinds.most_common()],
                  "overhead_share": round(overhead / busy_n, 4), "callers": callers,
                  "explained_by": explained_by,
                  "functions": paths, "stacks": ctx.heaviest_stacks(kernel)},
        focus=focus_of(callers or paths))


#: kinds of kernel time that move the program's data: many small calls of these are
#: unbuffered I/O (a spinning thread's sched_yield calls are the spin's, said by its rule)
_DATA_KINDS = frozenset({"network data", "file and socket data"})
_NOT_SYSCALLS = ("system call entry and exit", "page faults", "interrupts",
                 "other kernel paths")
#: kinds of kernel time that are the program's own I/O or its waiting, said as where
#: the time goes (page faults have their own finding)
#: kinds of kernel time that cost in themselves; the others are the program's own I/O,
#: its waiting, or the symptom of a cause another finding names (lock handoffs, commits,
#: page faults), said as where the time goes
_KERNEL_A_COST = frozenset({"memory mapping", "files and directories",
                            "processes and threads", "querying and setting state"})
#: the rules whose finding explains kernel time of a kind
_EXPLAINED_BY = {"lock waits and wake-ups": ("lock-wait", "interpreter-lock", "spin-wait",
                                             "lock-contention"),
                 "commits to disk": ("commit-io",),
                 "waiting for events": ("spin-wait",), "sleeping": ("spin-wait",)}
#: kinds of kernel time that are waiting (on the CPU: calls that return at once)
_WAITING_KINDS = frozenset({"waiting for events", "sleeping"})


def _wrapped_call(ctx: Context, sid: int) -> str | None:
    """The system call whose C-library wrapper is the first frame above the kernel's on
    stack `sid` (`epoll_wait`, `__GI___poll`, `__libc_recv`), or None."""
    for f in ctx.funcs[sid]:
        fn = ctx.profile.functions[f]
        if ctx.profile.mappings[fn.mapping_id].kind != KERNEL:
            return knowledge.wrapped_call(fn.name)
    return None
#: what to change, by the kind of kernel work that dominates (knowledge.SYSCALL_KINDS)
_KERNEL_FIX = {
    "overhead": "Make fewer, larger system calls: buffer reads and writes (one call per "
                "64 KB instead of per byte or per line), use writev/sendmmsg/recvmmsg or "
                "io_uring to batch, and drop calls made per item (getpid, time, stat) "
                "from loops; the flame graph shows which caller makes them.",
    "lock waits and wake-ups": "The kernel time is threads sleeping and waking on locks "
                               "(futex): see the lock findings; fewer handoffs (less "
                               "contention, no spinning on trylock) remove it.",
    "commits to disk": "The kernel time is the file system making writes durable: see "
                       "the commit finding; fewer commits remove it.",
    "waiting for events": "Event-loop waits are cheap per call; many of them with little "
                          "work each mean the loop wakes for tiny amounts of work: batch "
                          "it (larger reads per wake-up, fewer timers).",
    "sleeping": "Threads sleep and wake in a loop (nanosleep, sched_yield): wait on a "
                "condition variable or an event instead of polling with sleeps.",
    "querying and setting state": "The kernel time is calls that read or set state and "
                                  "move no data (clock_gettime of a CPU-time clock, "
                                  "epoll_ctl, fcntl locks, ioctl), made per unit of work: "
                                  "read clocks once per batch (CLOCK_MONOTONIC is served "
                                  "in user space by the vDSO, CPU-time clocks are system "
                                  "calls), register descriptors with epoll once and keep "
                                  "them registered, take file locks per batch or "
                                  "transaction, and keep settings instead of setting them "
                                  "per call; the callers above say which code makes them.",
    "network data": "The kernel is doing the network work (TCP send and receive, "
                    "loopback delivery): send fewer, larger messages (no per-packet "
                    "flushes: TCP_NOPUSH/TCP_CORK settings, fewer setsockopt calls per "
                    "request), or less data (compression, caching).",
    "file and socket data": "The kernel is copying data through read/write calls: use "
                            "larger buffers (fewer calls), zero-copy paths (sendfile, "
                            "splice, mmap) where the data only passes through, or move "
                            "less of it.",
    "files and directories": "Files are opened, created or deleted on the hot path: keep "
                             "them open, cache the metadata (open_file_cache in nginx), "
                             "and avoid a temporary file per operation.",
    "memory mapping": "Memory is mapped and unmapped on the hot path: reuse buffers, "
                      "keep the allocator from returning memory to the kernel, and "
                      "pre-fault large buffers.",
    "other": "Find the system call with the largest share below and its callers in the "
             "flame graph: batch or buffer it, avoid it in loops, or remove the polling.",
}


_WHOSE = ("app", "library", "unknown")  # (stack_walks.decided_above's answers)


def _whose_all(ctx: Context, hits: dict[int, int], category: str) -> dict[int, str]:
    """Who each stack's frames of the category worked for: "library" when a well-known
    library doing its own work called them (malloc under OpenSSL's EVP_MD_CTX_copy_ex: the
    hot-code rule names that library with what to change; the application has no buffer
    to reuse there), "unknown" when the chain ends in them (libc without frame pointers),
    else "app". Each function is asked once and the stacks walked in one array pass
    (a Python walk per stack, the tests' reference, was 50 ms of a report with symbols)."""
    p = ctx.profile
    used = bytearray(len(p.functions))
    stack_walks.used_functions(ctx.stack_funcs.sets, hits, used)
    marks = bytearray(len(p.functions))  # as stack_walks.decided_above reads them
    for f in compress(range(len(used)), used):
        if category in ctx.cats[f]:
            marks[f] = 1
        elif ctx.passes_through(f) or not p.functions[f].resolved:
            marks[f] = 2
        else:
            lib = ctx.library(f)
            marks[f] = 3 if lib is not None and lib.fix and not lib.interpreter else 4
    decided = stack_walks.decided_above(ctx.stack_funcs.sets, hits, marks)
    return {sid: _WHOSE[d] for sid, d in zip(hits, decided)}


def _for_the_application(ctx: Context, hits: dict[int, int], category: str) -> dict:
    """The hits that are the application's doing: a library's own calls are dropped, and
    callerless ones are kept in the proportion the visible callers show."""
    whose = _whose_all(ctx, hits, category)
    seen = Counter()
    for sid, w in hits.items():
        seen[whose[sid]] += w
    if not seen["library"]:
        return hits
    keep = seen["app"] / (seen["app"] + seen["library"])
    out = {sid: w for sid, w in hits.items() if whose[sid] == "app"}
    carry = 0.0  # the rounding of each stack's share carried on, so the sum is right
    for sid, w in hits.items():
        if whose[sid] == "unknown":
            carry += w * keep
            if int(carry):
                out[sid] = int(carry)
                carry -= int(carry)
    return out


def _category_rule(rule_id: str, category: str, title: str, why: str, fix: str,
                   excluding: tuple[str, ...] = ()):
    """`excluding`: categories whose samples are theirs even under a frame of this one
    (a page fault taken inside memcpy is the kernel mapping fresh memory, the
    page-faults rule's, not copying; the kernel copying a read's data is the read)."""
    def evaluate(ctx: Context, t: dict) -> Finding | None:
        having = ctx.select(any_of=(category,), none_of=excluding) if excluding else \
            ctx.having(category)
        hits = _for_the_application(ctx, dict(having), category)
        samples = ctx.samples(hits)
        share = ctx.share(samples)
        if share < t["min_share"]:
            return None
        funcs = ctx.top_functions(hits, lambda f: category in ctx.cats[f])
        # who asked for it: the application frames nearest above it (every application
        # frame of the stacks ties at the same share: an HTTP parser far below the
        # Buffer.concat that copies is not the caller)
        callers = ctx.callers_above(hits, lambda f: category in ctx.cats[f]) or \
            ctx.app_functions(hits)
        if t.get("needs_app_frames") and not callers and share < t["high"]:
            return None
        where = f" under {', '.join(c['name'] for c in callers[:2])}" if callers else ""
        return Finding(
            rule_id, title, severity_of(share, t), "high" if callers else "medium", share,
            samples,
            f"{pct(share)} of samples{cpus_text(ctx.cpus(samples))} are in "
            f"{', '.join(f['name'] for f in funcs[:3])}{where}.",
            why, fix, cpus=ctx.cpus(samples),
            evidence={"functions": funcs, "callers": callers,
                      "stacks": ctx.heaviest_stacks(hits)},
            focus=focus_of(callers or funcs))
    return evaluate


allocator_churn = _category_rule(
    "allocator-churn", "allocator", "Allocator churn: malloc and free on the hot path",
    "Allocating and freeing in a loop costs allocator bookkeeping, lock traffic between "
    "threads and, for large or fresh memory, page faults and zeroing by the kernel.",
    "Reuse buffers and objects (pools, arenas, reserve() up front), avoid temporary "
    "copies, or use an allocator built for the pattern (jemalloc, mimalloc, tcmalloc).")
page_faults = _category_rule(
    "page-faults", "page_fault", "Page faults: memory touched for the first time",
    "The first write to a page of fresh memory traps into the kernel, which finds a free "
    "page, zeroes it and maps it (or copies it, after a fork): a runtime or a program "
    "that keeps making new buffers instead of reusing them pays this on every one.",
    "Reuse buffers instead of allocating fresh ones per operation; keep the allocator "
    "from returning memory to the kernel between requests (glibc maps every block above "
    "MALLOC_MMAP_THRESHOLD_ afresh and unmaps it on free; MALLOC_TRIM_THRESHOLD_ and "
    "MALLOC_TOP_PAD_ keep the heap's top; a runtime's heap minimum); pre-fault "
    "long-lived buffers.")
process_churn = _category_rule(
    "process-churn", "process_churn", "Processes or threads made and ended on the hot path",
    "Creating a process or a thread (copying the memory map, the first touches of a "
    "forked child's pages, exec loading a program) costs far more than handing work to "
    "one that exists.",
    "Keep a pool of processes or threads (or a persistent connection, channel or client "
    "that owns them) and hand them the work, instead of forking, spawning or creating a "
    "client per request.")
memory_copy = _category_rule(
    "memory-copy", "copy", "Memory copying dominates",
    "Copying memory does no useful work of its own and is bound by memory bandwidth; "
    "large copies on the hot path also evict caches.",
    "Pass by reference or view (spans, string_view, move semantics), copy once instead of "
    "per stage, or hand buffers over instead of duplicating them.",
    excluding=("page_fault", "kernel_copy"))


def _taken_by_others(busy: int, cpus: int | None) -> str:
    """Why preemption of threads that fit the CPUs points at the host, said with what the
    capture knows (perf script text may not say how many CPUs the host had)."""
    if busy == 0:
        return ("; none of the process's threads is busy enough to need a CPU of its own, "
                "so other work on the host took them")
    threads = f"the process's {busy} busy thread{'s' if busy != 1 else ''}"
    if cpus is None:
        return (f"; the capture does not say how many CPUs the host had, so whether "
                f"{threads} fit them is not known: other work on the host took them, or "
                "its own threads one another's")
    return f"; {threads} fit{'s' if busy == 1 else ''} its {cpus} CPUs, so other work " \
        "on the host took them"


def scheduling_pressure(ctx: Context, t: dict) -> Finding | None:
    """Threads that are runnable but wait for a CPU: more busy threads than CPUs while
    the CPUs are all in use, or the kernel preempting threads (an involuntary switch
    at the return to user mode). Switches of threads that block (on a lock, the disk,
    an interpreter lock, the next request) are the price of that wait, not of too few
    CPUs: a process-per-connection server whose backends sleep on a row lock has many
    threads and much scheduler time, yet no thread waiting for a core."""
    busy = ctx.busy_threads(t["thread_min_cpus"])
    cs = ctx.select(all_of=("scheduler", "preempt"), busy=True)
    cs_share = ctx.share(ctx.samples(cs))
    cpus_n = ctx.cpus_online
    over = ctx.oversubscribed(len(busy), t["saturated"])
    if over is None and cs_share < t["min_cs_share"] and \
            wait_rules.serialized_threads(ctx, wait_rules.INTERPRETER_LOCK_THRESHOLDS) is None:
        return _unknown_cpus(ctx, busy)
    if not over and cs_share < t["min_cs_share"]:
        return None
    tids = [tid for tid, _ in busy]
    samples = ctx.samples(ctx.weights) if over else ctx.samples(cs)
    share = ctx.share(samples)
    # preempted while its own busy threads fit the CPUs: the CPUs went to other work on
    # the host, which no change to this program removes
    external = not over and (cpus_n is None or len(busy) <= cpus_n)
    why = ("More threads want to run than there are CPUs: the scheduler time-slices them, "
           "so each request waits for a core, caches are cold after every switch, and "
           "latency grows with the queue.")
    summary = (f"{len(busy)} busy threads compete for {cpus_n} CPUs" if over else
               f"{pct(cs_share)} of samples are the kernel preempting runnable threads "
               f"(scheduler paths entered at the return to user mode)" +
               (_taken_by_others(len(busy), cpus_n) if external else ""))
    return Finding(
        "scheduling-pressure", "Scheduling pressure: more runnable threads than CPUs"
        if over else "Scheduling pressure: threads preempted while runnable",
        "medium" if over else "low" if external else severity_of(cs_share, t),
        "high" if over else "medium",
        share, samples, summary + ".", why,
        "Size thread pools to the CPUs the service may use (cgroup quota, not the host's "
        "core count), avoid a thread per request, and batch work handed between threads.",
        cpus=ctx.cpus_busy,
        evidence={"threads": [{"tid": tid, "samples": n, "cpus": ctx.cpus(n)}
                              for tid, n in busy[:16]],
                  "functions": ctx.top_functions(cs, lambda f: "scheduler" in ctx.cats[f])},
        focus=focus_of([], tids))


def _unknown_cpus(ctx: Context, busy: list[tuple[int, int]]) -> Finding:
    """More busy threads than the fewest CPUs the host can have had, all of those in
    use, in a capture that does not say how many it had: scheduling pressure on a host
    that small, threads waiting off-CPU on a larger one. Which, the capture cannot tell."""
    n, used = ctx.fewest_cpus(), ctx.cpus_busy
    return Finding(
        "scheduling-pressure", f"{len(busy)} busy threads on {used:.2f} CPUs: "
        f"scheduling pressure if the host had {n}, which the capture does not say",
        "low", "low", 1.0, ctx.total,
        f"{len(busy)} busy threads used {used:.2f} CPUs. "
        f"{format_facts.cpu_count_unknown(ctx.profile)}: with {n} CPUs, the threads are "
        f"more than the CPUs and each waits for a core; with {len(busy)} or more, they "
        f"use {pct(used / len(busy))} of what they could and wait off-CPU for something "
        f"else.",
        "More threads wanting to run than CPUs make each wait for a core; threads that "
        "wait for something else (a lock, the disk, a peer) leave CPUs idle. The two "
        "call for different fixes, and the host's CPU count tells them apart.",
        f"{format_facts.upload_advice(ctx.profile)}, and the finding can say which.",
        cpus=used,
        evidence={"threads": [{"tid": tid, "samples": s, "cpus": ctx.cpus(s)}
                              for tid, s in busy[:16]],
                  "fewest_cpus": n, "functions": []},
        focus=focus_of([], [tid for tid, _ in busy]))


def interpreter_bound(ctx: Context, t: dict) -> Finding | None:
    """The interpreter's frames, or its library's share of the leaves: interpreters are
    usually built without frame pointers, so a capture of a Python service may show
    _PyEval_EvalFrameDefault in a third of the samples and libpython in nine tenths."""
    # the samples perf sees only the interpreter of: the interpreter loop is the first
    # frame from the leaf that is program code at all (a bottom `Interpreter` frame under
    # JIT-compiled Java methods the perf map names is not: perf sees those methods)
    ch = hot_spots.charges(ctx)
    rows = np.flatnonzero(ch.interpreted)
    hits = dict(zip(ch.busy.sid[rows].tolist(), ch.busy.weight[rows].astype(int).tolist()))
    lib_hits: dict[str, dict[int, int]] = {}
    leaves = ctx.interpreter_leaves()
    for (sid, (dso, _)), w in zip(leaves.items(), ctx.weights_of(leaves)):
        lib_hits.setdefault(dso, {})[sid] = w
    lib_dso, lib_stacks = max(lib_hits.items(), key=lambda kv: sum(kv[1].values()),
                              default=("", {}))
    by_frames, by_lib = ctx.samples(hits), ctx.samples(lib_stacks)
    samples = max(by_frames, by_lib)
    share = ctx.share(samples)
    if share < t["min_share"]:
        return None
    funcs = ctx.top_functions(hits, lambda f: "interpreter" in ctx.cats[f])
    lib = software.library_of(lib_dso) if lib_dso else None
    name = funcs[0]["name"] if funcs else lib.name
    lang = "python" if "Py" in name or (lib and lib.name == "CPython") else \
        "java" if name == "Interpreter" else "node" if "Builtins" in name else "other"
    if by_lib > by_frames:
        leaves: Counter = Counter()
        for sid, w in lib_stacks.items():
            leaves[ctx.funcs[sid][0]] += w
        named = ", ".join(f"{ctx.name(f)} {pct(ctx.share(c))}"
                          for f, c in leaves.most_common(3))
        text = (f"{pct(share)} of samples{cpus_text(ctx.cpus(samples))} run in "
                f"{lib.name} ({library_identity(lib_dso)}: {lib.purpose}; its hottest "
                f"functions {named}): perf sees the interpreter, not the functions of the "
                f"program it runs.")
        funcs = [ctx.function_row(f, c) for f, c in leaves.most_common(5)]
    else:
        text = (f"{pct(share)} of samples run in {name}: perf sees the interpreter, not "
                f"the functions of the program it runs.")
    return Finding(
        "interpreter-bound", "Time goes to a language interpreter", severity_of(share, t),
        "high", share, samples, text,
        "Interpreted code costs many native instructions per language-level operation; "
        "the hot spots are in the program's functions, which native stacks do not show.",
        f"To see which functions are hot: {knowledge.INTERPRETER_ADVICE[lang]}. Then move "
        f"the hottest loops to vectorized or native code.",
        cpus=ctx.cpus(samples),
        evidence={"functions": funcs, "stacks": ctx.heaviest_stacks(hits or lib_stacks)},
        focus=focus_of(funcs))


def missing_symbols(ctx: Context, t: dict) -> Finding | None:
    """Samples whose own frame (leaf) has no name, per DSO."""
    # each stack's leaf function is its leaf location's first: summed per mapping of the
    # unnamed ones (mappings in the order first met, which most_common's ties keep)
    unnamed = stack_walks.unnamed_leaf_sums(ctx.stack_funcs.sets, ctx.weights,
                                            *ctx.function_columns())
    if unnamed is None:  # (a location without functions: the stack's first function decides)
        return _missing_symbols_by_stack(ctx, t)
    return _missing_symbols_rows(ctx, t, Counter(unnamed))


def _missing_symbols_by_stack(ctx: Context, t: dict) -> Finding | None:
    unnamed: Counter = Counter()
    functions = ctx.profile.functions
    for sid, w in ctx.weights.items():
        f = ctx.leaf(sid)
        if f is not None and not functions[f].resolved:
            unnamed[functions[f].mapping_id] += w
    return _missing_symbols_rows(ctx, t, unnamed)


#: what the file given for a DSO lacks, by the symbol table it had (coverage's `table`)
_GIVEN = {".dynsym": "stripped: only its exported functions have names (.dynsym)",
          "none": "no symbols at all"}


def _debug_file_advice(m, given: dict | None) -> str:
    bid = f" with build-id {m.build_id}" if m.build_id else ""
    if given is None:
        return f"{m.path}{bid} or its debug file"
    what = "has no symbols at all" if given["table"] == "none" else \
        "names only its exported functions"
    return (f"its debug file{bid} (the distribution's debug symbols package, or a "
            f"debuginfod server): the file given {what}")


def _missing_symbols_rows(ctx: Context, t: dict, unnamed: Counter) -> Finding | None:
    # the file each DSO was named from, if one was given (symbolize's coverage): a
    # stripped one already gave what names it had, and asking for it again helps nobody
    given = {c["dso"]: c for c in ctx.profile.coverage if c.get("table") in _GIVEN}
    rows = []
    for mid, n in unnamed.most_common():
        share = ctx.share(n)
        if share < t["min_share"]:
            break
        m = ctx.profile.mappings[mid]
        c = given.get(m.path)
        advice = ("a copy of /proc/kallsyms from the recording host (same boot)"
                  if m.kind == KERNEL else "the perf-PID.map of the JIT" if m.kind == "jit"
                  else "/proc/PID/maps of the process" if m.kind == UNKNOWN else
                  _debug_file_advice(m, c))
        rows.append({"dso": m.path, "build_id": m.build_id or None, "samples": n,
                     "share": round(share, 4), "upload": advice,
                     "given": _GIVEN[c["table"]] if c is not None else None})
    if not rows:
        return None
    samples = sum(r["samples"] for r in rows)
    share = ctx.share(samples)
    names = ", ".join(f"{r['dso']} ({pct(r['share'])}" +
                      (f", {r['given']}" if r["given"] else "") + ")" for r in rows[:3])
    archive = any(r["given"] is None for r in rows[:3])
    return Finding(
        "missing-symbols", "Frames without names hide where the time goes",
        severity_of(share, t), "high", share, samples,
        f"{pct(share)} of samples stop in code without symbols: {names}.",
        "Without symbols a frame is only an address: the flame graph cannot say which "
        "function burns the CPU, and the other findings may miss it.",
        "Upload " + "; ".join(f"for {r['dso']}: {r['upload']}" for r in rows[:3]) + "." +
        (" A `perf archive` of the capture collects what is needed in one file."
         if archive else ""),
        evidence={"dsos": rows, "functions": []}, focus={})


#: more busy threads (this many CPUs each) than CPUs, the CPUs this much in use:
#: scheduling-pressure's test, which off-cpu leaves to it when the host's CPU count is
#: not in the capture and the fewest it can have had pass it
_OVERSUBSCRIBED = {"thread_min_cpus": 0.1, "saturated": 0.9}


def _t(**kw) -> dict:
    return {"high": 0.30, "medium": 0.10, **kw}


RULES: list[Rule] = [
    Rule("cpu-use", "CPU use", cpu_use, {"busy_cpus": 0.25, "app_work": 0.10, "waiting": 0.5}),
    Rule("spin-wait", "Spin-wait / busy-polling", spin_wait,
         _t(thread_sync_share=0.5, thread_min_share=0.05, min_share=0.10,
            thread_min_cpus=0.25)),
    Rule("lock-contention", "Lock contention", lock_contention, _t(min_share=0.10)),
    Rule("kernel-heavy", "Kernel and syscall heavy", kernel_heavy,
         _t(min_share=0.30, high=0.50, overhead_share=0.4, overhead_busy_share=0.08)),
    Rule("commit-io", "Commits bound by the disk (fsync)", io_rules.commit_io,
         _t(min_share=0.05, off_cpu_use=0.6)),
    Rule("direct-reads", "Reads that bypass the page cache", io_rules.direct_reads,
         _t(min_share=0.10, medium=0.10, high=0.40, min_samples=30)),
    # (the writes' own share decides: a job that writes its output through a buffer
    # spent 11% in write(2), the one that opened the file per line 24%)
    Rule("sync-io", "Synchronous writes and logging", io_rules.sync_io,
         _t(min_share=0.05, min_write_share=0.01, medium=0.15)),
    # (allocation is part of most work: a quarter of the CPU in the allocator is a cause
    # by itself, less is said as low)
    Rule("allocator-churn", "Allocator churn", allocator_churn,
         _t(min_share=0.10, medium=0.25, high=0.50)),
    # (copying is medium from 30% of the busy time: 10.9% was a Rust program's
    # formatting, 13.1% vectorised numpy, 24.3% a sorted list's inserts (bisect.insort);
    # the copies that were causes took 58%-92%)
    Rule("memory-copy", "Memory copying", memory_copy,
         _t(min_share=0.10, medium=0.30, high=0.50)),
    Rule("page-faults", "Page faults", page_faults, _t(min_share=0.10)),
    Rule("process-churn", "Processes and threads created", process_churn,
         _t(min_share=0.05)),
    Rule("unoptimized-build", "An unoptimized (debug) build", build_rules.unoptimized_build,
         _t(min_share=0.05, medium=0.05, high=0.30, min_samples=30)),
    Rule("linear-search", "Lookups by comparing with every element",
         search_rules.linear_search,
         _t(min_share=0.10, medium=0.25, high=0.50, min_samples=10, min_search_share=0.01)),
    Rule("linear-walk", "Walking a list or a string to reach a position",
         search_rules.linear_walk, _t(min_share=0.10, medium=0.25, high=0.50,
                                      min_samples=10)),
    Rule("setup-repeated", "Sessions set up per request", setup_rules.setup_repeated,
         _t(min_share=0.10, min_samples=30)),
    Rule("lock-wait", "Waits on a server's own locks", wait_rules.lock_wait,
         _t(min_share=0.10)),
    Rule("interpreter-lock", "Threads serialized on an interpreter lock",
         wait_rules.interpreter_lock, wait_rules.INTERPRETER_LOCK_THRESHOLDS),
    Rule("blocked-time", "Threads blocked (off-CPU)", blocked_rules.blocked_time,
         _t(min_share=0.05, peer_medium=0.30)),
    Rule("round-trips", "Round trips to a peer", blocked_rules.round_trips,
         _t(min_share=0.20, medium=0.20, high=0.50)),
    Rule("sleeping-workers", "Sleeps on the request path", blocked_rules.sleeping_workers,
         _t(min_share=0.20, medium=0.20, high=0.50)),
    Rule("thread-churn", "Threads made and ended", thread_churn.thread_churn,
         {"medium_per_s": 20.0}),
    Rule("waiting-for-cpu", "Runnable threads waiting for a CPU",
         blocked_rules.waiting_for_cpu, _t(min_share=0.10)),
    Rule("off-cpu", "Little CPU under load", wait_rules.off_cpu,
         {"thread_min_share": 0.02, "max_use": 0.6, "door_min_share": 0.05,
          **_OVERSUBSCRIBED}),
    Rule("scheduling-pressure", "Scheduling pressure", scheduling_pressure,
         _t(min_cs_share=0.10, **_OVERSUBSCRIBED)),
    Rule("interpreter-bound", "Interpreter-bound", interpreter_bound, _t(min_share=0.30,
                                                                           high=0.50)),
    Rule("hot-code", "One library dominates", code_rules.hot_code,
         _t(min_share=0.30, medium=0.30, high=0.50)),
    Rule("costly-work", "A server's costly operation", code_rules.costly_work,
         _t(min_share=0.20, high=0.50)),
    Rule("runtime-overhead", "A runtime's own work (GC, exceptions, JIT, regex...)",
         hot_spots.runtime_overhead, hot_spots.THRESHOLDS),
    Rule("hot-spot", "Where the time goes", hot_spots.hot_spots, hot_spots.THRESHOLDS),
    Rule("missing-symbols", "Missing symbols", missing_symbols, _t(min_share=0.10)),
    # data quality, not a cost: always low (shares above 1 are never reached), so it
    # never outranks a cause the stacks still show
    Rule("broken-stacks", "Stacks cut short", stack_rules.broken_stacks,
         _t(min_share=0.25, medium=1.01, high=1.01)),
]

