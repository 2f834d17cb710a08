"""Kernel symbols from a /proc/kallsyms copy or a System.map.

Both are `address type name [module]` lines. kallsyms of the recording boot holds runtime
addresses; a System.map (or kallsyms of another boot) holds addresses that KASLR shifted:
the symbolizer relocates by the kernel map's `_text` (see symbolize.py). Only text
symbols are kept (T/t, W/w), as perf does; a symbol extends to the next one.
"""
from __future__ import annotations

import re

from .symindex import STB_GLOBAL, STB_LOCAL, STB_WEAK, SymbolIndex, build_index

# 16 (or, 32-bit, 8) hex digits: perf-PID.map lines (`7fd92648c000 a name`) have other
# widths and must not pass for kernel symbols
_LINE = re.compile(rb"^([0-9a-fA-F]{16}|[0-9a-fA-F]{8}) ([a-zA-Z]) (\S+)(?:\s+\[(\S+)\])?\s*$")


def looks_like_kallsyms(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:50] if ln.strip()]
    return len(lines) >= 3 and sum(1 for ln in lines if _LINE.match(ln)) >= len(lines) - 1


_TEXT = re.compile(rb"^([0-9a-fA-F]+) [Tt] _text\s*$", re.M)


def text_address(data: bytes) -> int | None:
    """Where `_text` is in this file: the reference perf relocates kernel symbols by."""
    m = _TEXT.search(data)
    return int(m.group(1), 16) if m else None


def parse(data: bytes) -> SymbolIndex:
    """Text symbols; all addresses zero means kptr_restrict hid them (the caller sees
    it as an index whose last start is 0)."""
    starts, sizes, binds, names = [], [], [], []
    for line in data.split(b"\n"):
        m = _LINE.match(line)
        if m is None:
            continue
        typ = m.group(2)
        if typ not in b"TtWw":
            continue
        starts.append(int(m.group(1), 16))
        sizes.append(0)
        binds.append(STB_WEAK if typ in b"Ww" else STB_GLOBAL if typ == b"T" else STB_LOCAL)
        names.append(m.group(3))
    return build_index(starts, sizes, binds, names)
