"""Exports made once per host and kept on its disk, then streamed from there.

An export of a large capture takes seconds (the 158,000-sample capture's Firefox file
3.6 s, its `perf script` text 121 MB built in memory as one string), and the same file
was made again for every download. Now each is written once into
PERFWEB_CACHE_DIR/exports/<profile>/<key>, the key naming the result's stored profile
(so another analysis of the capture is another file), the format and the selection;
later downloads, from any web process of the host, stream that file. A process making
a file holds the profile's lock, so others asking for it at the same moment wait for
that one instead of making it too. The folder holds at most PERFWEB_EXPORT_CACHE_BYTES
(least recently used go first) and no file unused for PERFWEB_EXPORT_CACHE_IDLE_S;
deleting a capture removes its files on the host that deletes it, that limit on the
others.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import BinaryIO, Callable

from django.conf import settings

_SUFFIX = ".export"


def _root() -> Path:
    return Path(settings.PERFWEB_CACHE_DIR) / "exports"


def _folder(profile_name: str) -> Path:
    return _root() / hashlib.sha256(profile_name.encode()).hexdigest()[:32]


def cached(profile_name: str, key: str, make: Callable[[BinaryIO], None]) -> BinaryIO:
    """The file of export `key` of the stored profile `profile_name`, open for reading,
    made by `make(file)` unless a request made it before; an exception from `make`
    leaves no file. (Open before the folder is trimmed: a file larger than the whole
    budget is still served, once.)"""
    folder = _folder(profile_name)
    path = folder / (hashlib.sha256(key.encode()).hexdigest()[:40] + _SUFFIX)
    found = _open(path)
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
        found = _open(path)  # another process made it while this one waited?
        if found is None:
            fd, part = tempfile.mkstemp(dir=folder, suffix=".part")
            try:
                with os.fdopen(fd, "wb") as f:
                    make(f)
                os.replace(part, path)
            except BaseException:
                os.unlink(part)
                raise
            found = open(path, "rb")
    trim()
    return found


def _open(path: Path) -> BinaryIO | None:
    """The file open for reading and marked as used now (the trim's order), or None."""
    try:
        os.utime(path)
        return open(path, "rb")
    except FileNotFoundError:
        return None


def forget(profile_name: str) -> None:
    """Remove the exports of a stored profile (its capture was deleted)."""
    shutil.rmtree(_folder(profile_name), ignore_errors=True)


def trim() -> None:
    """Files unused past the idle limit, then the least recently used until the folder
    fits its budget. (Folders stay: a process may be making a file in one.)"""
    budget = settings.PERFWEB_EXPORT_CACHE_BYTES
    idle = time.time() - settings.PERFWEB_EXPORT_CACHE_IDLE_S
    files = []
    for path in _root().glob(f"*/*{_SUFFIX}"):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        files.append((st.st_mtime, st.st_size, path))
    files.sort()
    held = sum(size for _, size, _ in files)
    for mtime, size, path in files:
        if held <= budget and mtime >= idle:
            break
        path.unlink(missing_ok=True)
        held -= size
