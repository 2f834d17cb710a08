"""Exactly one attempt works on a capture at a time, and only its writes count.

Messages can arrive twice (acks_late redelivery after a broker restart, the sweep queueing
a capture whose message it believes lost), and a worker can be slow rather than dead. So
an attempt starts by claiming the capture with one conditional UPDATE that sets a fresh
token; every later write of that attempt is conditional on the token still being there.
While it runs, a heartbeat thread refreshes `heartbeat_at`, so the sweep can tell a live
worker (leave it) from a dead one (take the capture back, which clears the token and so
disowns anything the dead or stalled attempt might still write).
"""
from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.utils import timezone

from .models import Capture

log = logging.getLogger(__name__)
Status = Capture.Status


class ClaimLost(Exception):
    """The capture was taken back (the sweep judged this attempt dead) or reset (retry,
    deleted): this attempt must stop and write nothing."""


def stale_before():
    """A heartbeat older than this belongs to a worker that stopped. Heartbeats are
    written and judged by the database's clock, not the hosts': workers on several
    machines would otherwise disagree by their clocks' skew."""
    return ExpressionWrapper(Now() - timedelta(seconds=settings.PERFWEB_HEARTBEAT_STALE_S),
                             output_field=DateTimeField())


def claimable() -> Q:
    """Queued, or active with a stale (or no) heartbeat, and attempts left."""
    stale = stale_before()
    return (Q(status=Status.QUEUED)
            | Q(status__in=Capture.ACTIVE, heartbeat_at__lt=stale)
            | Q(status__in=Capture.ACTIVE, heartbeat_at__isnull=True)) & \
        Q(attempts__lt=settings.PERFWEB_MAX_ATTEMPTS)


class Claim:
    def __init__(self, capture_id: int, token: str):
        self.capture_id = capture_id
        self.token = token
        self._lost = threading.Event()

    def _mine(self):
        return Capture.objects.filter(pk=self.capture_id, claim=self.token,
                                      status__in=Capture.ACTIVE)

    def update(self, **fields) -> None:
        """Write to the capture if this attempt still owns it, else raise ClaimLost."""
        if self._lost.is_set() or not self._mine().update(
                updated_at=timezone.now(), heartbeat_at=Now(), **fields):
            self._lost.set()
            raise ClaimLost(self.capture_id)

    def check(self) -> None:
        if self._lost.is_set():
            raise ClaimLost(self.capture_id)

    @contextlib.contextmanager
    def final(self):
        """A transaction holding the capture's row while it is still ours: the result
        rows and the final status are written inside, or not at all. The sweep skips a
        locked row, so it cannot take the capture back half-way; keep the body to row
        writes (files go before it), since the heartbeat waits for the lock too."""
        with transaction.atomic():
            if self._lost.is_set() or not self._mine().select_for_update().exists():
                self._lost.set()
                raise ClaimLost(self.capture_id)
            yield

    def finish(self, status: str, **fields) -> bool:
        """The final status (done or failed), if still ours; False when it was not."""
        now = timezone.now()
        done = self._mine().update(status=status, finished_at=now, updated_at=now,
                                   heartbeat_at=None, claim="", **fields)
        if not done:
            self._lost.set()
        return bool(done)

    @contextlib.contextmanager
    def heartbeat(self):
        """Refresh heartbeat_at every PERFWEB_HEARTBEAT_S from a thread (with its own
        database connection) while the body runs; a refresh that finds the capture no
        longer ours marks the claim lost, and the next write of the attempt stops it."""
        stop = threading.Event()

        def beat():
            wait = settings.PERFWEB_HEARTBEAT_S
            try:
                while not stop.wait(wait):
                    try:
                        if not self._mine().update(heartbeat_at=Now()):
                            self._lost.set()
                            return
                        wait = settings.PERFWEB_HEARTBEAT_S
                    except DatabaseError:  # the database is away: beat again as soon
                        log.warning("heartbeat of capture %s failed", self.capture_id,
                                    exc_info=True)  # as it is back, before the sweep
                        connection.close()
                        wait = min(1.0, settings.PERFWEB_HEARTBEAT_S)
            finally:
                connection.close()

        thread = threading.Thread(target=beat, name=f"heartbeat-{self.capture_id}",
                                  daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def claim(capture_id: int) -> Claim | None:
    """Take the capture for one attempt, or None: deleted, finished, owned by a live
    worker, or out of attempts (the sweep fails those with a message)."""
    token = uuid.uuid4().hex
    taken = Capture.objects.filter(claimable(), pk=capture_id).update(
        status=Status.PARSING, progress=5, claim=token, heartbeat_at=Now(),
        updated_at=timezone.now(), attempts=F("attempts") + 1, error="", finished_at=None,
        unsent=False)
    return Claim(capture_id, token) if taken else None


def release(capture_id: int, from_status, **fields) -> int:
    """Back to queued with no owner, if the capture is in one of `from_status` (the sweep:
    active ones it judged dead; retry: finished ones, never one a worker just claimed);
    an attempt still running loses it. How many rows changed (0 or 1)."""
    return Capture.objects.filter(pk=capture_id, status__in=from_status).update(
        status=Status.QUEUED, progress=0, claim="", heartbeat_at=None,
        updated_at=timezone.now(), **fields)
