"""Stored files as paths on local disk, for the readers that want a path (storage may be
S3, where a file is copied into the caller's temporary folder first)."""
from __future__ import annotations

import os
import shutil


def local_copy(field_file, folder: str, name: str) -> str:
    try:
        return field_file.path
    except NotImplementedError:
        path = os.path.join(folder, name)
        with field_file.open("rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        return path
