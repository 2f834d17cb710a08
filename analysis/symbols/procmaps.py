"""/proc/PID/maps: where each file was mapped, to place the raw absolute addresses that
perf report and old perf script print (`0x7f3fde8e0458`) into their DSO."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_LINE = re.compile(rb"^([0-9a-f]+)-([0-9a-f]+) ([r-][w-][x-][ps-]) ([0-9a-f]+) "
                   rb"\S+ \d+\s*(.*)$")


@dataclass(frozen=True)
class MapEntry:
    start: int
    end: int
    offset: int
    path: str
    executable: bool


def looks_like_maps(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:30] if ln.strip()]
    return bool(lines) and all(_LINE.match(ln) for ln in lines[:-1] or lines)


class ProcMaps:
    def __init__(self, entries: list[MapEntry]) -> None:
        uniq = sorted(set(entries), key=lambda e: (e.start, not e.executable))
        self.entries: list[MapEntry] = []
        for e in uniq:  # files appended twice (or two snapshots): keep the first per start
            if self.entries and self.entries[-1].start == e.start:
                continue
            self.entries.append(e)
        self.starts = [e.start for e in self.entries]

    def find(self, address: int) -> MapEntry | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.entries[i].end:
            return self.entries[i]
        return None


def parse(data: bytes) -> ProcMaps:
    out = []
    for line in data.split(b"\n"):
        m = _LINE.match(line.strip())
        if m is None:
            continue
        path = m.group(5).decode("utf-8", "replace").strip()
        if not path:
            continue
        out.append(MapEntry(int(m.group(1), 16), int(m.group(2), 16), int(m.group(4), 16),
                            path, m.group(3)[2:3] == b"x"))
    return ProcMaps(out)
