"""The broker goes away and comes back: workers keep running, uploads keep their
captures, and every capture is analysed (a private Redis, killed and started again)."""
import json
import time
import urllib.request

import pytest
import redis
import yaml

from perfweb.captures.api_tokens import create_token
from perfweb.captures.management.commands.rundev import worker_args
from perfweb.captures.models import Capture

from .conftest import ROOT, SPINPOOL, _free_port, wait_for
from .test_limits_and_faults import _cli, _private_redis, _redis_up

pytestmark = pytest.mark.django_db(transaction=True)


def _compose_worker_flags(tmp) -> list[str]:
    """The worker's flags in docker-compose.yml, its schedule file moved to `tmp`."""
    command = yaml.safe_load((ROOT / "docker-compose.yml").read_text())[
        "services"]["worker"]["command"].split()
    assert command[:4] == ["celery", "-A", "perfweb", "worker"], command
    return [f.replace("/data/", f"{tmp}/") for f in command[4:]
            if not f.startswith("--loglevel")]


@pytest.mark.parametrize("flags", [_compose_worker_flags, worker_args],
                         ids=["docker-compose", "make-run"])
def test_worker_survives_redis_dying_mid_task(member, server_factory, worker_factory,
                                              tmp_path, flags):
    port = _free_port()
    redis_proc = _private_redis(port, tmp_path)
    wait_for(lambda: _redis_up(port), timeout=20)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "PERFWEB_STAGE_DELAY_S": "4"}
    url = server_factory(env)
    worker = worker_factory(env, args=flags(str(tmp_path)))
    key = create_token(member, "ci")
    try:
        r = _cli(url, key, SPINPOOL / "1.1.0-busy.perf.data", "--service", "svc",
                 "--build", "b1")
        assert r.returncode == 0, r.stderr
        wait_for(lambda: Capture.objects.filter(status__in=Capture.ACTIVE).exists())
        redis_proc.kill()
        redis_proc.wait()
        time.sleep(3)  # the task finishes while Redis is away
        redis_proc = _private_redis(port, tmp_path)
        wait_for(lambda: _redis_up(port), timeout=20)
        wait_for(lambda: Capture.objects.filter(status="done").count() == 1, timeout=120)
        time.sleep(3)
        assert worker.poll() is None, (tmp_path / "worker-0.log").read_text()[-3000:]
        r = _cli(url, key, SPINPOOL / "1.1.0-idle.perf.data", "--service", "svc",
                 "--build", "b2")
        assert r.returncode == 0, r.stderr
        wait_for(lambda: Capture.objects.filter(status="done").count() == 2, timeout=120)
        assert worker.poll() is None, (tmp_path / "worker-0.log").read_text()[-3000:]
    finally:
        redis_proc.kill()
        redis_proc.wait()


def test_uploads_while_redis_is_down_are_kept_and_analysed_when_it_returns(
        member, server_factory, worker_factory, tmp_path):
    port = _free_port()  # nothing listens there yet
    # the default 5-minute grace for lost messages: these were never sent, and go at once
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "PERFWEB_SWEEP_EVERY_S": "1"}
    url = server_factory(env)
    key = create_token(member, "ci")
    answer = _upload(url, key, "1.1.0-busy.perf.data", "b1")
    assert answer["status"] == "queued", answer
    r = _cli(url, key, SPINPOOL / "1.1.0-idle.perf.data", "--service", "svc", "--build", "b2")
    assert r.returncode == 0, r.stderr
    assert sorted(Capture.objects.values_list("status", "unsent")) == [("queued", True)] * 2
    redis_proc = _private_redis(port, tmp_path)
    try:
        wait_for(lambda: _redis_up(port), timeout=20)
        worker_factory(env, args=["--pool=solo", "--beat", "--schedule",
                                  str(tmp_path / "beat")])
        wait_for(lambda: Capture.objects.filter(status="done").count() == 2, timeout=120)
    finally:
        redis_proc.kill()
        redis_proc.wait()


def test_captures_queued_when_redis_died_are_analysed_soon_after_it_returns(
        member, server_factory, worker_factory, tmp_path):
    """A private Redis without persistence killed for 15 s while two captures wait in
    it, their messages lost with it. The sweep knows (they were sent under a run id that
    is no longer the server's) and runs as soon as the worker is back on the broker: both
    finish within 30 s of Redis's return, with the default sweep and grace. They finished
    296 s after: the sweep guessed a message lost only 5 minutes after `updated_at`."""
    port = _free_port()
    redis_proc = _private_redis(port, tmp_path)
    wait_for(lambda: _redis_up(port), timeout=20)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "PERFWEB_STAGE_DELAY_S": "1"}
    url = server_factory(env)
    worker = worker_factory(env, args=worker_args(str(tmp_path)))  # one process, beat
    key = create_token(member, "ci")
    try:
        busy = _upload(url, key, "1.1.0-busy.perf.data", "b1")["id"]
        wait_for(lambda: Capture.objects.filter(pk=busy, status__in=Capture.ACTIVE).exists())
        waiting = [_upload(url, key, name, version)["id"] for name, version in (
            ("1.1.0-idle.perf.data", "b2"), ("1.0.0-idle.perf.data", "b3"))]
        run = redis.Redis(port=port).info("server")["run_id"]
        assert set(Capture.objects.filter(pk__in=waiting).values_list(
            "status", "sent_run")) == {("queued", run)}
        redis_proc.kill()
        redis_proc.wait()
        time.sleep(15)
        redis_proc = _private_redis(port, tmp_path)
        wait_for(lambda: _redis_up(port), timeout=20)
        back = time.monotonic()
        wait_for(lambda: Capture.objects.filter(pk__in=waiting, status="done").count() == 2,
                 timeout=60)
        took = time.monotonic() - back
        assert took < 30, took
        assert Capture.objects.get(pk=busy).status == "done"
        assert worker.poll() is None, (tmp_path / "worker-0.log").read_text()[-3000:]
    finally:
        redis_proc.kill()
        redis_proc.wait()


def _upload(url: str, key: str, name: str, version: str) -> dict:
    """`name` (a spinpool file) uploaded through the API as build `version` of "svc";
    the capture's JSON (201)."""
    with open(SPINPOOL / name, "rb") as f:
        body, boundary = _multipart(f.read(), version)
    req = urllib.request.Request(
        url + "/api/v1/captures/", data=body, method="POST",
        headers={"Authorization": f"Token {key}",
                 "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 201
        return json.loads(r.read())


def _multipart(capture: bytes, version: str = "b1") -> tuple[bytes, str]:
    boundary = "perfwebtestboundary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
             .encode() for k, v in (("service", "svc"), ("version", version))]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="capture"; '
                 f'filename="busy.perf.data"\r\nContent-Type: application/octet-stream'
                 f'\r\n\r\n'.encode() + capture + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), boundary
