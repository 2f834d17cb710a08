"""Clean-up of test runs that were killed: each run names its databases and Redis keys
after itself (perfweb/settings_test.py: `<pid>x<random>`), so what a killed run leaves
is never reused by a later one, but it stays until someone drops it. A run is dead when
no process with its pid is alive on this machine (the runs on one machine share its
PostgreSQL and Redis). Names that are not a run's are left alone."""
import os
import re

import psycopg
import redis

_RUN = re.compile(r"^(\d+)x[0-9a-f]+$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dead_run(run: str, own: str) -> bool:
    m = _RUN.match(run)
    return run != own and m is not None and not _alive(int(m.group(1)))


def drop_stale_runs(own: str) -> None:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/perfweb")
    if url.startswith("postgres"):
        admin = url.rsplit("/", 1)[0] + "/postgres"
        try:
            with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                names = [row[0] for row in conn.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE 'test_perfweb_%'")]
                for name in names:
                    run = re.sub(r"^test_perfweb_|_gw\d+$", "", name)
                    if _dead_run(run, own):
                        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.OperationalError:
            pass  # the suite's own connection says why, with the database's message
    server = re.sub(r"/\d*$", "", os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379")
    try:
        for db in range(16):
            r = redis.Redis.from_url(f"{server}/{db}", socket_connect_timeout=5)
            for key in r.scan_iter(match="perfweb-test-*", count=1000):
                run = key.decode(errors="replace").split("-")[2]
                if _dead_run(run, own):
                    r.delete(key)
    except redis.RedisError:
        pass
