"""Temporary folders of analyses, removed even when their worker was killed.

A worker killed with SIGKILL cannot remove its own folder, so each folder is named after
the process that made it (pid and its start time, which tell a live process from a
later one given the same pid), and the next worker to start, or the next analysis on
the host, removes the folders of processes that are gone."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile


def root() -> str:
    return os.path.join(tempfile.gettempdir(), "perfweb-work")


def _started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()  # after "pid (comm) "
    return fields[19].decode()


@contextlib.contextmanager
def work_dir():
    """A new folder for one analysis, removed afterwards."""
    os.makedirs(root(), exist_ok=True)
    pid = os.getpid()
    path = tempfile.mkdtemp(prefix=f"{pid}-{_started(pid)}-", dir=root())
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_orphans() -> int:
    """Remove the folders whose process no longer runs; how many were removed."""
    removed = 0
    try:
        names = os.listdir(root())
    except FileNotFoundError:
        return 0
    for name in names:
        pid, _, rest = name.partition("-")
        started = rest.partition("-")[0]
        if not pid.isdigit() or _started(int(pid)) == started:
            continue
        shutil.rmtree(os.path.join(root(), name), ignore_errors=True)
        removed += 1
    return removed
