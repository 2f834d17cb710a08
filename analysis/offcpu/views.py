"""The on-CPU, off-CPU and wall-clock views of one capture, as profiles.

A view is a profile over the same tables (functions, locations, stacks) whose rows are
weighted by time, in microseconds (each row's count and period are its µs, so whatever
sums samples sums time): off-CPU rows are the off-CPU intervals, weighted by their microseconds
and placed on the stack the thread left the CPU from; wall-clock adds the on-CPU samples,
each weighted by the time one sample stands for (its cpu-clock period, or 1/frequency).
Every consumer of profiles (folded stacks, flame graphs, top functions by period) then
shows blocked time the way it shows CPU time.
"""
from __future__ import annotations


from ..errors import AnalysisError
from ..profile import Profile
from .switches import STATE_NAMES
from .threads import off_cpu

ON_CPU, OFF_CPU, WALL = "on-cpu", "off-cpu", "wall"
VIEWS = (ON_CPU, OFF_CPU, WALL)
#: the leaf frame of an off-CPU interval whose stack perf did not record (only
#: PERF_RECORD_SWITCH saw the switch-out: record `-e sched:sched_switch -g` for stacks)
NO_STACK = "[off-CPU: stack not recorded]"


def view(profile: Profile, name: str, event_id: int | None = None) -> Profile:
    """`profile` itself for on-CPU; else a profile of the view, weighted in µs."""
    if name == ON_CPU:
        return profile
    oc = off_cpu(profile)
    if oc is None or not oc.timed:
        raise AnalysisError(
            f"the {name} view needs context switches with switch-ins: record with "
            f"`perf record -g --switch-events -e cpu-clock/freq=499/ -e sched:sched_switch "
            f"-p PID -- sleep 5`")
    v = _shell(profile)
    ev = v.event("off-cpu µs" if name == OFF_CPU else "wall µs")
    comm_of = profile.first_comms()
    no_stack = None
    for k in range(len(oc)):
        sid = oc.i_stack[k]
        if sid < 0:
            if no_stack is None:
                mid = v.mapping("[unknown]")
                fid = v.function(NO_STACK, mid, resolved=False, system_name=NO_STACK)
                no_stack = v.stack((v.add_location(mid, 0, (fid,)),))
            sid = no_stack
        tid = oc.i_tid[k]
        tt = oc.threads[tid]
        us = max(1, round(oc.i_dur[k] * 1e6))
        v.add_sample(sid, count=us, period=us, pid=tt.pid, tid=tid,
                     time=oc.i_start[k], event_id=ev,
                     comm_id=v.string(comm_of.get(tid, f":{tid}")))
    if name == WALL:
        if event_id is None:
            event_id = _cpu_event(profile)
        us = _sample_us(profile, event_id)
        periods = profile.periods()
        for row in range(len(profile)):
            if profile.s_event[row] != event_id:
                continue
            per = max(1, round(periods[row] / 1e3 if us is None else us))
            v.add_sample(profile.s_stack[row], count=per, period=per,
                         pid=profile.s_pid[row], tid=profile.s_tid[row],
                         cpu=profile.s_cpu[row], time=profile.s_time[row], event_id=ev,
                         comm_id=v.string(profile.comm(row)))
    return v


def _shell(profile: Profile) -> Profile:
    """A profile sharing the tables' contents (copied lists: a view may add one frame)."""
    v = Profile(profile.meta.format)
    v.meta = profile.meta
    v.mappings, v.functions = list(profile.mappings), list(profile.functions)
    v.locations, v.stacks = profile.locations.copy(), profile.stacks.copy()
    v.strings = list(profile.strings)
    v._mapping_ix = dict(profile._mapping_ix)
    v._function_ix = None  # built from v.functions when a function is interned
    v._stack_ix = None  # built from v.stacks when a stack is interned
    v._string_ix = dict(profile._string_ix)
    v.coverage = profile.coverage
    return v


def _cpu_event(profile: Profile) -> int | None:
    """The sampling event of the on-CPU view: the default one that is not sched_switch."""
    for i, e in enumerate(profile.events):
        if profile.sample_count(i) and not e.name.endswith("sched_switch"):
            return i
    return profile.default_event()


def _sample_us(profile: Profile, event_id: int | None) -> float | None:
    """µs one sample stands for: None when the period is a time in ns (cpu-clock,
    task-clock), else 1e6/frequency."""
    if event_id is None:
        return None
    e = profile.events[event_id]
    if e.name.startswith(("cpu-clock", "task-clock")):
        return None
    if e.frequency:
        return 1e6 / e.frequency
    return None


def state_name(code: int) -> str:
    return STATE_NAMES[code] if 0 <= code < len(STATE_NAMES) else "other"


__all__ = ["ON_CPU", "OFF_CPU", "WALL", "VIEWS", "view"]
