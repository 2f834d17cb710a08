"""Symbol indexes on disk, keyed by the SHA-256 of the bytes they were built from.

Every analysis that sets the same PERFWEB_CACHE_DIR shares this cache, so on a server it
is shared by every team. A build-id, a file name or a size is only what a file claims
about itself: with keys made of those, one team's ELF carrying another team's build-id
and size decided the names the other team's captures showed (issue 12). A key made of
content digests alone means the same bytes give the same index, whoever uploaded them,
and different bytes can never meet.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Callable

from .symindex import SymbolIndex

#: bump when what an index holds changes: cached indexes of older code are then not read
_VERSION = "v7"  # v1 keys were build-id + table + size; v3: PLT sections of debug files;
#                 v4: ties between aliases keep the first in the table; v5: IRELATIVE PLT;
#                 v6: sections whose headers pass the end of the file are not read;
#                 v7: perf maps cached, overlapping entries resolved as perf does
_SHA256 = re.compile(r"[0-9a-f]{64}")


def cache_dir() -> Path:
    """PERFWEB_CACHE_DIR, else the user's cache directory (XDG)."""
    base = os.environ.get("PERFWEB_CACHE_DIR")
    if not base:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                            os.path.join(os.path.expanduser("~"), ".cache"), "perfweb")
    path = Path(base) / "symbols"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(kind: str, *digests: str) -> str:
    """The key of an index of `kind` built from the files with these SHA-256 digests.
    Anything but a digest is refused, so no caller can key an entry by a claim."""
    for d in digests:
        if not _SHA256.fullmatch(d):
            raise ValueError(f"cache keys are made of SHA-256 digests, not {d!r}")
    return hashlib.sha256("\0".join((_VERSION, kind) + digests).encode()).hexdigest()[:40]


def cached(key: str, build: Callable[[], SymbolIndex]) -> SymbolIndex:
    path = cache_dir() / f"{key}.idx"
    index = SymbolIndex.load(path)
    if index is None:
        index = build()
        try:
            index.save(path)
        except OSError:
            pass  # a read-only cache only costs time
    return index


def file_sha256(path: str | os.PathLike) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
