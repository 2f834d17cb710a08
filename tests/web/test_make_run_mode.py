"""`make run` mode for real: SQLite and Celery's filesystem broker under a fresh var/
folder, the worker with its embedded beat exactly as rundev starts it. That broker never
delivers a message twice, so a worker killed with SIGKILL mid-task leaves its capture to
the heartbeat and the sweep; SQLite, written by the worker, its heartbeat thread and the
loader at once, must wait for its lock rather than drop a write."""
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from perfweb.captures.management.commands.rundev import worker_args

from .conftest import ROOT, SPINPOOL, stop, wait_for

ACTIVE = ("parsing", "symbolizing", "analyzing")


def _env(var: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_TASK_DEFAULT_QUEUE",
                        "PERFWEB_TEST_FOR", "MEDIA_ROOT")}
    env.update(DJANGO_SETTINGS_MODULE="perfweb.settings", PERFWEB_VAR_DIR=str(var),
               MEDIA_ROOT=str(var / "media"), PERFWEB_HEARTBEAT_S="0.5",
               PERFWEB_HEARTBEAT_STALE_S="2", PERFWEB_SWEEP_EVERY_S="1",
               PERFWEB_STAGE_DELAY_S="1")
    return env


def _statuses(var: Path) -> list[str]:
    with sqlite3.connect(var / "db.sqlite3", timeout=30) as db:
        return [s for (s,) in db.execute("SELECT status FROM captures_capture")]


def _manage(env, *args):
    r = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_killed_worker_in_make_run_mode_is_taken_back(tmp_path):
    var = tmp_path / "var"
    env = _env(var)
    _manage(env, "migrate", "--noinput")
    assert "4 new capture(s)" in _manage(env, "load_demo", "--queue", "--path", str(SPINPOOL))
    procs = []

    def worker(n):
        log = open(tmp_path / f"worker-{n}.log", "wb")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "perfweb", "worker", "--loglevel=INFO",
             *worker_args(str(var))], cwd=ROOT, env=env, stdout=log,
            stderr=subprocess.STDOUT))
        return procs[-1]

    try:
        first = worker(0)
        wait_for(lambda: any(s in ACTIVE for s in _statuses(var)), timeout=120)
        os.kill(first.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        first.wait()
        worker(1)
        wait_for(lambda: _statuses(var) == ["done"] * 4, timeout=180)
        assert time.monotonic() - killed_at < 60
        log = (tmp_path / "worker-1.log").read_text(errors="replace")
        assert "database is locked" not in log
    finally:
        stop(procs)
