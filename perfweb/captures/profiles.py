"""The analyzed profile of a capture, loaded from storage once per process.

Zooming, searching, filtering and comparing each cost one aggregation, not an import:
the last few profiles stay in a small LRU cache keyed by the result that holds them.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from analysis import profile_io
from analysis.profile import Profile

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 8
_LOCK = threading.Lock()


def stored_profile(capture) -> Profile | None:
    """None when the capture has no analyzed result yet. The caller checks access."""
    return result_profile(capture.latest_result())


def result_profile(result) -> Profile | None:
    """The profile an AnalysisResult holds (None for none, or an old result without)."""
    if result is None or not result.profile:
        return None
    key = (result.pk, result.profile.name)
    with _LOCK:
        profile = _CACHE.get(key)
        if profile is not None:
            _CACHE.move_to_end(key)
            return profile
    with result.profile.open("rb") as f:
        profile = profile_io.load(f)
    with _LOCK:
        _CACHE[key] = profile
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return profile
