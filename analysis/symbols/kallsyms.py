"""Kernel symbols from a /proc/kallsyms copy or a System.map.

Both are `address type name [module]` lines. kallsyms of the recording boot holds runtime
addresses; a System.map (or kallsyms of another boot) holds addresses that KASLR shifted:
the symbolizer relocates by the kernel map's `_text` (see symbolize.py). Only text
symbols are kept (T/t, W/w), as perf does; a symbol extends to the next one.
"""
from __future__ import annotations

import re

from .symindex import STB_GLOBAL, STB_LOCAL, STB_WEAK, SymbolIndex, build_index

_LINE = re.compile(rb"^([0-9a-fA-F]{8,16}) ([a-zA-Z]) (\S+)(?:\s+\[(\S+)\])?")


def looks_like_kallsyms(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:50] if ln.strip()]
    return len(lines) >= 3 and sum(1 for ln in lines if _LINE.match(ln)) >= len(lines) - 1


def parse(data: bytes) -> tuple[SymbolIndex, bool]:
    """(index, all_zero): all addresses zero means kptr_restrict hid them."""
    starts, sizes, binds, names = [], [], [], []
    nonzero = False
    for line in data.split(b"\n"):
        m = _LINE.match(line)
        if m is None:
            continue
        typ = m.group(2)
        if typ not in b"TtWw":
            continue
        addr = int(m.group(1), 16)
        if addr:
            nonzero = True
        starts.append(addr)
        sizes.append(0)
        binds.append(STB_WEAK if typ in b"Ww" else STB_GLOBAL if typ == b"T" else STB_LOCAL)
        names.append(m.group(3))
    return build_index(starts, sizes, binds, names), not nonzero
