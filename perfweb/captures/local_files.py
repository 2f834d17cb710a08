"""Stored files as paths on local disk, for the readers that want a path (storage may be
S3, where a file is copied into the caller's temporary folder first).

The path ends in the name the user uploaded, not the storage name (a uuid), because the
engine's notes and errors name the files they read: "perf.data is damaged at ..." must
speak of the user's file."""
from __future__ import annotations

import os
import re
import shutil
import tempfile

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")


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


def local_copy(field_file, folder: str, name: str) -> str:
    """A path under `folder` named `name`: a link to the stored file on local storage, a
    copy otherwise (from the bucket: downloaded straight into it, perfweb.object_storage).
    Each file gets its own sub-folder, since uploaded names repeat."""
    path = os.path.join(tempfile.mkdtemp(dir=folder), safe_name(name))
    try:
        os.symlink(field_file.path, path)
    except NotImplementedError:  # not on this host's disk
        download = getattr(field_file.storage, "download", None)
        if download is not None:
            download(field_file.name, path)
            return path
        with field_file.open("rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return path
