"""Getting captures analysed: queueing them, queueing them again, and the sweep that takes
back what nobody is working on. The analysis itself is services.run_analysis.

The database is the source of truth: a capture's status says where it is, its claim
says which attempt owns it (claims.py). A message is only a hint to look at a capture,
so losing one (Redis restarted, the broker unreachable at upload) or delivering one twice
is harmless: the sweep queues the capture again, and a duplicate finds it taken.

The sweep knows a message was lost rather than guessing it from the time: a capture
records the Redis run id it was sent under (`sent_run`, read before sending), and a run
id that is no longer the server's means a restart since. It guessed before, from
`updated_at` and the 5-minute grace: after a 17 s outage, two captures queued when it
began finished 296 s after Redis returned. What the sweep sends goes ahead of new work
(perfweb/priorities.py).
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from perfweb import broker
from perfweb.priorities import FIRST, NEW

from . import claims
from .models import Capture, SymbolFile

log = logging.getLogger(__name__)
Status = Capture.Status


def enqueue(capture: Capture, priority: int = NEW, run: str | None = None) -> None:
    """Queue a capture once the transaction that created or reset it has committed, so
    the worker never looks for a row it cannot see yet. With the broker down the capture
    stays queued in the database, and the sweep sends it when the broker is back."""
    pk = capture.pk
    transaction.on_commit(lambda: send(pk, priority, run))


def broker_run() -> str | None:
    """The Redis server's current run id; None with the filesystem broker, whose
    messages are files a restart keeps, or when Redis does not answer."""
    return broker.run_id(settings.REDIS_URL) if settings.REDIS_URL else None


def send(capture_id: int, priority: int = NEW, run: str | None = None) -> bool:
    """Send the task message and record the broker run it went to (`run`, read before
    this send: should Redis restart in between, the sweep sends it once more, which is
    harmless); when the broker cannot take it, mark the capture unsent, and the sweep
    (which runs only where the broker answers) sends it on its next run."""
    from .tasks import analyze_capture
    run = run or broker_run() or ""
    try:
        analyze_capture.apply_async((capture_id,), retry=False, priority=priority)
    except Exception:  # noqa: BLE001 - kombu raises many kinds; the sweep sends it later
        log.warning("could not queue capture %s (broker unavailable); the sweep will",
                    capture_id, exc_info=True)
        Capture.objects.filter(pk=capture_id, status=Status.QUEUED).update(unsent=True)
        return False
    Capture.objects.filter(pk=capture_id, status=Status.QUEUED).update(sent_run=run)
    return True


def index_source(symbol_file_id: int, priority: int = NEW) -> None:
    """Have a worker read a source archive once its row is committed; with the broker
    down the sweep sends it later (an archive not read is also read by the next analysis
    of its build)."""
    def send_index() -> None:
        from .tasks import index_source_archive
        try:
            index_source_archive.apply_async((symbol_file_id,), retry=False,
                                             priority=priority)
        except Exception:  # noqa: BLE001 - as in send()
            log.warning("could not queue source archive %s; the sweep will",
                        symbol_file_id, exc_info=True)
    transaction.on_commit(send_index)


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
    """Take back captures nobody is working on, and send them ahead of new work: queued
    ones whose message was never sent (the broker was down), was sent to a Redis run that
    has ended since (a restart lost it), or may be lost (queued longer than
    PERFWEB_QUEUED_GRACE_S) are sent again; active ones whose worker stopped its
    heartbeat (PERFWEB_HEARTBEAT_STALE_S) are queued again, or failed after
    PERFWEB_MAX_ATTEMPTS. Rows another transaction holds (an attempt writing its result)
    are left for the next sweep."""
    now = timezone.now()
    run = broker_run()
    requeued = failed = 0
    lost = Q(unsent=True) | Q(updated_at__lt=now - timedelta(
        seconds=settings.PERFWEB_QUEUED_GRACE_S))
    if run is not None:  # (not recorded, "": sent before this was, or INFO failed)
        lost |= Q(sent_run__gt="") & ~Q(sent_run=run)
    lost = Capture.objects.filter(lost, status=Status.QUEUED)
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
                enqueue(capture, FIRST, run)
                requeued += 1
    # source archives left unread past the grace: their message was lost
    unread = SymbolFile.objects.filter(kind=SymbolFile.SOURCE, indexed=False,
                                       created_at__lt=now - timedelta(
                                           seconds=settings.PERFWEB_QUEUED_GRACE_S))
    for pk in unread.values_list("pk", flat=True)[:100]:
        index_source(pk, FIRST)
    return {"requeued": requeued, "failed": failed}
