"""The stream pyelftools reads an uploaded ELF through: never past the file's end, and
each read charged to the file's budget (budget.py).

pyelftools believes the sizes it is given: a note whose n_descsz is 2^32-1, or a section
whose sh_size is 2^62, becomes `stream.read(n)` of that many bytes, which allocates them
before reading (a MemoryError, or gigabytes under overcommit). Here a read is cut to
what the file holds, so nothing pyelftools allocates outgrows the file, and a loop of
pyelftools over entries the header claims (notes, dynamic tags, sections) stops with
the budget, since each entry is read. `last` is where the last read began: the byte an
error message names.
"""
from __future__ import annotations

import os

from . import budget


class BoundedStream:
    def __init__(self, f) -> None:
        self._f = f
        self.size = os.fstat(f.fileno()).st_size
        self._pos = 0
        self.last = 0

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self._pos
        elif whence == os.SEEK_END:
            offset += self.size
        self._pos = max(offset, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        budget.charge()
        self.last = self._pos
        if self._pos >= self.size:
            return b""
        n = self.size - self._pos if n is None or n < 0 else min(n, self.size - self._pos)
        self._f.seek(self._pos)
        data = self._f.read(n)
        self._pos += len(data)
        return data
