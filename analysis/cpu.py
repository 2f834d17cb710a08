"""How many CPUs the capture kept busy: the headline number of every diagnosis.

Two routes, best first:
- clock events (cpu-clock, task-clock) carry their period in nanoseconds of CPU time,
  so busy CPU-seconds are the summed periods;
- otherwise samples / (sampling frequency x duration), as the frequency is per CPU.
The duration is what the capture states, else the span of its samples' timestamps (all
events', as perf.data's sample time range is).
"""
from __future__ import annotations

import math
import re

from . import column_ops
from .profile import Profile, compiled_column, is_scheduler_event

_CLOCK_EVENTS = ("cpu-clock", "task-clock")
_SLEEP = re.compile(r"(?:^|\s)sleep\s+(\d+(?:\.\d+)?)\s*$")


def time_range(profile: Profile, event_id: int | None) -> tuple[float, float] | None:
    """First and last sample timestamp of the event, when samples have them. One pass
    per profile and event, however many numbers ask for it."""
    return profile.memo(("time_range", event_id), lambda: _time_range(profile, event_id))


def _time_range(profile: Profile, event_id: int | None) -> tuple[float, float] | None:
    whole = event_id is None or profile.only_event(event_id)
    if compiled_column(profile.s_time, "d") and (
            whole or compiled_column(profile.s_event, "i")):
        # the same min and max without a float object per row
        return column_ops.time_span(profile.s_time, None, 0) if whole else \
            column_ops.time_span(profile.s_time, profile.s_event, event_id)
    if whole:
        times = profile.s_time
    else:
        times = [t for t, e in zip(profile.s_time, profile.s_event) if e == event_id]
    if not len(times) or math.isnan(sum(times)):
        times = [t for t in times if not math.isnan(t)]
        if not times:
            return None
    return min(times), max(times)


def duration_s(profile: Profile, event_id: int | None) -> float | None:
    """What the capture states, else the span of all its samples' times, every event's,
    as perf.data states it (its first and last sample of any event): a text's clock
    samples alone span less than the recording when switches came before and after."""
    if profile.meta.duration_s:
        return profile.meta.duration_s
    span = time_range(profile, None)
    if span is not None and span[1] > span[0]:
        return span[1] - span[0]
    # `perf record ... -- sleep 5`: the usual way to bound a capture
    m = _SLEEP.search(profile.meta.cmdline or "")
    return float(m.group(1)) if m else None


def is_clock_event(name: str) -> bool:
    """cpu-clock, cpu-clock:pppH, cpu-clock/freq=499/ (a per-event term)."""
    return name.split(":")[0].split("/")[0] in _CLOCK_EVENTS


def cpu_seconds(profile: Profile, event_id: int | None) -> float | None:
    """CPU time the samples stand for, when the event measures time."""
    return profile.memo(("cpu_seconds", event_id), lambda: _cpu_seconds(profile, event_id))


def _cpu_seconds(profile: Profile, event_id: int | None) -> float | None:
    if event_id is None or not profile.events:
        return 0.0 if not len(profile) else None
    name = profile.events[event_id].name
    if not is_clock_event(name):
        return None
    declared = profile.meta.declared_event_counts.get(name)
    if declared:  # (perf report: all samples' periods, those it did not print too)
        return declared / 1e9
    same = profile.period_value()  # (no column: every row's period is this one)
    if profile.only_event(event_id):
        total = same * len(profile) if same is not None else sum(profile.s_period)
    elif same is not None:  # (the event's rows; its samples when each row is one)
        total = same * (profile.sample_count(event_id) if profile.unit_rows() else
                        profile.s_event.count(event_id))
    else:
        total = sum(p for p, e in zip(profile.s_period, profile.s_event) if e == event_id)
    return total / 1e9 if total else None


def cpus_busy(profile: Profile, event_id: int | None) -> float | None:
    if event_id is not None and is_scheduler_event(profile.events[event_id].name):
        return _switch_cpus(profile)
    samples = profile.sample_count(event_id)
    if samples == 0:
        return 0.0  # nothing ran while perf watched: idle
    dur = duration_s(profile, event_id)
    if not dur:
        return None
    secs = cpu_seconds(profile, event_id)
    if secs:
        return secs / dur
    ev = profile.events[event_id] if event_id is not None else None
    freq = ev.frequency if ev else None
    if freq is None and ev is not None and ev.period and is_clock_event(ev.name):
        freq = 1e9 / ev.period
    if freq:
        return samples / (freq * dur)
    return None


def _switch_cpus(profile: Profile) -> float | None:
    """CPUs busy from the context switches: on-CPU seconds over the window (a capture
    of scheduler events only has no CPU samples)."""
    from .offcpu.threads import off_cpu
    oc = off_cpu(profile)
    if oc is None or not oc.timed or oc.window[1] <= oc.window[0]:
        return None
    return sum(t.on_cpu_s for t in oc.threads.values()) / (oc.window[1] - oc.window[0])


#: window lengths (seconds) over which fewest_cpus reads the CPU time the threads
#: provably used, each laid four times (a quarter of a window apart): short ones catch
#: bursts of parallel work, long ones lose less at each window's start (each thread's
#: first sample in a window does not count). 0.1 s proves 2 CPUs for the MariaDB
#: capture of tests/fixtures/realworld (1.02 CPUs in its busiest window, 0.80 on average)
_WINDOWS = (0.1, 0.5)
#: CPUs above a whole number by less than this are that number: a sample's time is
#: taken a few microseconds after its period ends, 0.1% of a 2 ms period
_SLACK = 0.01


def fewest_cpus(profile: Profile, event_id: int | None) -> int | None:
    """The fewest CPUs the host can have had, from the samples alone, for a capture that
    does not say how many it had (perf script text without `--header`): the CPUs its
    samples name, and the CPU time its threads provably spent within some window over
    the window's length. None when the samples carry neither (no CPU column, no clock
    event with times and threads)."""
    return profile.memo(("fewest_cpus", event_id), lambda: _fewest_cpus(profile, event_id))


def _fewest_cpus(profile: Profile, event_id: int | None) -> int | None:
    import numpy as np
    cpus = np.asarray(_column(profile.s_cpu, "i"))
    seen = len(column_ops.distinct(cpus[cpus >= 0])) if len(cpus) else 0
    provable = _provable_cpus(profile, event_id)
    fewest = max(seen, math.ceil(provable - _SLACK) if provable else 0)
    return fewest or None


def _provable_cpus(profile: Profile, event_id: int | None) -> float:
    """The most CPUs busy at once that the samples prove. A clock event's sample stands
    for `period` ns on a CPU: since its thread's previous sample for per-thread events
    (`-p`: the timer counts the thread's time on a CPU), in the `period` ns before it for
    per-CPU ones (`-a`). A sample whose thread's previous sample and whose period's start
    both fall in a window ran at least that long in it, and threads' times that add up
    to more than the window's length ran on more than one CPU. Read a block of samples
    at a time (a thread's first sample in each block does not count): the arrays stay
    small whatever the capture's size."""
    import numpy as np
    if event_id is None or not profile.unit_rows() or len(profile) < 2 or \
            not is_clock_event(profile.events[event_id].name):
        return 0.0
    times, tids = _column(profile.s_time, "d"), _column(profile.s_tid, "i")
    same = profile.period_value()
    periods = None if same is not None else _column(profile.s_period, "Q")
    events = None if profile.only_event(event_id) else _column(profile.s_event, "i")
    best = 0.0
    for a in range(0, len(profile), _BLOCK):
        t = np.asarray(times[a:a + _BLOCK], dtype=np.float64)
        tid = np.asarray(tids[a:a + _BLOCK], dtype=np.int64)
        per = (np.full(len(t), float(same)) if periods is None else
               np.asarray(periods[a:a + _BLOCK], dtype=np.float64)) / 1e9
        keep = np.isfinite(t) & (tid > 0) & (per > 0)
        if events is not None:
            keep &= np.asarray(events[a:a + _BLOCK]) == event_id
        best = max(best, _block_cpus(t[keep], tid[keep], per[keep]))
    return best


#: samples read at a time by _provable_cpus
_BLOCK = 1 << 18


def _column(column, typecode: str):
    """A sample column as numpy reads it without a copy (a transform's list as is)."""
    import numpy as np
    return np.frombuffer(column, dtype=np.dtype(typecode)) if \
        compiled_column(column, typecode) and len(column) else column


def _block_cpus(t, tid, per) -> float:
    import numpy as np
    if len(t) < 2:
        return 0.0
    # each thread's samples in time order (a text in time order, as perf prints it,
    # by a stable sort of the thread ids alone)
    order = np.argsort(tid, kind="stable") if bool(np.all(t[1:] >= t[:-1])) else \
        np.lexsort((t, tid))
    t, tid, per = t[order], tid[order], per[order]
    # the earliest time a sample's period can have begun: its thread's previous sample
    # or, for a per-CPU clock, its period before it, whichever is earlier
    prev = np.full(len(t), -np.inf)
    prev[1:] = np.where(tid[1:] == tid[:-1], t[:-1], -np.inf)
    begun = np.minimum(t - per, prev)
    first, best = t.min(), 0.0
    for w in _WINDOWS:
        for t0 in first - w * np.arange(4) / 4:
            win = np.floor((t - t0) / w)
            ok = begun >= t0 + win * w
            if not ok.any():
                continue
            ix = win[ok]
            if ix.max() > 4 * len(ix) + 4096:
                # (an upload's times may span years: windows numbered among those
                # with samples, so its samples bound the work)
                ix = column_ops.unique_inverse(ix)[1]
            best = max(best, float(np.bincount(ix.astype(np.int64),
                                               weights=per[ok]).max()) / w)
    return best
