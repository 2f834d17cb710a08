"""The off-CPU part of the report contract: per-thread seconds and the top blocking
stacks (report["off_cpu"], report["threads"][i]["off_cpu_s"] ...)."""
from __future__ import annotations

from array import array
from collections import defaultdict

from ..aggregate.functions import stack_functions
from ..diagnosis.knowledge import is_c_library, syscall_of
from ..profile import KERNEL, Profile
from . import interval_sums
from .switches import RUNNABLE
from .threads import off_cpu
from .views import state_name


def thread_times(profile: Profile) -> dict[int, dict]:
    """tid -> the seconds threads[] gains, for captures with switches."""
    oc = off_cpu(profile)
    if oc is None:
        return {}
    return {tid: {"on_cpu_s": round(t.on_cpu_s, 6), "off_cpu_s": round(t.off_cpu_s, 6),
                  "blocked_s": round(t.blocked_s, 6), "preempted_s": round(t.preempted_s, 6),
                  "switches": t.switches}
            for tid, t in oc.threads.items()}


def off_cpu_block(profile: Profile, top: int = 10) -> dict | None:
    """Window, totals, and the stacks threads blocked in (voluntary switch-outs), with
    seconds, count and mean wait; None without switches."""
    oc = off_cpu(profile)
    if oc is None:
        return None
    t0, t1 = oc.window
    threads = oc.threads.values()
    totals = {
        "threads": len(oc.threads),
        "threads_active": sum(1 for t in threads if t.on_cpu_s > 0),
        "on_cpu_s": round(sum(t.on_cpu_s for t in threads), 6),
        "off_cpu_s": round(sum(t.off_cpu_s for t in threads), 6),
        "blocked_s": round(sum(t.blocked_s for t in threads), 6),
        "preempted_s": round(sum(t.preempted_s for t in threads), 6),
        "sleeping_s": round(sum(t.sleeping_s for t in threads), 6),
        "disk_s": round(sum(t.disk_s for t in threads), 6),
        "switches": sum(t.switches for t in threads),
    }
    # per stack of a voluntary switch-out, in order of first appearance (ties of the
    # sort below keep it): seconds, waits, threads, seconds per state, per waker
    g, stacks = interval_sums.groups(oc.i_stack, oc.i_state, RUNNABLE, 0)
    secs, counts, pairs = interval_sums.sums(g, oc.i_dur, len(stacks), oc.i_tid)
    tids = [set() for _ in stacks]
    for k, tid in pairs:
        tids[k].add(tid)
    gs, by_state = interval_sums.groups(oc.i_stack, oc.i_state, RUNNABLE, 1)
    states = [defaultdict(float) for _ in stacks]
    stack_ix = {sid: k for k, (sid, _) in enumerate(stacks)}
    for (sid, st), v in zip(by_state, interval_sums.sums(gs, oc.i_dur, len(by_state))[0]):
        states[stack_ix[sid]][state_name(st)] += v
    wakers = [defaultdict(float) for _ in stacks]
    if max(oc.i_waker, default=-1) >= 0:  # sched_wakeup recorded
        g = array("i", g)
        for k in range(len(oc)):
            if oc.i_waker[k] >= 0 and g[k] >= 0:
                wakers[g[k]][(oc.i_waker[k], oc.i_wake_stack[k])] += oc.i_dur[k]
    acc = {sid: (secs[k], counts[k], states[k], tids[k], wakers[k])
           for k, (sid, _) in enumerate(stacks)}
    comm_of = profile.first_comms()
    rows = []
    for sid, (secs, n, states, tids, wakers) in sorted(acc.items(),
                                                        key=lambda kv: -kv[1][0])[:top]:
        fids = [] if sid < 0 else stack_functions(profile, profile.stacks[sid])
        frames = [profile.functions[f].name for f in reversed(fids)]
        rows.append({"stack": sid, "frames": frames, **_where(profile, fids),
                     "seconds": round(secs, 6), "count": n,
                     "mean_ms": round(secs / n * 1e3, 3), "threads": len(tids),
                     "states": {k: round(v, 6) for k, v in sorted(states.items())},
                     "woken_by": _wakers(profile, wakers, comm_of)})
    return {"window_s": [t0, t1], "duration_s": round(t1 - t0, 6), "timed": oc.timed,
            "totals": totals, "top_blocking": rows}


def _where(profile: Profile, fids: list[int]) -> dict:
    """The system call a blocking stack waits in and the program's frame that made it:
    the first named frame from the leaf outside the kernel and the C library."""
    names = [profile.functions[f].name for f in fids]
    caller = None
    for f in fids:
        fn = profile.functions[f]
        m = profile.mappings[fn.mapping_id]
        if m.kind != KERNEL and fn.resolved and not is_c_library(m.path):
            caller = fn.name
            break
    return {"syscall": syscall_of(names), "caller": caller}


def _wakers(profile: Profile, wakers: dict, comm_of: dict) -> list[dict]:
    """Who ended these waits (sched_wakeup): the waking thread's name and the program's
    frame it woke them from, by the seconds of wait they ended; [] without wakeups."""
    by: dict[tuple, float] = defaultdict(float)
    for (tid, sid), secs in wakers.items():
        fids = stack_functions(profile, profile.stacks[sid]) if sid >= 0 else []
        by[(comm_of.get(tid, f":{tid}"), _where(profile, fids)["caller"])] += secs
    return [{"comm": comm, "caller": caller, "seconds": round(secs, 6)}
            for (comm, caller), secs in sorted(by.items(), key=lambda kv: -kv[1])[:3]]
