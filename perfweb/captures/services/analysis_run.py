"""One analysis of one capture, run by a worker: claim it, read it, symbolize it, build
the report, store the result, each write conditional on still owning the capture.

Running it twice on the same capture is harmless: a second delivery finds the capture
finished or owned by a live attempt and returns; an attempt the sweep judged dead loses
its claim and writes nothing, so a late or duplicate task never overwrites a result.
"""
from __future__ import annotations

import logging
import os
import socket
import tempfile
import time

from django.conf import settings
from django.core.files import File
from django.db import connection, transaction

from analysis import ANALYSIS_VERSION, compare, profile_io
from analysis.errors import AnalysisError
from analysis.export.folded import FoldOptions, fold, folded_lines
from analysis.gc_pause import frozen_until_done, paused_gc
from analysis.importers import load
from analysis.malloc_tuning import bound_heap
from analysis.report import build_report
from analysis.symbols import symbolize

from .. import work_dirs
from . import buildids, debuginfod_client, deletion, history, source_index, webhooks
from .history import rate_of
from ..claims import Claim, ClaimLost, claim
from ..local_files import local_copy
from ...store_errors import StoreUnavailable
from ..models import AnalysisResult, Capture, SymbolFile
from ..worker_limits import AnalysisTimeout, deadline, duration, out_of_memory

log = logging.getLogger(__name__)
Status = Capture.Status


def run_analysis(capture_id: int) -> str:
    """What happened, for the task's log: done, failed, or skipped (not ours to run)."""
    work_dirs.remove_orphans()
    mine = claim(capture_id)
    if mine is None:
        return "skipped"
    with mine.heartbeat():
        try:
            outcome = _attempt(mine)
            # which host did it, for operators of many workers (and the many-hosts test)
            log.info("capture %s %s on %s (pid %s)", capture_id, outcome,
                     socket.gethostname(), os.getpid())
            return outcome
        except ClaimLost:
            log.warning("capture %s was taken back while this attempt ran; its work "
                        "is dropped", capture_id)
            return "skipped"


def _attempt(mine: Claim) -> str:
    try:
        with deadline(settings.PERFWEB_ANALYSIS_TIME_LIMIT_S):
            _run(mine, Capture.objects.select_related("build").get(pk=mine.capture_id))
        return "done"
    except ClaimLost:
        raise
    except AnalysisTimeout:
        # the alarm may have landed inside a query: psycopg cancels one only on Ctrl-C,
        # so this connection is left busy and the failure goes through a fresh one
        connection.close()
        message = (f"processing took longer than the "
                   f"{duration(settings.PERFWEB_ANALYSIS_TIME_LIMIT_S)} limit "
                   f"(PERFWEB_ANALYSIS_TIME_LIMIT_S); a shorter capture fits")
    except AnalysisError as e:
        # the engine's sentence about an input (the capture, a symbol bundle): the same
        # files fail the same way however often they are tried, so no Retry
        mine.finish(Status.FAILED, error=str(e)[:2000], retryable=False)
        return "failed"
    except Exception as e:  # noqa: BLE001 - the user gets a message, we get the trace
        # transient or ours (a limit, the bucket, a bug): these alone may say retry
        if out_of_memory(e):
            message = (f"the analysis needed more memory than a worker may use "
                       f"({settings.PERFWEB_WORKER_MEMORY_MB} MB, PERFWEB_WORKER_MEMORY_MB);"
                       f" a shorter capture, or one recorded at a lower frequency, fits")
        elif isinstance(e, StoreUnavailable):  # the bucket, from this worker's host
            message = ("the file store (the bucket) could not be reached from the worker; "
                       "retrying may help once it is back")
        else:
            log.exception("capture %s failed", mine.capture_id)
            message = (f"processing failed unexpectedly; the error was logged "
                       f"(capture {mine.capture_id}). Retrying may help.")
    mine.finish(Status.FAILED, error=message[:2000])
    return "failed"


def _stage(mine: Claim, status: str, progress: int) -> None:
    mine.update(status=status, progress=progress)
    if settings.PERFWEB_STAGE_DELAY_S:
        time.sleep(settings.PERFWEB_STAGE_DELAY_S)


def _run(mine: Claim, capture: Capture) -> None:
    bound_heap()  # the import's outgrown blocks go back to the system (malloc_tuning)
    # each engine step's objects frozen at its end, the collector's again when this ends
    with frozen_until_done(), work_dirs.work_dir() as work:
        _stage(mine, Status.PARSING, 10)
        with paused_gc(freeze=True):
            profile = load(local_copy(capture.file, work, capture.original_name))
        mine.update(format=profile.meta.format)

        _stage(mine, Status.SYMBOLIZING, 40)
        files = (SymbolFile.objects.filter(build=capture.build) |
                 SymbolFile.objects.filter(capture=capture)).exclude(kind=SymbolFile.SOURCE)
        ordered = list(files.order_by("created_at"))
        paths = [local_copy(sf.file, work, sf.original_name, sf.sha256) for sf in ordered]
        buildids.index_all(list(zip(ordered, paths)))  # for debuginfod; once per file
        servers = debuginfod_client.client()  # DEBUGINFOD_URLS: for what nobody uploaded
        if paths or servers is not None:  # the digests recorded on upload key the cache
            with paused_gc(freeze=True):
                symbolize(profile, paths, {p: sf.sha256 for sf, p in zip(ordered, paths)},
                          debuginfod=servers)
        # the build's source archives, each read once here (within its own budget), so
        # that no hot-lines request ever decompresses one
        source_index.index_sources(capture.build, work)

        _stage(mine, Status.ANALYZING, 70)
        with paused_gc(freeze=True):  # (the engine's own work only: never around a database call)
            report = build_report(profile, label=capture.label, rate=rate_of(capture))
        comparison = _compare_with_previous(capture, report)
        with paused_gc(freeze=True):
            folded, saved = write_outputs(profile, tempfile.mkdtemp(dir=work))
        mine.check()
        _store_result(mine, capture, report, comparison, folded, saved)


def write_outputs(profile, folder: str) -> tuple[str, str]:
    """(the folded stacks, the saved profile) as files in `folder`: written to disk, not
    into memory first (a 2M-sample profile is 120 MB; in a BytesIO it was the worker's
    peak). benchmarks/bench_size.py measures this function."""
    folded, saved = os.path.join(folder, "folded"), os.path.join(folder, "profile")
    # (the samples of the event the page shows, named as it names them: the download
    # of the page's flame graph)
    event = profile.default_event()
    opts = FoldOptions(weight="samples", names_as_shown=True,
                       event=None if event is None else profile.events[event].name)
    with open(folded, "w", encoding="utf-8", newline="\n") as f:
        for line in folded_lines(fold(profile, opts)):
            f.write(line)
            f.write("\n")
    with open(saved, "wb") as f:
        profile_io.dump(profile, f)
    return folded, saved


def _store_result(mine: Claim, capture: Capture, report: dict, comparison: dict | None,
                  folded: str, profile: str) -> None:
    """Files first (they may be slow to write, and the row lock would hold up this
    attempt's own heartbeat), then the rows under the lock, if the capture is still
    ours; a lost claim leaves no files behind. `folded` and `profile` are paths."""
    result = AnalysisResult(capture=capture, analysis_version=ANALYSIS_VERSION,
                            report=report, comparison=comparison)
    for field, path in ((result.folded, folded), (result.profile, profile)):
        with open(path, "rb") as f:
            field.save(os.path.basename(path), _Output(f), save=False)
    try:
        with mine.final():
            replaced = AnalysisResult.objects.filter(capture=capture,
                                                     analysis_version=ANALYSIS_VERSION)
            # the files of the result this one replaces go too, once it has (a retry or
            # new symbol files left them in storage, unnamed by any row)
            old = [(f.storage, f.name) for r in replaced for f in (r.folded, r.profile) if f]
            replaced.delete()
            transaction.on_commit(lambda: deletion.remove_files(old))
            result.save()
            if mine.finish(Status.DONE, progress=100, error=""):
                # a regression verdict's webhook notification, in this transaction: one
                # per verdict, sent once it commits (services/webhooks.py); in a
                # savepoint, so that its failure loses the message, not the result
                try:
                    with transaction.atomic():
                        webhooks.notify(capture, comparison)
                except Exception:  # noqa: BLE001 - whatever it was, the result stands
                    log.exception("capture %s: its webhook notification was not made",
                                  capture.pk)
    except BaseException:
        for f in (result.folded, result.profile):
            f.storage.delete(f.name)
        raise


class _Output(File):
    """An output file of the work folder, which is removed afterwards: local storage
    moves it into place (Django's FileSystemStorage does for any file that has a
    temporary path: a rename on one filesystem, a copy across two), instead of copying
    the 16 MB profile of a 240,000-sample capture; a bucket reads it as any file."""

    def temporary_file_path(self) -> str:
        return self.file.name


def _compare_with_previous(capture: Capture, report: dict) -> dict | None:
    """The engine's comparison with the previous build's capture of the same label,
    stored beside the report (which stays the capture's own diagnosis): its regression
    finding is shown with the findings, its verdict on the compare page."""
    report["compared_with"] = None
    prev = history.previous_capture(capture)
    prev_result = prev.latest_result() if prev is not None else None
    if prev_result is None or not prev_result.profile:  # (an old result without one)
        return None
    rates = history.label_rate(prev), history.label_rate(capture)
    # from the two reports alone: the previous build's saved profile is not loaded (it
    # was 0.07-0.15 s of every upload, and a profile in the worker's cache)
    with paused_gc(freeze=True):
        cmp = compare.compare_reports(prev_result.report, report, rates[0], rates[1],
                                      repeats=(history.label_reports(prev),
                                               history.label_reports(capture)))
    report["compared_with"] = {"capture": prev.pk, "build": prev.build.version,
                               "cpus_before": cmp["cpus_before"],
                               "cpus_change": cmp["cpus_change"],
                               "verdict": cmp["verdict"]}
    cmp["before"] = {"id": prev.pk, "build": prev.build.version, "label": prev.label}
    return cmp
