"""The analyzed profile of a capture, loaded from storage once per process.

Zooming, searching, filtering and comparing each cost one aggregation, not an import:
recently used profiles stay in an LRU cache keyed by the result that holds them, bounded
by their estimated size in memory (PERFWEB_PROFILE_CACHE_BYTES per web process), not by
their number: eight profiles of a few hundred kilobytes and one of hundreds of megabytes
are very different loads. A profile larger than the whole budget is served without
being kept. The transformed profiles the explorer keeps with a profile (a drop copies
the sample columns it keeps: analysis.transforms) count against the same budget, and
go before any profile does.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from django.conf import settings

from analysis import profile_io
from analysis.explore import derived_bytes, forget_derived
from analysis.malloc_tuning import bound_heap
from analysis.profile import Profile
from analysis.profile_size import approx_bytes

DEFAULT_BUDGET = 128 << 20

_CACHE: OrderedDict = OrderedDict()  # key -> (profile, bytes)
_LOCK = threading.Lock()
_held = 0  # bytes of the cached profiles and of the transformed ones they keep


def budget() -> int:
    return int(getattr(settings, "PERFWEB_PROFILE_CACHE_BYTES", DEFAULT_BUDGET))


def stored_profile(capture) -> Profile | None:
    """None when the capture has no analyzed result yet. The caller checks access."""
    return result_profile(latest_result(capture))


def latest_result(capture):
    """The capture's latest result (None before one), its row read without its report
    and comparison: every explorer request comes here, and needs only the profile's
    file."""
    return capture.results.order_by("-created_at").only("pk", "capture", "profile").first()


def result_profile(result) -> Profile | None:
    """The profile an AnalysisResult holds (None for none, or an old result without)."""
    global _held
    if result is None or not result.profile:
        return None
    key = (result.pk, result.profile.name)
    limit = budget()
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            _trim(limit)
            return hit[0]
    bound_heap()  # a profile the cache drops gives its large blocks back (malloc_tuning)
    with result.profile.open("rb") as f:
        profile = profile_io.load(f)
    size = approx_bytes(profile)
    with _LOCK:
        if size <= limit and key not in _CACHE:
            _CACHE[key] = (profile, size)
            _held += size
        _trim(limit)
    return profile


def _trim(limit: int) -> None:
    """Least recently used first, until the cache fits `limit` (called with _LOCK): the
    transformed profiles kept with the cached ones, then the profiles. Those are made
    by the requests a profile serves after it was sized, so they are counted anew."""
    global _held
    _held = sum(size + derived_bytes(p) for p, size in _CACHE.values())
    for profile, _ in list(_CACHE.values()):
        if _held <= limit:
            return
        _held -= forget_derived(profile)
    while _held > limit:
        _, (_, size) = _CACHE.popitem(last=False)
        _held -= size


def cached_bytes() -> int:
    """Estimated bytes the cache holds now (for tests and monitoring)."""
    return _held
