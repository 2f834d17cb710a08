"""Settings for the test suite: real PostgreSQL and Redis on this machine (started by
.ci/run when down), a Redis database per pytest-xdist worker and a queue per test
process, so the Celery workers a test starts (which inherit the environment) take only
that process's tasks.

Two suites may run on one machine at once (two checkouts, CI beside a developer), so
everything they share is named per run: the run's name is made once by the process
that starts pytest and inherited by its xdist workers and every service a test starts.
Test databases are test_perfweb_<run>_gwN (fixed names let one run drop the other's
database in the middle of its tests), and every Redis key the broker and the cache write
starts with perfweb-test-<run>-gwN: (kombu's global_keyprefix)."""
import os
import secrets
import tempfile

# the pid says whose run it was, so a later run can drop the databases of runs that were
# killed (tests/conftest.py); the random part keeps a reused pid from meaning that run
os.environ.setdefault("PERFWEB_TEST_RUN", f"{os.getpid()}x{secrets.token_hex(3)}")
RUN = os.environ["PERFWEB_TEST_RUN"]
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
    os.environ["PERFWEB_REDIS_PREFIX"] = f"perfweb-test-{RUN}-{_worker}:"
    # each test process is a host of its own: the compute slots (flocks on files in this
    # folder: perfweb/captures/compute_slots.py) of one live server are not taken by the
    # other worker's browser test or another run
    os.environ["PERFWEB_COMPUTE_SLOTS_DIR"] = os.path.join(
        tempfile.gettempdir(), f"perfweb-test-{RUN}-{_worker}-slots")

# static files from the source folders, under their plain names (no manifest: see
# perfweb/static_storage.py), whatever a collectstatic left in ./var/static; the test of
# the deployed setup collects into a folder of its own
os.environ.setdefault("STATIC_ROOT", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "var", "test-static"))

from .settings import *  # noqa: E402,F401,F403

DATABASES["default"].setdefault("TEST", {})["NAME"] = f"test_perfweb_{RUN}"  # noqa: F405
# pytest-django adds _gwN per xdist worker

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test logins
# no test asks a debuginfod server it did not start (the developer's shell may export
# DEBUGINFOD_URLS=https://debuginfod.debian.net); a test sets its own
DEBUGINFOD_URLS = ""
