"""perf-PID.map files that JITs write (V8 --perf-basic-prof, perf-map-agent, .NET,
CPython -X perf): `START SIZE name` per line, hex without 0x, absolute addresses."""
from __future__ import annotations

import re

from .symindex import STB_GLOBAL, SymbolIndex, build_index

_LINE = re.compile(rb"^([0-9a-fA-F]+) ([0-9a-fA-F]+) (.+)$")


def looks_like_perf_map(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:30] if ln.strip()]
    return bool(lines) and all(_LINE.match(ln.rstrip(b"\r")) for ln in lines[:-1] or lines) \
        and not lines[0].startswith(b"0000000000000000 T")


def parse(data: bytes) -> SymbolIndex:
    starts, sizes, binds, names = [], [], [], []
    for line in data.split(b"\n"):
        m = _LINE.match(line.rstrip(b"\r"))
        if m is None:
            continue
        starts.append(int(m.group(1), 16))
        sizes.append(int(m.group(2), 16))
        binds.append(STB_GLOBAL)
        names.append(m.group(3))
    return build_index(starts, sizes, binds, names)
