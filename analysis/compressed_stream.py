"""Compressed archives read as streams in bounded pieces, with the compressed bytes
counted: what the archive readers (symbol bundles, source archives) measure expansion
against.

The readers here decompress at most what is asked for per read; tarfile's own "r|*"
decompresses each compressed block whole, and a 1.6 KB tar.bz2 became 2 GiB in memory
at once.
"""
from __future__ import annotations

import bz2
import gzip
import lzma

#: compressed bytes a decompressor may read ahead
READ_AHEAD = 16 * 1024


class Counted:
    """The compressed file, read in small pieces and counted."""

    def __init__(self, raw) -> None:
        self.raw, self.consumed = raw, 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(READ_AHEAD if n is None or n < 0 else min(n, READ_AHEAD))
        self.consumed += len(data)
        return data

    def readable(self) -> bool:
        return True


def is_compressed(head: bytes) -> bool:
    """gzip, bzip2, xz or zstd: the compressions `decompressed` reads."""
    return head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00" \
        or head[:4] == b"\x28\xb5\x2f\xfd"


def decompressed(counted: Counted, head: bytes):
    """A reader of what `counted` holds, decompressed a bounded piece per read (the file
    itself when `head` names no compression)."""
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=counted, mode="rb")
    if head[:3] == b"BZh":
        return bz2.BZ2File(counted)
    if head[:6] == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(counted)
    if head[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard
        return zstandard.ZstdDecompressor().stream_reader(counted, read_size=READ_AHEAD)
    return counted
