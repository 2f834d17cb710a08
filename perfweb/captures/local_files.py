"""Stored files as paths on local disk, for the readers that want a path (storage may be
S3, where a file is downloaded into the caller's temporary folder first; a symbol file,
named by its content's SHA-256, is kept on the host in PERFWEB_CACHE_DIR/stored and
linked from there, so the next analysis of its build on this host downloads nothing).

The path ends in the name the user uploaded, not the storage name (a uuid), because the
engine's notes and errors name the files they read: "perf.data is damaged at ..." must
speak of the user's file."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

from django.conf import settings

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PART = re.compile(r"\.[0-9a-f]{64}\.([0-9]+)\.[0-9]+")  # a download: .DIGEST.PID.THREAD


MAX_NAME_BYTES = 200  # a file name may have 255 bytes; leave room


def safe_name(name: str) -> str:
    """The uploaded name as one harmless path component (it comes from the user): no
    separators or control characters, at most MAX_NAME_BYTES of UTF-8, its extension
    kept when it must be shortened."""
    name = _UNSAFE.sub("_", os.path.basename(name or "").strip())
    if len(name.encode()) > MAX_NAME_BYTES:
        stem, ext = os.path.splitext(name)
        ext = ext if len(ext.encode()) <= 16 else ""
        room = MAX_NAME_BYTES - len(ext.encode())
        name = stem.encode()[:room].decode(errors="ignore") + ext
    return name if name.strip(".") else "file"


def local_copy(field_file, folder: str, name: str, digest: str = "") -> str:
    """A path under `folder` named `name`: a link to the stored file on local storage, a
    copy otherwise (from the bucket: downloaded straight into it, perfweb.object_storage).
    Each file gets its own sub-folder, since uploaded names repeat. `digest`: the file's
    SHA-256 recorded on upload, to keep the downloaded file on this host (from_cache)."""
    path = os.path.join(tempfile.mkdtemp(dir=folder), safe_name(name))
    try:
        os.symlink(field_file.path, path)
    except NotImplementedError:  # not on this host's disk
        download = getattr(field_file.storage, "download", None)
        if download is not None:
            if _SHA256.fullmatch(digest):
                _from_cache(field_file, digest, path)
            else:
                download(field_file.name, path)
            return path
        with field_file.open("rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return path


def _cache_root() -> Path:
    return Path(settings.PERFWEB_CACHE_DIR) / "stored"


def _from_cache(field_file, digest: str, path: str) -> None:
    """`path` as a hard link to this host's copy of the stored file (a copy when the
    work folder is on another filesystem), downloaded into the cache first when the host
    has none; past PERFWEB_STORED_CACHE_BYTES the least recently used copies go."""
    kept = _cache_root() / digest[:2] / digest
    if not kept.exists():
        kept.parent.mkdir(parents=True, exist_ok=True)
        part = kept.with_name(f".{digest}.{os.getpid()}.{threading.get_ident()}")
        try:
            field_file.storage.download(field_file.name, str(part))
            os.replace(part, kept)  # whole or not at all, whoever else downloads it
        finally:
            part.unlink(missing_ok=True)
        trim_cache(keep=kept)
    try:
        os.link(kept, path)
    except FileNotFoundError:  # removed by another analysis's trim meanwhile
        field_file.storage.download(field_file.name, path)
        return
    except OSError:
        try:
            shutil.copyfile(kept, path)
        except FileNotFoundError:  # (as above)
            field_file.storage.download(field_file.name, path)
            return
    try:
        os.utime(kept)  # recently used
    except FileNotFoundError:  # a trim removed it after the link: the link is whole
        pass


def trim_cache(keep: Path | None = None) -> int:
    """Remove the least recently used copies until the rest fit
    PERFWEB_STORED_CACHE_BYTES (`keep` stays), and the parts of downloads whose process
    is gone; how many copies were removed. A copy an analysis has linked stays readable
    by it."""
    limit = settings.PERFWEB_STORED_CACHE_BYTES
    files = []
    for f in _cache_root().glob("??/*"):
        try:
            st = f.stat()
        except FileNotFoundError:
            continue
        if not f.name.startswith("."):
            files.append((st.st_mtime, st.st_size, f))
        elif (part := _PART.fullmatch(f.name)) and \
                not os.path.exists(f"/proc/{part.group(1)}"):
            f.unlink(missing_ok=True)  # a download its worker did not finish (killed)
    total = sum(size for _, size, _ in files)
    removed = 0
    for _, size, f in sorted(files, key=lambda x: x[0]):
        if total <= limit:
            break
        if f == keep:
            continue
        f.unlink(missing_ok=True)
        total -= size
        removed += 1
    return removed
