"""Storing uploaded files: hashed while they are copied to storage in chunks, never read
into memory whole."""
from __future__ import annotations

import hashlib

from django.core.files.uploadedfile import UploadedFile


def sha256_of(upload: UploadedFile) -> str:
    h = hashlib.sha256()
    for chunk in upload.chunks(1 << 20):
        h.update(chunk)
    upload.seek(0)
    return h.hexdigest()


def human_size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
