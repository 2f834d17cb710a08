"""Two test suites on one machine (two checkouts, CI beside a developer) must not touch
each other's databases or Redis keys: everything they share is named per run
(perfweb/settings_test.py), and what a killed run left is dropped by a later one."""
import os
import subprocess
import sys

import psycopg
import redis

from tests.conftest import ROOT
from tests.stale_runs import drop_stale_runs

_SHOW = ("import perfweb.settings_test as s; "
         "print(s.DATABASES['default']['TEST']['NAME'], s.PERFWEB_REDIS_PREFIX, "
         "s.CELERY_BROKER_TRANSPORT_OPTIONS.get('global_keyprefix'), "
         "s.CELERY_TASK_DEFAULT_QUEUE)")


def _names(**env):
    """What a process starting with the environment of a shell plus `env` is given."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PERFWEB_", "PYTEST_", "CELERY_", "REDIS_", "DATABASE_"))}
    clean.update(env, REDIS_URL="redis://127.0.0.1:6379/10")
    out = subprocess.run([sys.executable, "-c", _SHOW], cwd=ROOT, env=clean, check=True,
                         capture_output=True, text=True).stdout.split()
    return dict(zip(("database", "prefix", "broker_prefix", "queue"), out))


def test_two_runs_get_different_databases_and_redis_keys():
    one, two = _names(), _names()
    assert one["database"].startswith("test_perfweb_") and one["prefix"].startswith(
        "perfweb-test-")
    assert one["database"] != two["database"]
    assert one["prefix"] != two["prefix"] and one["queue"] != two["queue"]
    assert one["broker_prefix"] == one["prefix"]  # kombu writes every key under it


def test_an_xdist_worker_shares_its_runs_database_name():
    run = "12345xabcdef"
    gw1 = _names(PERFWEB_TEST_RUN=run, PYTEST_XDIST_WORKER="gw1")
    assert gw1["database"] == f"test_perfweb_{run}"  # pytest-django adds _gw1
    assert gw1["prefix"] == f"perfweb-test-{run}-gw1:"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_killed_runs_databases_and_keys_are_dropped_and_a_live_ones_kept():
    dead, live = f"{_dead_pid()}x0badc0", f"{os.getpid()}x0c0ffe"
    admin = "postgres://postgres@127.0.0.1:5432/postgres"
    r = redis.Redis.from_url("redis://127.0.0.1:6379/15")
    with psycopg.connect(admin, autocommit=True) as conn:
        for run in (dead, live):
            conn.execute(f'CREATE DATABASE "test_perfweb_{run}_gw0"')
            r.set(f"perfweb-test-{run}-gw0:_kombu.binding.q", "x")
        try:
            drop_stale_runs(own="1x1")
            names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
            assert f"test_perfweb_{dead}_gw0" not in names
            assert f"test_perfweb_{live}_gw0" in names
            assert not r.exists(f"perfweb-test-{dead}-gw0:_kombu.binding.q")
            assert r.exists(f"perfweb-test-{live}-gw0:_kombu.binding.q")
        finally:
            conn.execute(f'DROP DATABASE IF EXISTS "test_perfweb_{live}_gw0"')
            conn.execute(f'DROP DATABASE IF EXISTS "test_perfweb_{dead}_gw0"')
            r.delete(f"perfweb-test-{live}-gw0:_kombu.binding.q",
                     f"perfweb-test-{dead}-gw0:_kombu.binding.q")
