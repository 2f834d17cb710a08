"""Every capture is analysed by one attempt at a time and only that attempt's writes
count: two workers racing on one capture, a stalled worker waking after the sweep gave
its capture to another, and a worker killed with SIGKILL (its beat child and temporary
folder must not outlive it), all with real Celery worker processes."""
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files import File
from django.utils import timezone

from perfweb.captures import claims, pipeline, work_dirs
from perfweb.captures.models import AnalysisResult, Build, Capture, Service, Team

from .conftest import ROOT, SPINPOOL, queued, service_env, stop, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: fast heartbeats, so a dead worker is noticed in seconds, not the default 30 s
FAST = {"PERFWEB_HEARTBEAT_S": "0.5", "PERFWEB_HEARTBEAT_STALE_S": "2",
        "PERFWEB_SWEEP_EVERY_S": "1"}


def _capture(name="1.1.0-busy.perf.data", label="busy") -> Capture:
    team = Team.objects.get(name="inference")
    service, _ = Service.objects.get_or_create(team=team, name="svc")
    build, _ = Build.objects.get_or_create(service=service, version="1")
    with open(SPINPOOL / name, "rb") as f:
        capture = Capture(build=build, original_name=name,
                          sha256=(name + label).ljust(64, "0")[:64], size=1, label=label)
        capture.file.save(name, File(f), save=False)
        capture.save()
    return capture


def _log(tmp_path, n) -> str:
    return (tmp_path / f"worker-{n}.log").read_text(errors="replace")


def _outcomes(text: str) -> list[str]:
    return [line.rsplit(": ", 1)[1].strip("'") for line in text.splitlines()
            if "analyze_capture" in line and " succeeded in " in line]


def test_a_claim_is_taken_once_and_a_released_one_writes_nothing(member):
    capture = _capture()
    first = claims.claim(capture.pk)
    assert first is not None
    assert claims.claim(capture.pk) is None  # owned by a live attempt
    assert pipeline.retry(Capture.objects.get(pk=capture.pk)) is False  # not finished
    first.update(progress=40)  # ... so the retry took nothing from the live attempt
    claims.release(capture.pk, Capture.ACTIVE)  # the sweep, with a dead worker's capture
    with pytest.raises(claims.ClaimLost):
        first.update(progress=50)
    second = claims.claim(capture.pk)
    assert second is not None
    assert first.finish(Capture.Status.FAILED, error="late") is False
    second.update(progress=60)
    got = Capture.objects.get(pk=capture.pk)
    assert (got.status, got.progress, got.error, got.attempts) == ("parsing", 60, "", 2)


def test_two_workers_racing_on_one_capture_leave_one_result(member, worker_factory,
                                                            tmp_path):
    worker_factory({"PERFWEB_STAGE_DELAY_S": "1"})
    worker_factory({"PERFWEB_STAGE_DELAY_S": "1"})
    capture = _capture()
    time.sleep(3)  # both workers consuming
    assert pipeline.send(capture.pk) and pipeline.send(capture.pk)
    wait_for(lambda: len(_outcomes(_log(tmp_path, 0)) + _outcomes(_log(tmp_path, 1))) == 2,
             timeout=120)
    outcomes = sorted(_outcomes(_log(tmp_path, 0)) + _outcomes(_log(tmp_path, 1)))
    assert outcomes == ["done", "skipped"]
    done = Capture.objects.get(pk=capture.pk)
    assert (done.status, done.attempts, done.claim) == ("done", 1, "")
    assert AnalysisResult.objects.filter(capture=capture).count() == 1


def test_a_stalled_worker_waking_late_never_overwrites(member, worker_factory, settings,
                                                       tmp_path):
    settings.PERFWEB_HEARTBEAT_STALE_S = 2
    stalled = worker_factory({**FAST, "PERFWEB_STAGE_DELAY_S": "2"})
    capture = _capture()
    time.sleep(2)
    pipeline.send(capture.pk)
    wait_for(lambda: Capture.objects.get(pk=capture.pk).status in Capture.ACTIVE)
    os.kill(stalled.pid, signal.SIGSTOP)  # no heartbeat, no progress: looks dead
    try:
        time.sleep(3)
        assert pipeline.sweep() == {"requeued": 1, "failed": 0}
        worker_factory(FAST)
        first = wait_for(lambda: AnalysisResult.objects.filter(capture=capture).first(),
                         timeout=120)
    finally:
        os.kill(stalled.pid, signal.SIGCONT)
    wait_for(lambda: _outcomes(_log(tmp_path, 0)) == ["skipped"], timeout=60)
    assert "was taken back while this attempt ran" in _log(tmp_path, 0)
    done = Capture.objects.get(pk=capture.pk)
    assert (done.status, done.attempts, done.error) == ("done", 2, "")
    assert list(AnalysisResult.objects.filter(capture=capture)) == [first]
    assert first.report["samples"] == 154
    stored = sorted(p.name for p in (Path(settings.MEDIA_ROOT) / "results").iterdir())
    assert stored == sorted(Path(f.name).name for f in (first.folded, first.profile))


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_killed_worker_is_taken_back_and_leaves_nothing_running(member, worker_factory,
                                                                  tmp_path):
    beat = ["--pool=solo", "--beat", "--schedule", str(tmp_path / "beat-{}")]
    env = {**FAST, "PERFWEB_STAGE_DELAY_S": "3"}
    first = worker_factory(env, args=[a.format(0) for a in beat])
    capture = _capture()
    time.sleep(2)
    pipeline.send(capture.pk)
    wait_for(lambda: Capture.objects.get(pk=capture.pk).status in Capture.ACTIVE)
    kids = wait_for(lambda: _children(first.pid))  # the embedded beat
    folders = wait_for(lambda: [p for p in Path(work_dirs.root()).glob(f"{first.pid}-*")])
    os.kill(first.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    first.wait()
    wait_for(lambda: not any(_alive(k) for k in kids), timeout=10)
    worker_factory(env, args=[a.format(1) for a in beat])
    done = wait_for(lambda: Capture.objects.filter(pk=capture.pk, status="done").first(),
                    timeout=120)
    taken_back_in = time.monotonic() - killed_at
    assert done.attempts == 2
    assert taken_back_in < 30, taken_back_in  # 2 s stale + 1 s sweep + 3 stages x 3 s
    assert not any(p.exists() for p in folders)


def test_a_dead_workers_capture_goes_ahead_of_the_backlog(member, worker_factory,
                                                          tmp_path):
    """Three uploads queued, and a capture a dead worker left half-done: the worker that
    starts sends the sweep on connecting, the sweep takes the capture back, and both go
    ahead of the backlog (priority 0, kombu's first list), so it is analysed first. It
    was analysed last: the sweep and the capture it sent again were queued behind every
    upload (and the beat's sweep is sent ahead too)."""
    backlog = [_capture(label=f"backlog-{n}") for n in range(3)]
    for capture in backlog:
        assert pipeline.send(capture.pk)
    dead = _capture(label="dead-worker's")
    Capture.objects.filter(pk=dead.pk).update(
        status="parsing", attempts=1, claim="a" * 32,
        heartbeat_at=timezone.now() - timedelta(hours=1))
    assert queued() == [0, 0, 3, 0]  # uploads: priority 6

    beat = subprocess.Popen(  # the beat alone, as docker-compose's worker embeds it
        [sys.executable, "-m", "celery", "-A", "perfweb", "beat", "--schedule",
         str(tmp_path / "beat"), "--loglevel=INFO"], cwd=ROOT,
        env=service_env({"PERFWEB_SWEEP_EVERY_S": "1"}), stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: queued()[0] >= 1, timeout=60)  # its sweep: priority 0
    finally:
        stop([beat])
    assert queued()[1:] == [0, 3, 0]

    worker_factory()
    wait_for(lambda: Capture.objects.filter(status="done").count() == 4, timeout=180)
    order = list(Capture.objects.order_by("finished_at").values_list("label", flat=True))
    assert order[0] == "dead-worker's", order
    assert Capture.objects.get(pk=dead.pk).attempts == 2
