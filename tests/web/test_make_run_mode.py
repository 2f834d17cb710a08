"""`make run` mode for real: SQLite and Celery's filesystem broker under a fresh var/
folder, `manage.py rundev` with its worker and embedded beat. That broker never
delivers a message twice, so a worker killed with SIGKILL mid-task leaves its capture to
the heartbeat and the sweep; SQLite, written by the worker, its heartbeat thread and the
loader at once, must wait for its lock rather than drop a write."""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

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


def _worker_of(rundev_pid: int) -> int | None:
    """The Celery worker rundev started (its child running celery)."""
    for task in Path(f"/proc/{rundev_pid}/task").iterdir():
        for kid in (task / "children").read_text().split():
            try:
                cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
            except FileNotFoundError:
                continue
            if b"celery" in cmdline:
                return int(kid)
    return None


def test_killed_worker_in_make_run_mode_is_restarted_and_its_capture_taken_back(tmp_path):
    var = tmp_path / "var"
    env = _env(var)
    _manage(env, "migrate", "--noinput")
    assert "4 new capture(s)" in _manage(env, "load_demo", "--queue", "--path", str(SPINPOOL))
    log = open(tmp_path / "rundev.log", "wb")
    rundev = subprocess.Popen([sys.executable, "manage.py", "rundev", f"127.0.0.1:{_port()}"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        first = wait_for(lambda: _worker_of(rundev.pid), timeout=60)
        wait_for(lambda: any(s in ACTIVE for s in _statuses(var)), timeout=120)
        os.kill(first, signal.SIGKILL)
        killed_at = time.monotonic()
        second = wait_for(lambda: (_worker_of(rundev.pid) or first) != first and
                          _worker_of(rundev.pid), timeout=30)
        wait_for(lambda: _statuses(var) == ["done"] * 4, timeout=180)
        assert time.monotonic() - killed_at < 60
        text = (tmp_path / "rundev.log").read_text(errors="replace")
        assert f"worker exited (-9); started another (pid {second})" in text
        assert "database is locked" not in text
    finally:
        stop([rundev])
    assert not _alive(second)  # stopping rundev stops its worker


def test_in_make_run_mode_a_dead_workers_capture_goes_ahead_of_the_backlog(tmp_path):
    """The filesystem broker had no priorities (files were taken in the order they were
    written): the four demo captures queued, the last as a killed worker leaves it; the
    sweep rundev's worker sends on connecting and the capture it takes back are taken
    before the three others (their files' names begin with their priority)."""
    var = tmp_path / "var"
    env = _env(var)
    _manage(env, "migrate", "--noinput")
    _manage(env, "load_demo", "--queue", "--path", str(SPINPOOL))
    with sqlite3.connect(var / "db.sqlite3", timeout=30) as db:
        (dead,) = db.execute("SELECT max(id) FROM captures_capture").fetchone()
        db.execute("UPDATE captures_capture SET status = 'parsing', attempts = 1, "
                   "claim = 'dead', heartbeat_at = '2000-01-01 00:00:00' WHERE id = ?",
                   (dead,))
    files = sorted(p.name for p in (var / "broker" / "out").iterdir())
    assert len(files) == 4 and all(f.startswith("6_") for f in files)  # uploads: 6
    log = open(tmp_path / "rundev.log", "wb")
    rundev = subprocess.Popen([sys.executable, "manage.py", "rundev", f"127.0.0.1:{_port()}"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _statuses(var) == ["done"] * 4, timeout=180)
    finally:
        stop([rundev])
    with sqlite3.connect(var / "db.sqlite3", timeout=30) as db:
        order = [i for (i,) in db.execute(
            "SELECT id FROM captures_capture ORDER BY finished_at")]
    assert order[0] == dead, (order, dead)


def _port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _banner(tmp_path: Path, env: dict, name: str) -> str:
    """rundev's output up to and including its banner."""
    log_path = tmp_path / f"{name}.log"
    with open(log_path, "wb") as log:
        rundev = subprocess.Popen(
            [sys.executable, "manage.py", "rundev", f"127.0.0.1:{_port()}"], cwd=ROOT,
            env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: "stop it with Ctrl-C" in log_path.read_text(errors="replace"),
                     timeout=120)
        finally:
            stop([rundev])
    text = log_path.read_text(errors="replace")
    start = text.rindex("perfweb is running at")
    return text[text.rfind("\n", 0, start - 1):text.index("stop it with Ctrl-C") + 19]


def _can_sign_in(env: dict, password: str) -> bool:
    out = _manage(env, "shell", "-c", "from django.contrib.auth import get_user_model; "
                  "print(get_user_model().objects.get(username='demo')"
                  f".check_password({password!r}))")
    return out.strip().endswith("True")


def test_make_run_ends_with_a_banner_that_says_how_to_sign_in_every_time(tmp_path):
    """The first start shows the demo password once, in a banner after the start-up
    logs; later starts show the URL, the user and how to get a new password, which
    `load_demo --reset-password` (make demo-password) prints and which then works."""
    var = tmp_path / "var"
    env = _env(var)
    _manage(env, "migrate", "--noinput")
    out = _manage(env, "load_demo", "--queue", "--path", str(SPINPOOL))
    password = re.search(r"demo user: demo / password: (\S+)", out).group(1)
    first = _banner(tmp_path, env, "first")
    assert "perfweb is running at http://127.0.0.1:" in first
    assert f"sign in as demo, password {password} (shown this once" in first
    assert _can_sign_in(env, password)
    assert not (var / "demo-password").exists()  # shown once, not kept
    again = _manage(env, "load_demo", "--queue", "--path", str(SPINPOOL))
    assert password not in again and "make demo-password" in again
    second = _banner(tmp_path, env, "second")
    assert password not in second
    assert "sign in as demo; its password was printed when it was set: " \
           "`make demo-password` sets and prints a new one" in second
    reset = _manage(env, "load_demo", "--queue", "--reset-password", "--path", str(SPINPOOL))
    new = re.search(r"demo user: demo / password: (\S+)", reset).group(1)
    assert new != password and _can_sign_in(env, new) and not _can_sign_in(env, password)
    assert f"password {new} (shown this once" in _banner(tmp_path, env, "third")
