"""Which file was mapped where, per process, as time goes by.

MMAP/MMAP2 add a mapping (replacing whatever it overlaps), FORK of a new process copies
its parent's maps, an exec (COMM with the exec bit) starts from none, and the kernel's
own maps live under pid -1. The importer tells which process a change touched, so it
can keep its resolution cache for all the others.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

_U64 = (1 << 64) - 1


@dataclass(frozen=True)
class Map:
    start: int
    end: int
    pgoff: int
    path: str
    build_id: str  # (only executable mappings are kept)


class ProcessMaps:
    __slots__ = ("maps", "starts")

    def __init__(self, maps: list[Map] | None = None) -> None:
        self.maps: list[Map] = list(maps or [])
        self.starts = [m.start for m in self.maps]

    def add(self, m: Map) -> None:
        kept: list[Map] = []
        for old in self.maps:
            if old.end <= m.start or old.start >= m.end:
                kept.append(old)
                continue
            # keep the parts of the old mapping the new one does not cover
            if old.start < m.start:
                kept.append(Map(old.start, m.start, old.pgoff, old.path, old.build_id))
            if old.end > m.end:  # (its offset in u64, as perf's: a damaged pgoff wraps)
                kept.append(Map(m.end, old.end, (old.pgoff + m.end - old.start) & _U64,
                                old.path, old.build_id))
        kept.append(m)
        kept.sort(key=lambda x: x.start)
        self.maps = kept
        self.starts = [x.start for x in kept]

    def find(self, address: int) -> Map | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0:
            m = self.maps[i]
            if address < m.end:
                return m
        return None

    def copy(self) -> "ProcessMaps":
        return ProcessMaps(self.maps)


class AddressSpaces:
    """All processes' maps plus the kernel's."""

    def __init__(self) -> None:
        self.procs: dict[int, ProcessMaps] = {}
        self.kernel = ProcessMaps()

    def of(self, pid: int) -> ProcessMaps:
        pm = self.procs.get(pid)
        if pm is None:
            pm = self.procs[pid] = ProcessMaps()
        return pm

    def mmap(self, pid: int, m: Map, kernel: bool) -> None:
        (self.kernel if kernel else self.of(pid)).add(m)

    def fork(self, pid: int, ppid: int) -> None:
        if pid != ppid and pid not in self.procs and ppid in self.procs:
            self.procs[pid] = self.procs[ppid].copy()

    def exec(self, pid: int) -> None:
        self.procs[pid] = ProcessMaps()
