"""Opening inputs as streams: plain or gzip, path or file object, never read whole.

Format detection looks at the first bytes only, so a 1 GB upload costs one small read
before its importer streams it line by line.
"""
from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import BinaryIO, Iterator, Union

from .errors import ParseError

Source = Union[str, os.PathLike, BinaryIO]

GZIP_MAGIC = b"\x1f\x8b"
#: how much of an input detection and sniffing may look at
HEAD_BYTES = 64 * 1024


def open_binary(source: Source) -> BinaryIO:
    """A binary stream of the decompressed content of `source`."""
    if isinstance(source, (str, os.PathLike)):
        raw: BinaryIO = open(source, "rb")
    else:
        raw = source
    buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type]
    if buffered.peek(2)[:2] == GZIP_MAGIC:  # type: ignore[union-attr]
        return GzipReader(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    return buffered  # type: ignore[return-value]


class GzipReader(gzip.GzipFile):
    """A damaged or cut gzip stream is the uploader's problem, said as such."""

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise ParseError(f"the gzip compression is damaged or cut short ({e})") from e

    def read(self, size=-1):
        return self._guard(super().read, size)

    def read1(self, size=-1):
        return self._guard(super().read1, size)

    def readinto(self, b):
        return self._guard(super().readinto, b)

    def readline(self, size=-1):
        return self._guard(super().readline, size)

    def peek(self, n):
        return self._guard(super().peek, n)


def read_head(source: Source, size: int = HEAD_BYTES) -> bytes:
    """The first `size` decompressed bytes, for detection. File objects are rewound and
    left open."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            raw = f.read(size)
    else:
        pos = source.tell()
        try:
            raw = source.read(size)
        finally:
            source.seek(pos)
    if raw[:2] == GZIP_MAGIC:
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, size)
        except zlib.error:
            return raw
    return raw


def text_lines(source: Source) -> Iterator[str]:
    """Lines of a text input, newline stripped, undecodable bytes replaced (never fatal)."""
    binary = open_binary(source)
    stream = io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None)
    try:
        for line in stream:
            yield line.rstrip("\n")
    finally:
        if isinstance(source, (str, os.PathLike)):
            stream.close()
        else:
            stream.detach()
