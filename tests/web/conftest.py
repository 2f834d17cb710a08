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


@pytest.fixture
def worker_factory(transactional_db, tmp_path):
    """Start Celery worker processes on the test database; stopped after the test."""
    from django.conf import settings
    from django.db import connection

    procs = []

    def start(extra_env=None):
        env = dict(os.environ)
        db = connection.settings_dict
        env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        env["DJANGO_SETTINGS_MODULE"] = "perfweb.settings_test"
        env["MEDIA_ROOT"] = str(settings.MEDIA_ROOT)
        env.update(extra_env or {})
        log = open(tmp_path / f"worker-{len(procs)}.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "perfweb", "worker", "--pool=solo",
             "--loglevel=INFO", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "-n", f"test{len(procs)}@%h"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    os.environ["MEDIA_ROOT"] = settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def empty_queue(settings):
    """Each test starts with this test process's queue empty."""
    redis.Redis.from_url(settings.REDIS_URL).delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def wait_for(predicate, timeout=90.0, every=0.25):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting")


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
