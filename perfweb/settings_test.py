"""Settings for the test suite: real PostgreSQL and Redis on this machine (started by
.ci/run when down), a Redis database per pytest-xdist worker and a queue per test
process, so the Celery workers a test starts (which inherit the environment) take only
that process's tasks, even beside another test run."""
import os

_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
_n = int(_worker[2:] or 0) if _worker.startswith("gw") else 0
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/perfweb")
if os.environ.get("PERFWEB_TEST_FOR") != _worker:
    # a test process: its own Redis database and queue, even though pytest-xdist workers
    # inherit the environment of the controller process (which loaded these settings
    # too); the services a test starts inherit them, with any override the test gives
    os.environ["PERFWEB_TEST_FOR"] = _worker
    os.environ["REDIS_URL"] = f"redis://127.0.0.1:6379/{10 + _n}"
    os.environ["CELERY_TASK_DEFAULT_QUEUE"] = f"perfweb-test-{_worker}-{os.getpid()}"

# static files from the source folders, under their plain names (no manifest: see
# perfweb/static_storage.py), whatever a collectstatic left in ./var/static; the test of
# the deployed setup collects into a folder of its own
os.environ.setdefault("STATIC_ROOT", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "var", "test-static"))

from .settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test logins
# no test asks a debuginfod server it did not start (the developer's shell may export
# DEBUGINFOD_URLS=https://debuginfod.debian.net); a test sets its own
DEBUGINFOD_URLS = ""
