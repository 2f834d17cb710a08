"""The Celery app. Tasks live in the apps (perfweb/captures/tasks.py) and stay thin."""
import os
import resource

from celery import Celery
from celery.signals import (beat_embedded_init, worker_init, worker_process_init,
                            worker_ready)

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


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the worker that started it dies (even by
    SIGKILL, which gives the worker no chance to stop its children): an orphaned beat
    would go on sweeping beside the next worker's, an orphaned pool process would go on
    writing for a capture the sweep has taken back."""
    import ctypes
    import signal
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PDEATHSIG
    except (OSError, AttributeError):  # not Linux: nothing to ask
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


@beat_embedded_init.connect
def beat_dies_with_worker(**kwargs) -> None:
    _die_with_parent()


@worker_process_init.connect
def pool_process_dies_with_worker(**kwargs) -> None:
    _die_with_parent()


@worker_init.connect
def remove_orphaned_work_dirs(**kwargs) -> None:
    """The folders of analyses whose worker was killed on this host."""
    from perfweb.captures import work_dirs
    work_dirs.remove_orphans()


@worker_ready.connect
def sweep_at_start(**kwargs) -> None:
    """A worker (re)started after a crash takes back what the dead one held without
    waiting for the first beat."""
    from perfweb.captures.tasks import sweep_captures
    sweep_captures.delay()
