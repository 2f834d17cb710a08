"""Getting captures analysed: queueing them, queueing them again, and the sweep that takes
back what nobody is working on. The analysis itself is services.run_analysis.

The database is the source of truth: a capture's status says where it is, its claim
says which attempt owns it (claims.py). A message is only a hint to look at a capture,
so losing one (Redis restarted, the broker unreachable at upload) or delivering one twice
is harmless: the sweep queues the capture again, and a duplicate finds it taken.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import claims
from .models import Capture

log = logging.getLogger(__name__)
Status = Capture.Status


def enqueue(capture: Capture) -> None:
    """Queue a capture once the transaction that created or reset it has committed, so
    the worker never looks for a row it cannot see yet. With the broker down the capture
    stays queued in the database, and the sweep sends it when the broker is back."""
    pk = capture.pk
    transaction.on_commit(lambda: send(pk))


def send(capture_id: int) -> bool:
    """Send the task message; when the broker cannot take it, mark the capture unsent,
    and the sweep (which runs only where the broker answers) sends it on its next run."""
    from .tasks import analyze_capture
    try:
        analyze_capture.apply_async((capture_id,), retry=False)
    except Exception:  # noqa: BLE001 - kombu raises many kinds; the sweep sends it later
        log.warning("could not queue capture %s (broker unavailable); the sweep will",
                    capture_id, exc_info=True)
        Capture.objects.filter(pk=capture_id, status=Status.QUEUED).update(unsent=True)
        return False
    return True


def retry(capture: Capture) -> bool:
    """Analyze a finished capture again; False when it is not finished (a worker has it,
    or a second click already queued it)."""
    if not claims.release(capture.pk, (Status.DONE, Status.FAILED), error="",
                          finished_at=None, attempts=0, retryable=True):
        return False
    enqueue(capture)
    return True


def retry_all(captures) -> int:
    return sum(retry(capture) for capture in captures)


def reanalyze_build(build) -> int:
    """After new symbol files: analyze the build's finished captures again."""
    return retry_all(build.captures.filter(status__in=[Status.DONE, Status.FAILED]))


def sweep() -> dict[str, int]:
    """Take back captures nobody is working on: queued ones whose message was never sent
    (the broker was down) or may be lost (queued longer than PERFWEB_QUEUED_GRACE_S) are
    sent again; active ones whose worker stopped its heartbeat (PERFWEB_HEARTBEAT_
    STALE_S) are queued again, or failed after PERFWEB_MAX_ATTEMPTS. Rows another
    transaction holds (an attempt writing its result) are left for the next sweep."""
    now = timezone.now()
    requeued = failed = 0
    lost = Capture.objects.filter(
        Q(unsent=True) | Q(updated_at__lt=now - timedelta(
            seconds=settings.PERFWEB_QUEUED_GRACE_S)), status=Status.QUEUED)
    stuck = Capture.objects.filter(status__in=Capture.ACTIVE).exclude(
        heartbeat_at__gte=claims.stale_before())
    with transaction.atomic():
        for capture in list(lost.select_for_update(skip_locked=True)) + \
                list(stuck.select_for_update(skip_locked=True)):
            if capture.attempts >= settings.PERFWEB_MAX_ATTEMPTS:
                Capture.objects.filter(pk=capture.pk).update(
                    status=Status.FAILED, claim="", heartbeat_at=None, finished_at=now,
                    updated_at=now,
                    error=f"processing stopped {capture.attempts} times without "
                          f"finishing (a worker died or ran out of time); giving up")
                failed += 1
            else:
                claims.release(capture.pk, (capture.status,), unsent=False)
                enqueue(capture)
                requeued += 1
    return {"requeued": requeued, "failed": failed}
