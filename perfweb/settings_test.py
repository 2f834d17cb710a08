"""Settings for the test suite: real PostgreSQL and Redis on this machine (started by
.ci/run when down), a queue and Redis database of their own per pytest-xdist worker."""
import os

_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
_n = int(_worker[2:] or 0) if _worker.startswith("gw") else 0
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/perfweb")
os.environ.setdefault("REDIS_URL", f"redis://127.0.0.1:6379/{10 + _n}")
os.environ.setdefault("CELERY_TASK_DEFAULT_QUEUE", f"perfweb-test-{_worker}")

from .settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast test logins
