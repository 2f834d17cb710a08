"""Samples over time, per thread: the data behind the timeline and the heat map."""
from __future__ import annotations

import math

from ..profile import Profile
from .selection import Selection, selected_rows


def samples_over_time(profile: Profile, bucket_s: float = 0.1,
                      sel: Selection = Selection()) -> dict:
    """{"start": t0, "bucket_s": b, "series": {tid: [counts...]}} for timestamped samples."""
    times, tids, count = profile.s_time, profile.s_tid, profile.counts()
    rows = [i for i in selected_rows(profile, sel) if not math.isnan(times[i])]
    if not rows:
        return {"start": None, "bucket_s": bucket_s, "series": {}}
    t0 = min(times[i] for i in rows)
    t1 = max(times[i] for i in rows)
    n = int((t1 - t0) / bucket_s) + 1
    series: dict[int, list[int]] = {}
    for i in rows:
        s = series.get(tids[i])
        if s is None:
            s = series[tids[i]] = [0] * n
        s[int((times[i] - t0) / bucket_s)] += count[i]
    return {"start": t0, "bucket_s": bucket_s, "series": series}
