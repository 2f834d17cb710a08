"""The Celery app. Tasks live in the apps (perfweb/captures/tasks.py) and stay thin."""
import os
import resource

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfweb.settings")

app = Celery("perfweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def limit_memory(**kwargs) -> None:
    """The analysis may use PERFWEB_WORKER_MEMORY_MB of address space beyond what the
    worker itself holds; past it, allocations fail with MemoryError, which fails that
    capture with a message (pipeline.py) and leaves the worker serving the others.
    Prefork children inherit the limit."""
    from django.conf import settings
    mb = settings.PERFWEB_WORKER_MEMORY_MB
    if not mb:
        return
    base = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                base = int(line.split()[1]) * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = base + mb * (1 << 20)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
