"""Which samples a view looks at: one event, some processes/threads, a time range."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..profile import Profile
from .. import column_ops


@dataclass(frozen=True)
class Selection:
    event_id: int | None = None  # None: the profile's default event
    pids: frozenset[int] | None = None
    tids: frozenset[int] | None = None
    comms: frozenset[str] | None = None
    start_s: float | None = None  # absolute sample timestamps, inclusive
    end_s: float | None = None  # exclusive
    weight: str = "samples"  # or "period"

    def resolve_event(self, profile: Profile) -> int | None:
        return profile.default_event() if self.event_id is None else self.event_id


def selected_rows(profile: Profile, sel: Selection):
    ev = sel.resolve_event(profile)
    s_event, s_pid, s_tid, s_time = profile.s_event, profile.s_pid, profile.s_tid, profile.s_time
    comm_ids = None
    if sel.comms is not None:
        comm_ids = {i for i, s in enumerate(profile.strings) if s in sel.comms}
    timed = sel.start_s is not None or sel.end_s is not None
    lo = -math.inf if sel.start_s is None else sel.start_s
    hi = math.inf if sel.end_s is None else sel.end_s
    for i in range(len(s_event)):
        if ev is not None and s_event[i] != ev:
            continue
        if sel.pids is not None and s_pid[i] not in sel.pids:
            continue
        if sel.tids is not None and s_tid[i] not in sel.tids:
            continue
        if comm_ids is not None and profile.s_comm[i] not in comm_ids:
            continue
        if timed and not (lo <= s_time[i] < hi):
            continue
        yield i


def stack_thread_weights(profile: Profile, event_id: int | None) -> Counter:
    """(stack id, tid) -> samples, of one event (None: every event), in first-seen order."""
    s_stack, s_tid, s_count, s_event = (profile.s_stack, profile.s_tid, profile.counts(),
                                        profile.s_event)
    if profile.unit_rows() and (event_id is None or
                                profile.sample_count(event_id) == len(s_stack)):
        return Counter(zip(s_stack, s_tid))
    out: Counter = Counter()
    for i in range(len(s_stack)):
        if event_id is None or s_event[i] == event_id:
            out[s_stack[i], s_tid[i]] += s_count[i]
    return out


def is_whole(profile: Profile, sel: Selection) -> bool:
    """The selection keeps every row (one event, no other filter)."""
    return sel.pids is None and sel.tids is None and sel.comms is None and \
        sel.start_s is None and sel.end_s is None and \
        profile.only_event(sel.resolve_event(profile))


def stack_weights(profile: Profile, sel: Selection = Selection()) -> dict[int, int]:
    """stack id -> summed weight (sample counts, or periods) of the selected samples.

    A whole event's weights (the report, the diagnosis, comparisons all ask for them) are
    computed once per profile; callers must not modify the dict they get."""
    if sel.pids is None and sel.tids is None and sel.comms is None and \
            sel.start_s is None and sel.end_s is None:
        return profile.memo(("stack_weights", sel.resolve_event(profile), sel.weight),
                            lambda: _stack_weights(profile, sel))
    return _stack_weights(profile, sel)


def _stack_weights(profile: Profile, sel: Selection) -> dict[int, int]:
    if sel.weight != "period" and is_whole(profile, sel) and profile.unit_rows():
        # dict(Counter(profile.s_stack)), counted on the column
        return column_ops.counts_first_met(profile.s_stack)
    out: dict[int, int] = {}
    s_stack = profile.s_stack
    w = profile.periods() if sel.weight == "period" else profile.counts()
    for i in selected_rows(profile, sel):
        sid = s_stack[i]
        out[sid] = out.get(sid, 0) + w[i]
    return out
