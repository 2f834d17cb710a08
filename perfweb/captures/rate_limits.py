"""Rate limits of the requests that make the server compute: the explorer's data (with
transforms and the stack chart) through a share link or the team's URLs, and exports.

A share link is a URL anyone may hold, and each of its data requests can cost a web
worker seconds on a large capture: six at once held every worker of the site, its login
page included, for 19 s. So each request is counted in fixed windows
(PERFWEB_RATE_WINDOW_S) per scope: the share link (all its visitors), the client's
address (client_address.py: an IPv6 /64) and, on the team's URLs, the signed-in user.
A scope has two budgets per window (settings.PERFWEB_RATE_LIMITS): requests, and the
seconds web workers spent answering them, charged when each answer is made; a request
arriving when either is spent gets 429 with Retry-After (the window's end) and a
sentence. Counting requests stops a burst at once; counting seconds stops a few costly
requests from doing what many cheap ones may.

The counters live in the "limits" cache: Redis when the site has it, so every gunicorn
worker and host shares them (an INCR is atomic: concurrent requests cannot all take the
last slot), else this process's memory. When the cache fails (Redis down), requests are
let through and a line is logged: a rate limit is not worth an outage of the explorer.
"""
from __future__ import annotations

import logging
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.http import JsonResponse
from django.shortcuts import render

from .client_address import client_address, limit_key
from .compute_slots import compute_slot

log = logging.getLogger(__name__)

#: after the cache failed, this process does not ask it again for this long (each
#: attempt on a Redis that does not answer costs its socket timeout)
RETRY_CACHE_AFTER_S = 5.0
_cache_down_until = 0.0

#: the scope of a request refused because every compute slot of the host is taken
BUSY = "busy"
#: what the 429 says, per scope
WHO = {"link": "This share link has had",
       "address": "Your address has made",
       "member": "Your account has made"}


@dataclass(frozen=True)
class Refusal:
    scope: str
    retry_after: int  # whole seconds until the window ends
    work: bool  # the seconds of work were spent (else the requests)

    @property
    def sentence(self) -> str:
        if self.scope == BUSY:
            return ("The server is busy with other requests of the explorer; try again "
                    f"in {self.retry_after} s.")
        what = "requests needing too much of the server's time" if self.work else \
            "too many requests"
        width = _window()
        window = {60: "minute", 3600: "hour"}.get(width, f"{width} s")
        return f"{WHO[self.scope]} {what} in the last {window}; try again in " \
            f"{self.retry_after} s."


@dataclass
class Admission:
    """The counters a request was admitted under, to charge its time to."""
    keys: list[tuple[str, str]]  # (scope, key base)
    window: int
    started: float


def _window() -> int:
    return max(1, int(settings.PERFWEB_RATE_WINDOW_S))


def _limits(scope: str) -> tuple[int, float]:
    return settings.PERFWEB_RATE_LIMITS.get(scope, (0, 0))


def share_scopes(request, link) -> list[tuple[str, str]]:
    return [("link", str(link.pk)), ("address", limit_key(client_address(request)))]


def member_scopes(request) -> list[tuple[str, str]]:
    return [("member", str(request.user.pk))]


def _cache_failed(e: Exception) -> None:
    global _cache_down_until
    if time.monotonic() >= _cache_down_until:  # one line per pause, not per request
        log.warning("rate limits not counted for %.0f s: the limits cache failed (%s: %s)",
                    RETRY_CACHE_AFTER_S, type(e).__name__, e)
    _cache_down_until = time.monotonic() + RETRY_CACHE_AFTER_S


def _cache_usable() -> bool:
    return time.monotonic() >= _cache_down_until


def _add(cache, key: str, delta: int, timeout: int) -> int:
    """The counter after adding `delta`, made if missing (atomic in Redis)."""
    for _ in range(3):
        if cache.add(key, delta, timeout):
            return delta
        try:
            return cache.incr(key, delta)
        except ValueError:  # it expired between the two: make it again
            continue
    return delta


def admit(scopes: list[tuple[str, str]]) -> Admission | Refusal:
    """Count a request in each scope, or refuse it: a scope whose window's budget is
    already spent refuses it without counting it anywhere (a client refused for its
    address does not use up its link's budget), then each count is taken atomically and
    the request refused if one went past its limit."""
    now = time.time()
    width = _window()
    window = int(now // width)
    retry_after = max(1, math.ceil((window + 1) * width - now))
    admitted = Admission(scopes, window, time.perf_counter())
    if not _cache_usable():
        return admitted
    cache = caches["limits"]
    names = {scope: f"rl:{scope}:{base}:{window}" for scope, base in scopes}
    try:
        seen = cache.get_many([f"{n}:{k}" for n in names.values() for k in ("n", "ms")])
        for scope, name in names.items():
            requests, work_s = _limits(scope)
            if work_s and seen.get(f"{name}:ms", 0) >= work_s * 1000:
                return Refusal(scope, retry_after, True)
            if requests and seen.get(f"{name}:n", 0) >= requests:
                return Refusal(scope, retry_after, False)
        for scope, name in names.items():
            requests, _ = _limits(scope)
            if requests and _add(cache, f"{name}:n", 1, width + 5) > requests:
                return Refusal(scope, retry_after, False)
    except Exception as e:  # the cache is down or refuses: let the request through
        _cache_failed(e)
    return admitted


def charge(admission: Admission) -> None:
    """Add the request's time (since it was admitted) to its scopes' work budgets."""
    ms = int((time.perf_counter() - admission.started) * 1000)
    if ms <= 0 or not _cache_usable():
        return
    cache = caches["limits"]
    try:
        for scope, base in admission.keys:
            if _limits(scope)[1]:
                _add(cache, f"rl:{scope}:{base}:{admission.window}:ms", ms, _window() + 5)
    except Exception as e:
        _cache_failed(e)


def refused(request, refusal: Refusal, json: bool, api: bool = False):
    """The 429: JSON for data endpoints ({"error": ...}, {"detail": ...} for the API),
    a page otherwise; Retry-After in both."""
    if json or api:
        response = JsonResponse({"detail" if api else "error": refusal.sentence}, status=429)
    else:
        response = render(request, "captures/rate_limited.html",
                          {"sentence": refusal.sentence}, status=429)
    response["Retry-After"] = str(refusal.retry_after)
    return response


def limited(request, scopes, serve, json: bool = True, api: bool = False,
            compute: bool = True):
    """`serve()`'s response if the scopes admit the request (and, when it `compute`s,
    a compute slot of the host is free: compute_slots.py), its time then charged to
    them; the 429 otherwise. A request refused for want of a slot counts nowhere: the
    page asks again a second later."""
    with compute_slot() if compute else nullcontext(True) as free:
        if not free:
            return refused(request, Refusal(BUSY, 1, False), json, api)
        outcome = admit(scopes)
        if isinstance(outcome, Refusal):
            return refused(request, outcome, json, api)
        try:
            return serve()
        finally:
            charge(outcome)
