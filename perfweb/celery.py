"""The Celery app. Tasks live in the apps (perfweb/captures/tasks.py) and stay thin."""
import logging
import os
import resource

from celery import Celery, bootsteps
from celery.signals import (after_setup_logger, after_setup_task_logger,
                            beat_embedded_init, worker_init, worker_process_init)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfweb.settings")

app = Celery("perfweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
log = logging.getLogger(__name__)


@after_setup_logger.connect
@after_setup_task_logger.connect
def scrub_tokens(logger=None, **kwargs) -> None:
    """Celery replaces the handlers Django's LOGGING set (it takes over the root
    logger): its own scrub tokens too (perfweb/token_scrub.py), with the pool's."""
    from celery.utils.log import get_multiprocessing_logger

    from perfweb.token_scrub import scrub_handlers
    scrub_handlers(logger, get_multiprocessing_logger())


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


class SweepOnConnect(bootsteps.StartStopStep):
    """Each time a worker's consumer (re)connects to the broker (at start, and after
    every outage), it sends the sweep, ahead of new work: a worker restarted after a
    crash takes back what the dead one held, and messages lost with a Redis restart are
    sent again as soon as a worker is back on the broker, without waiting for the beat
    (which sends the sweep every PERFWEB_SWEEP_EVERY_S only if it reconnected too)."""
    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, c):
        from perfweb.captures.tasks import sweep_captures
        from perfweb.priorities import FIRST
        try:
            sweep_captures.apply_async(priority=FIRST, retry=False)
        except Exception:  # noqa: BLE001 - the broker went again: the beat's sweep will
            log.warning("could not send the sweep on connecting", exc_info=True)


app.steps["consumer"].add(SweepOnConnect)
