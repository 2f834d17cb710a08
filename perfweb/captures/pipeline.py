"""Processing a capture: the service functions the Celery tasks call.

The database is the source of truth: a capture's status says where it is, every stage
saves progress, and a capture found stuck (its worker died, its message was lost) is
taken back by `sweep`. Processing is idempotent: running it again on the same capture
recomputes the same result and replaces the stored one.
"""
from __future__ import annotations

import contextlib
import errno
import io
import logging
import signal
import tempfile
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from analysis import ANALYSIS_VERSION, compare, profile_io
from analysis.errors import AnalysisError
from analysis.export.folded import FoldOptions, folded_lines, fold
from analysis.importers import load
from analysis.report import build_report
from analysis.symbols import symbolize

from . import buildids, history
from .local_files import local_copy
from .models import AnalysisResult, Capture, SymbolFile
from .profiles import result_profile

log = logging.getLogger(__name__)
Status = Capture.Status



def enqueue(capture: Capture) -> None:
    """Queue a capture once the transaction that created or reset it has committed, so
    the worker never looks for a row it cannot see yet."""
    from .tasks import analyze_capture
    pk = capture.pk
    transaction.on_commit(lambda: analyze_capture.delay(pk))


def process_capture(capture_id: int) -> None:
    with transaction.atomic():
        capture = Capture.objects.select_for_update().filter(pk=capture_id).first()
        if capture is None or capture.status == Status.DONE:
            return  # deleted, or a duplicate delivery of finished work
        capture.attempts += 1
        capture.error = ""
        capture.save(update_fields=["attempts", "error", "updated_at"])
    try:
        with deadline(settings.PERFWEB_ANALYSIS_TIME_LIMIT_S):
            _run(capture)
    except AnalysisTimeout:
        _fail(capture, f"processing took longer than the "
                       f"{_duration(settings.PERFWEB_ANALYSIS_TIME_LIMIT_S)} limit "
                       f"(PERFWEB_ANALYSIS_TIME_LIMIT_S); a shorter capture fits")
    except AnalysisError as e:
        _fail(capture, str(e))
    except (MemoryError, OSError) as e:
        if not _out_of_memory(e):
            _unexpected(capture)
            return
        _fail(capture, f"the analysis needed more memory than a worker may use "
                       f"({settings.PERFWEB_WORKER_MEMORY_MB} MB, PERFWEB_WORKER_MEMORY_MB); "
                       f"a shorter capture, or one recorded at a lower frequency, fits")
    except Exception:  # noqa: BLE001 - the user gets a message, we get the trace
        _unexpected(capture)


def _unexpected(capture: Capture) -> None:
    log.exception("capture %s failed", capture.pk)
    _fail(capture, f"processing failed unexpectedly; the error was logged "
                   f"(capture {capture.pk}). Retrying may help.")


def _out_of_memory(e: BaseException | None) -> bool:
    """MemoryError, or an OS call refused for memory (ENOMEM), maybe while cleaning up
    after a MemoryError."""
    while e is not None:
        if isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM):
            return True
        e = e.__context__
    return False


class AnalysisTimeout(BaseException):
    """A BaseException, so no `except Exception` inside the analysis can swallow it."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Raise AnalysisTimeout in the analysis after `seconds` (SIGALRM; the task runs in
    the main thread of its worker process, with the solo and the prefork pool alike).
    Celery's hard CELERY_TASK_TIME_LIMIT stays behind it, for code that never returns
    to Python."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise AnalysisTimeout()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _duration(seconds: int) -> str:
    return f"{seconds // 60}-minute" if seconds >= 120 and seconds % 60 == 0 else \
        f"{seconds}-second"


def _stage(capture: Capture, status: str, progress: int) -> None:
    capture.status, capture.progress = status, progress
    capture.save(update_fields=["status", "progress", "updated_at"])
    if settings.PERFWEB_STAGE_DELAY_S:
        time.sleep(settings.PERFWEB_STAGE_DELAY_S)


def _fail(capture: Capture, message: str) -> None:
    Capture.objects.filter(pk=capture.pk).update(
        status=Status.FAILED, error=message[:2000], finished_at=timezone.now(),
        updated_at=timezone.now())


def _run(capture: Capture) -> None:
    with tempfile.TemporaryDirectory(prefix="perfweb-capture-") as work:
        _stage(capture, Status.PARSING, 10)
        profile = load(local_copy(capture.file, work, "capture"))
        Capture.objects.filter(pk=capture.pk).update(format=profile.meta.format)

        _stage(capture, Status.SYMBOLIZING, 40)
        files = SymbolFile.objects.filter(build=capture.build) | \
            SymbolFile.objects.filter(capture=capture)
        ordered = list(files.order_by("created_at"))
        paths = [local_copy(sf.file, work, f"symbols-{sf.pk}") for sf in ordered]
        for sf, path in zip(ordered, paths):
            buildids.index(sf, path)  # for debuginfod; once per file
        if paths:
            symbolize(profile, paths)

        _stage(capture, Status.ANALYZING, 70)
        report = build_report(profile, label=capture.label)
        _compare_with_previous(capture, profile, report)
        folded = "".join(line + "\n" for line in folded_lines(
            fold(profile, FoldOptions(weight="samples"))))
        with transaction.atomic():
            AnalysisResult.objects.filter(capture=capture,
                                          analysis_version=ANALYSIS_VERSION).delete()
            result = AnalysisResult(capture=capture, analysis_version=ANALYSIS_VERSION,
                                    report=report)
            result.folded.save("folded", ContentFile(folded.encode()), save=False)
            buf = io.BytesIO()
            profile_io.dump(profile, buf)
            result.profile.save("profile", ContentFile(buf.getvalue()), save=False)
            result.save()
            Capture.objects.filter(pk=capture.pk).update(
                status=Status.DONE, progress=100, finished_at=timezone.now(),
                updated_at=timezone.now(), error="")


def _compare_with_previous(capture: Capture, profile, report: dict) -> None:
    """A capture of a new build is compared with the previous build's capture of the same
    label; a regression beyond the thresholds becomes a finding naming what grew."""
    report["compared_with"] = None
    prev = history.previous_capture(capture)
    prev_result = prev.latest_result() if prev is not None else None
    before = result_profile(prev_result)
    if before is None:
        return
    cmp = compare.compare(before, profile, report_before=prev_result.report,
                          report_after=report)
    report["compared_with"] = {"capture": prev.pk, "build": prev.build.version,
                               "cpus_before": cmp["cpus_before"],
                               "cpus_change": cmp["cpus_change"]}
    if cmp["regression"]:
        findings = report["findings"]
        at = 1 if findings and findings[0]["rule"] == "cpu-use" else 0
        findings.insert(at, cmp["regression"])


def retry(capture: Capture) -> None:
    Capture.objects.filter(pk=capture.pk).update(
        status=Status.QUEUED, progress=0, error="", finished_at=None, attempts=0,
        updated_at=timezone.now())
    enqueue(capture)


def retry_all(captures) -> int:
    n = 0
    for capture in captures:
        retry(capture)
        n += 1
    return n


def reanalyze_build(build) -> int:
    """After new symbol files: analyze the build's finished captures again."""
    return retry_all(build.captures.filter(status__in=[Status.DONE, Status.FAILED]))


def sweep() -> dict[str, int]:
    """Take back captures nobody is working on: queued ones whose message may be lost
    (Redis restarted) are queued again; active ones whose worker stopped reporting are
    queued again, or failed after PERFWEB_MAX_ATTEMPTS."""
    now = timezone.now()
    requeued = failed = 0
    lost = Capture.objects.filter(
        status=Status.QUEUED,
        updated_at__lt=now - timedelta(seconds=settings.PERFWEB_QUEUED_GRACE_S))
    stuck = Capture.objects.filter(
        status__in=Capture.ACTIVE,
        updated_at__lt=now - timedelta(seconds=settings.PERFWEB_STUCK_AFTER_S))
    with transaction.atomic():
        for capture in list(lost.select_for_update()) + list(stuck.select_for_update()):
            if capture.attempts >= settings.PERFWEB_MAX_ATTEMPTS:
                _fail(capture, f"processing stopped {capture.attempts} times without "
                               f"finishing (a worker died or ran out of time); giving up")
                failed += 1
            else:
                Capture.objects.filter(pk=capture.pk).update(
                    status=Status.QUEUED, progress=0, updated_at=now)
                enqueue(capture)
                requeued += 1
    return {"requeued": requeued, "failed": failed}
