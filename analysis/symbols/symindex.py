"""A sorted, compact symbol table: start and end addresses in arrays, names in one blob.

Built once per symbol file and cached on disk (index_cache.py, keyed by the file's
content), so the next capture of the same build maps it instead of parsing the ELF again.
Symbols at the same address are reduced to the one perf would show (its
choose_best_symbol rules), and a symbol without a size extends to the next one, as perf
does, so names match perf's output.
"""
from __future__ import annotations

import bisect
import heapq
import mmap
import os
import struct
from array import array
from pathlib import Path

STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
_MAGIC = b"PWSYMIX1"


class SymbolIndex:
    __slots__ = ("starts", "ends", "name_offsets", "blob")

    def __init__(self, starts, ends, name_offsets, blob) -> None:
        """Arrays (or memoryviews of a cache file) of u64; `blob` sliceable to bytes."""
        self.starts, self.ends = starts, ends
        self.name_offsets, self.blob = name_offsets, blob

    def __len__(self) -> int:
        return len(self.starts)

    def lookup(self, address: int) -> str | None:
        """The raw name of the symbol covering `address`, or None."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or address >= self.ends[i]:
            return None
        a, b = self.name_offsets[i], self.name_offsets[i + 1]
        return self.blob[a:b].decode("utf-8", "replace")

    # ---- cache files ---------------------------------------------------------------
    def save(self, path: Path) -> None:
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(_MAGIC + struct.pack("<QQ", len(self.starts), len(self.blob)))
            f.write(self.starts.tobytes())
            f.write(self.ends.tobytes())
            f.write(self.name_offsets.tobytes())
            f.write(self.blob if isinstance(self.blob, (bytes, bytearray)) else
                    bytes(self.blob))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> "SymbolIndex | None":
        """Map a cache file: the arrays are views on the mapped file, nothing is copied,
        so a 65 MB index of libtorch opens in milliseconds."""
        try:
            with open(path, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        if mm[:8] != _MAGIC or len(mm) < 24:
            mm.close()
            return None
        n, blob_len = struct.unpack_from("<QQ", mm, 8)
        pos = 24
        need = pos + 8 * n * 2 + 8 * (n + 1) + blob_len
        if len(mm) != need:
            mm.close()
            return None
        view = memoryview(mm)
        starts = view[pos:pos + 8 * n].cast("Q")
        ends = view[pos + 8 * n:pos + 16 * n].cast("Q")
        offs = view[pos + 16 * n:pos + 16 * n + 8 * (n + 1)].cast("Q")
        return cls(starts, ends, offs, _Blob(mm, need - blob_len))


class _Blob:
    """Names region of a mapped cache file, sliced like bytes."""
    __slots__ = ("mm", "base")

    def __init__(self, mm: mmap.mmap, base: int) -> None:
        self.mm, self.base = mm, base

    def __getitem__(self, s: slice) -> bytes:
        return self.mm[self.base + s.start:self.base + s.stop]

    def __len__(self) -> int:
        return len(self.mm) - self.base

    def __bytes__(self) -> bytes:
        """(saving a mapped index under another key: a runtime binary without PLT
        stubs leaves the debug file's index as it is, _merge_plt)"""
        return self.mm[self.base:]


def _underscores(name: bytes) -> int:
    return len(name) - len(name.lstrip(b"_"))


def _better(a: tuple, b: tuple) -> bool:
    """perf's choose_best_symbol: is `a` (size, bind, name) preferred over `b`?"""
    sa, ba, na = a
    sb, bb, nb = b
    if (sa > 0) != (sb > 0):
        return sa > 0
    if (ba == STB_WEAK) != (bb == STB_WEAK):
        return bb == STB_WEAK
    if (ba == STB_GLOBAL) != (bb == STB_GLOBAL):
        return ba == STB_GLOBAL
    ua, ub = _underscores(na), _underscores(nb)
    if ua != ub:
        return ua < ub
    if len(na) != len(nb):
        return len(na) > len(nb)
    return False  # a tie keeps the one first in the table, as perf does (its
    # arch__choose_best_symbol keeps the symbol inserted first)


_TOP = 1 << 64


def build_index(starts: list[int], sizes: list[int], binds: list[int],
                names: list[bytes], last_end: int | None = None) -> SymbolIndex:
    """One symbol per address (perf's pick), sorted, with sizeless symbols extended to
    the next symbol. `last_end` bounds the last sizeless symbol (default: one page)."""
    # addresses are 64-bit: a symbol starting beyond that (a damaged file) is dropped, one
    # reaching beyond it ends at the top of the address space
    order = sorted((i for i in range(len(starts)) if 0 <= starts[i] < _TOP),
                   key=starts.__getitem__)
    keep_start: list[int] = []
    keep_size: list[int] = []
    keep_name: list[bytes] = []
    cur = None
    for i in order:
        cand = (sizes[i], binds[i], names[i])
        if keep_start and keep_start[-1] == starts[i]:
            if _better(cand, cur):
                cur = cand
                keep_size[-1] = sizes[i]
                keep_name[-1] = names[i]
            continue
        keep_start.append(starts[i])
        keep_size.append(sizes[i])
        keep_name.append(names[i])
        cur = cand
    n = len(keep_start)
    ends = array("Q", [0]) * n
    for i in range(n):
        if keep_size[i]:
            ends[i] = min(keep_start[i] + keep_size[i], _TOP - 1)
        elif i + 1 < n:
            ends[i] = keep_start[i + 1]
        else:
            ends[i] = min(last_end if last_end is not None else (keep_start[i] | 0xFFF) + 1,
                          _TOP - 1)
    offsets = array("Q", [0]) * (n + 1)
    pos = 0
    for i, nm in enumerate(keep_name):
        offsets[i] = pos
        pos += len(nm)
    offsets[n] = pos
    return SymbolIndex(array("Q", keep_start), ends, offsets, b"".join(keep_name))



def build_latest_wins(starts: list[int], sizes: list[int], names: list[bytes]) -> SymbolIndex:
    """An index of code that a JIT placed over time, given in the order it was placed:
    where two ranges overlap, the later one holds the address (the earlier code was
    freed and the memory reused), as perf's maps do when a new mmap covers an old one.
    A size of 0 covers its start address only (perf's symbol__new: end = start). One
    sweep over the boundaries with a heap of the ranges open there: n log n."""
    bounds: list[tuple[int, int, int]] = []  # (address, 0 end / 1 start, entry)
    for i, (start, size) in enumerate(zip(starts, sizes)):
        if not 0 <= start < _TOP - 1:
            continue
        end = min(start + max(size, 1), _TOP - 1)
        bounds.append((start, 1, i))
        bounds.append((end, 0, i))
    bounds.sort()
    open_: list[int] = []  # -entry: the latest placed on top
    closed: set[int] = set()
    seg_start: list[int] = []
    seg_end: list[int] = []
    seg_owner: list[int] = []
    k = 0
    while k < len(bounds):
        x = bounds[k][0]
        while k < len(bounds) and bounds[k][0] == x:
            _, is_start, i = bounds[k]
            if is_start:
                heapq.heappush(open_, -i)
            else:
                closed.add(i)
            k += 1
        while open_ and -open_[0] in closed:
            closed.discard(-heapq.heappop(open_))
        if seg_start and seg_end[-1] == 0:
            seg_end[-1] = x  # the open segment ends here
            if seg_end[-1] == seg_start[-1]:
                seg_start.pop(), seg_end.pop(), seg_owner.pop()
        if open_ and k < len(bounds):
            owner = -open_[0]
            if seg_owner and seg_owner[-1] == owner and seg_end[-1] == x:
                seg_end[-1] = 0  # the same code goes on
            else:
                seg_start.append(x)
                seg_end.append(0)
                seg_owner.append(owner)
    return from_segments(seg_start, seg_end, [names[o] for o in seg_owner])


def from_segments(starts: list[int], ends: list[int], names: list[bytes]) -> SymbolIndex:
    """An index of sorted ranges that do not overlap, as they are."""
    offsets = array("Q", [0]) * (len(starts) + 1)
    pos = 0
    for j, name in enumerate(names):
        offsets[j] = pos
        pos += len(name)
    offsets[len(starts)] = pos
    return SymbolIndex(array("Q", starts), array("Q", ends), offsets, b"".join(names))
