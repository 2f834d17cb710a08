"""How many CPUs the capture kept busy: the headline number of every diagnosis.

Two routes, best first:
- clock events (cpu-clock, task-clock) carry their period in nanoseconds of CPU time,
  so busy CPU-seconds are the summed periods;
- otherwise samples / (sampling frequency x duration), as the frequency is per CPU.
The duration is what the capture states, else the span of its sample timestamps.
"""
from __future__ import annotations

import math
import re

from .aggregate import _weigh
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
        return _weigh.time_span(profile.s_time, None, 0) if whole else \
            _weigh.time_span(profile.s_time, profile.s_event, event_id)
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
    if profile.meta.duration_s:
        return profile.meta.duration_s
    span = time_range(profile, event_id)
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
    if not is_clock_event(profile.events[event_id].name):
        return None
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
