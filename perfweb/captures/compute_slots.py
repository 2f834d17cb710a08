"""At most PERFWEB_COMPUTE_SLOTS requests compute explorer data or exports at once on a
host; the next one gets 429 with Retry-After: 1 (the page asks again), not a wait.

gunicorn's sync workers each serve one request at a time. Rate limits bound what a
share link or an address may ask over a minute, but a burst inside that (six heavy
requests at once) held every worker of the host for seconds, and the login page waited
behind them (11 s on a 158,000-sample capture even after each request's work was
bounded). With fewer slots than workers, the others stay free for every other page.

A slot is an exclusive flock on one of the files PERFWEB_COMPUTE_SLOTS_DIR/0..N-1,
taken without waiting and released when the request ends (or its process dies: the
kernel drops the lock with the file), so the processes of one host share them with no
server, and each host has its own.
"""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from typing import Iterator

from django.conf import settings


@contextmanager
def compute_slot() -> Iterator[bool]:
    """Whether a slot was free (then held until the block ends); always True when
    PERFWEB_COMPUTE_SLOTS is 0 (no limit)."""
    slots = int(settings.PERFWEB_COMPUTE_SLOTS)
    if slots <= 0:
        yield True
        return
    folder = settings.PERFWEB_COMPUTE_SLOTS_DIR
    os.makedirs(folder, exist_ok=True)
    start = os.getpid() % slots  # (processes try the slots in different orders)
    for k in range(slots):
        fd = os.open(os.path.join(folder, str((start + k) % slots)),
                     os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield True
        finally:
            os.close(fd)  # (the lock goes with the descriptor)
        return
    yield False
