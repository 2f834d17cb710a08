"""What bounds one analysis inside a worker: a deadline, and telling an out-of-memory
failure (RLIMIT_AS, set in perfweb/celery.py) from any other."""
from __future__ import annotations

import contextlib
import errno
import signal
import threading


class AnalysisTimeout(BaseException):
    """A BaseException, so no `except Exception` inside the analysis can swallow it."""


@contextlib.contextmanager
def deadline(seconds: int):
    """Raise AnalysisTimeout in the analysis after `seconds` (SIGALRM; the task runs in
    the main thread of its worker process, with the solo and the prefork pool alike).
    Celery's hard CELERY_TASK_TIME_LIMIT stays behind it, for code that never returns
    to Python."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise AnalysisTimeout()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def out_of_memory(e: BaseException | None) -> bool:
    """MemoryError, or an OS call refused for memory (ENOMEM), maybe while cleaning up
    after a MemoryError."""
    while e is not None:
        if isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM):
            return True
        e = e.__context__
    return False


def duration(seconds: int) -> str:
    return f"{seconds // 60}-minute" if seconds >= 120 and seconds % 60 == 0 else \
        f"{seconds}-second"
