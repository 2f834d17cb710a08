"""Web tests run against the real services: PostgreSQL and Redis on this machine, and a
real Celery worker process started per test that needs one."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]
SPINPOOL = ROOT.parent / "shared" / "corpus" / "cases" / "spinpool"


def stop(procs) -> None:
    """SIGTERM (a warm shutdown) to all at once, then SIGKILL to those still running
    10 s later (one after the other, two workers took twice one's shutdown)."""
    live = [proc for proc in procs if proc.poll() is None]
    for proc in live:
        proc.send_signal(signal.SIGTERM)
    end = time.monotonic() + 10
    for proc in live:
        try:
            proc.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def worker_factory(transactional_db, tmp_path):
    """Start Celery worker processes on the test database; stopped after the test."""
    procs = []

    def start(extra_env=None, pool="solo", args=None):
        """`args` replaces the test flags, e.g. with the deployed command line's."""
        env = service_env(extra_env)
        log = open(tmp_path / f"worker-{len(procs)}.log", "wb")
        flags = args if args is not None else [
            f"--pool={pool}", "--concurrency=1", "--without-gossip", "--without-mingle",
            "--without-heartbeat"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "perfweb", "worker", *flags,
             "--loglevel=INFO", "-n", f"test{len(procs)}@%h"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    yield start
    stop(procs)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    os.environ["MEDIA_ROOT"] = settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def empty_queue(settings):
    """Each test starts with this test process's queue empty."""
    redis.Redis.from_url(settings.REDIS_URL).delete(
        *queue_keys(settings.CELERY_TASK_DEFAULT_QUEUE))


@pytest.fixture(autouse=True)
def fresh_rate_limits(settings):
    """Each test starts with nothing counted against a rate limit: the counters are this
    run's keys in Redis, kept for a window, and every test of a process comes from one
    address (perfweb/captures/rate_limits.py)."""
    r = redis.Redis.from_url(settings.REDIS_URL)
    for key in r.scan_iter(match=f"{settings.PERFWEB_REDIS_PREFIX}:*:rl:*", count=1000):
        r.delete(key)


def redis_key(name: str) -> str:
    """The key Celery's broker writes for `name` (a queue): with this run's prefix."""
    from django.conf import settings
    return settings.PERFWEB_REDIS_PREFIX + name


def queue_keys(name: str) -> list[str]:
    """The Redis lists of queue `name`, one per priority step, in the order a worker
    takes from them (kombu's Redis transport; perfweb/priorities.py)."""
    from kombu.transport.redis import PRIORITY_STEPS, Channel
    return [redis_key(name if step == 0 else f"{name}{Channel.sep}{step}")
            for step in PRIORITY_STEPS]


def queued(redis_url: str | None = None) -> list[int]:
    """How many messages this test's queue holds at each priority step (0, 3, 6, 9)."""
    from django.conf import settings
    r = redis.Redis.from_url(redis_url or settings.REDIS_URL)
    return [r.llen(key) for key in queue_keys(settings.CELERY_TASK_DEFAULT_QUEUE)]


def wait_for(predicate, timeout=90.0, every=0.25):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting")


def analysed(user, path: Path, service: str, version: str, label: str, symbols=()):
    """`path` uploaded by `user` to the "inference" team, with `symbols` for its build,
    and analysed in this process; the finished Capture (the test fails here if the
    analysis did not finish)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from perfweb.captures import services
    from perfweb.captures.models import Capture, Team
    from perfweb.captures.uploads import store_upload
    form = {"service": service, "version": version, "label": label,
            "capture": SimpleUploadedFile(path.name, path.read_bytes())}
    if symbols:
        form.update(symbols=[SimpleUploadedFile(s.name, s.read_bytes()) for s in symbols],
                    symbols_for_build=True)
    c, _ = store_upload(user, Team.objects.get(name="inference"), form)
    services.run_analysis(c.pk)
    capture = Capture.objects.get(pk=c.pk)
    assert capture.status == "done", capture.error
    return capture


def spinpool(user, version: str, label: str):
    """The spinpool capture `version`-`label` with its build's symbol bundle and its perf
    archive, analysed for `user` in the "inference" team's llm-api service."""
    return analysed(user, SPINPOOL / f"{version}-{label}.perf.data", "llm-api", version,
                    label, symbols=(SPINPOOL / f"symbols-{version}.zip",
                                    SPINPOOL / f"{version}-{label}.perf.data.tar.bz2"))


def _user_in_team(user_model, username: str, team_name: str):
    from perfweb.captures.models import Membership, Team
    user = user_model.objects.create_user(username, password=f"pw-{username}-123")
    Membership.objects.create(team=Team.objects.create(name=team_name), user=user)
    return user


@pytest.fixture
def member(django_user_model):
    return _user_in_team(django_user_model, "alice", "inference")


@pytest.fixture
def outsider(django_user_model):
    return _user_in_team(django_user_model, "mallory", "elsewhere")


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def service_env(extra=None) -> dict:
    """The environment our processes (gunicorn, Celery, manage.py) get in these tests:
    the test database, this test's media folder and queue, plus `extra`."""
    from django.conf import settings
    from django.db import connection
    env = dict(os.environ)
    db = connection.settings_dict
    env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env["DJANGO_SETTINGS_MODULE"] = "perfweb.settings_test"
    env["MEDIA_ROOT"] = str(settings.MEDIA_ROOT)
    env.update(extra or {})
    return env


@pytest.fixture
def server_factory(transactional_db, tmp_path):
    """Start gunicorn as deployed (perfweb.wsgi with perfweb/gunicorn_conf.py, sync
    workers) on a free port; stopped after the test. `preexec` runs in the child before
    exec (resource limits); `args` replaces the options after the bind address, e.g. with
    the deployed command line's. Its stdout and stderr go to tmp_path/gunicorn-N.log."""
    import urllib.request
    procs = []

    def start(extra_env=None, workers=2, preexec=None, args=None):
        port = _free_port()
        log = open(tmp_path / f"gunicorn-{len(procs)}.log", "wb")
        options = args if args is not None else [
            "-c", "python:perfweb.gunicorn_conf", "--workers", str(workers),
            "--timeout", "120", "--log-level", "warning"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "perfweb.wsgi", "--bind", f"127.0.0.1:{port}",
             *options],
            cwd=ROOT, env=service_env(extra_env), stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=preexec)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"

        def up():
            if proc.poll() is not None:
                raise AssertionError((tmp_path / f"gunicorn-{len(procs) - 1}.log").read_text())
            try:
                return urllib.request.urlopen(url + "/login/", timeout=2).status == 200
            except OSError:
                return False
        wait_for(up, timeout=60)
        return url

    yield start
    stop(procs)
