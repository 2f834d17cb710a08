"""The samples an export of a selection holds: the explorer's query (threads, time range,
event, view, transforms) through the explorer's own selection code (analysis.explore), so
a file exported from the page has the totals the page shows."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..aggregate.selection import selected_rows
from ..cpu import time_range
from ..offcpu.views import ON_CPU
from ..profile import Profile


@dataclass
class Selected:
    profile: Profile  # the view's profile after the query's transforms
    rows: list[int]  # its rows the query selects
    view: str
    event: int | None  # the event weighed (an id of profile.events), None: no samples
    event_name: str
    has_periods: bool  # the rows carry event counts (perf.data, perf script text)
    t0: float | None  # the capture's first sample (absolute seconds), None: no times
    offset_s: float  # the selection's start, from t0
    duration_s: float | None


def select(profile: Profile, q=None) -> Selected:
    """The rows of `q` (an analysis.explore.Query; None: the whole default event)."""
    from .. import explore  # explore imports the aggregate passes; exports import it late

    q = q or explore.Query()
    sel = explore.selection(profile, q)
    p = explore.transformed_view(profile, q)
    rows = list(selected_rows(p, sel))
    event = sel.resolve_event(p)
    name = p.events[event].name if event is not None and event < len(p.events) else ""
    span = time_range(profile, None)
    t0 = span[0] if span else None
    if span is None:
        duration = profile.meta.duration_s
    elif q.start is None and q.end is None:
        duration = profile.meta.duration_s or (span[1] - span[0])
    else:
        whole = max(span[1] - span[0], profile.meta.duration_s or 0.0)
        lo = max(0.0, q.start or 0.0)
        hi = whole if q.end is None else min(q.end, whole)
        duration = max(0.0, hi - lo)
    periods = p.periods()
    return Selected(p, rows, q.view, event, name,
                    has_periods=any(periods[i] for i in rows), t0=t0,
                    offset_s=max(0.0, q.start or 0.0) if span else 0.0,
                    duration_s=duration if duration is None or math.isfinite(duration)
                    else None)


__all__ = ["ON_CPU", "Selected", "select"]
