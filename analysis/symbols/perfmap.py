"""perf-PID.map files that JITs write: `START SIZE name` per line, absolute addresses.

Read as perf reads them (util/symbol.c dso__load_perf_map): each field is hex through
strtoull, so with or without `0x` and after any blanks, then one separator character,
the name the rest of the line. Every JIT spells it its own way: V8's --perf-basic-prof
and .NET write plain hex (`18c4000 300 Builtin:...`), the JDK's `jcmd PID
Compiler.perfmap` pads both fields with `0x` (`0x00007f93f4ec71c0 0x0000000000000270
void java.lang.Object.<init>()`), BEAM's +JPperf prefixes the start only. Like perf, a
name of fewer than 3 characters leaves its line out.
"""
from __future__ import annotations

import re

from . import budget
from .symindex import SymbolIndex, from_segments

_HEX = rb"[ \t\v\f\r]*\+?(?:0[xX])?([0-9a-fA-F]++)"  # (all the digits, as strtoull)
_LINE = re.compile(_HEX + rb"[^\n]" + _HEX + rb"[^\n]([^\n]{3,})")
#: what a file must look like to be taken for a perf map: the fields perf reads, each
#: followed by a blank (perf takes any byte there; other text files would pass too)
_LOOKS = re.compile(rb"^[ \t]*(?:0[xX])?[0-9a-fA-F]+[ \t]+(?:0[xX])?[0-9a-fA-F]+[ \t]\S")
_TOP = (1 << 64) - 1  # strtoull's answer for a number past 64 bits


def looks_like_perf_map(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:30] if ln.strip()]
    return bool(lines) and all(_LOOKS.match(ln) for ln in lines[:-1] or lines) \
        and not lines[0].startswith(b"0000000000000000 T")


def entries(data: bytes):
    """(start, size, name) of each line perf would take."""
    for line in data.split(b"\n"):
        m = _LINE.match(line)
        if m is None:
            continue
        name = m.group(3).rstrip(b"\r")
        if len(name) < 3:
            continue
        yield min(int(m.group(1), 16), _TOP), min(int(m.group(2), 16), _TOP), name


def parse(data: bytes) -> SymbolIndex:
    starts, sizes, names = [], [], []
    for start, size, name in entries(data):
        budget.charge()
        starts.append(start)
        sizes.append(size)
        names.append(name)
    return index_as_perf(starts, sizes, names)


def index_as_perf(starts: list[int], sizes: list[int], names: list[bytes]) -> SymbolIndex:
    """The name perf gives each address, when entries overlap too. JITs reuse memory,
    and their maps keep both entries (V8 appends one per code object, moved or new), so
    several entries can cover one address. perf inserts a map's entries in file order
    into a red-black tree keyed by start (equal starts to the right) and looks an
    address up by one descent from the root, taking the first entry on the way that
    holds it (util/symbol.c symbols__insert, symbols__find: end exclusive, a size of 0
    holds its start only): which of two overlapping entries wins depends on the tree's
    shape, and a descent can miss an entry that holds the address. The same tree is
    built here (lib/rbtree.c's insertion, the textbook one) and every stretch between
    two entry boundaries is looked up once, so the index answers what perf answers."""
    n = len(starts)
    left = [-1] * n
    right = [-1] * n
    parent = [-1] * n
    red = [False] * n
    ends = [min(s + z, _TOP) for s, z in zip(starts, sizes)]
    root = -1

    def rotate(x: int, to_left: bool) -> None:
        nonlocal root
        if to_left:
            y = right[x]
            right[x] = left[y]
            if left[y] >= 0:
                parent[left[y]] = x
        else:
            y = left[x]
            left[x] = right[y]
            if right[y] >= 0:
                parent[right[y]] = x
        parent[y] = parent[x]
        if parent[x] < 0:
            root = y
        elif x == left[parent[x]]:
            left[parent[x]] = y
        else:
            right[parent[x]] = y
        if to_left:
            left[y] = x
        else:
            right[y] = x
        parent[x] = y

    for i in range(n):
        p, node, key = -1, root, starts[i]
        while node >= 0:
            p = node
            node = left[node] if key < starts[node] else right[node]
        parent[i] = p
        if p < 0:
            root = i
        elif key < starts[p]:
            left[p] = i
        else:
            right[p] = i
        red[i] = True
        z = i
        while parent[z] >= 0 and red[parent[z]]:
            zp = parent[z]
            g = parent[zp]
            on_left = zp == left[g]
            uncle = right[g] if on_left else left[g]
            if uncle >= 0 and red[uncle]:
                red[zp] = red[uncle] = False
                red[g] = True
                z = g
                continue
            if z == (right[zp] if on_left else left[zp]):
                z = zp
                rotate(z, on_left)
                zp = parent[z]
            red[zp] = False
            red[g] = True
            rotate(g, not on_left)
        red[root] = False

    def find(ip: int) -> int:
        node = root
        while node >= 0:
            if ip < starts[node]:
                node = left[node]
            elif ip > ends[node] or (ip == ends[node] and ip != starts[node]):
                node = right[node]
            else:
                return node
        return -1

    # between two boundaries every address has the same answer; a size-0 entry holds
    # its start only, so its start + 1 is a boundary too
    bounds = sorted(set(starts) | set(ends) | {s + 1 for s in starts if s < _TOP})
    seg_start: list[int] = []
    seg_end: list[int] = []
    seg_name: list[bytes] = []
    for a, b in zip(bounds, bounds[1:]):
        i = find(a)
        if i < 0:
            continue
        if seg_end and seg_end[-1] == a and seg_name[-1] is names[i]:
            seg_end[-1] = b
        else:
            seg_start.append(a)
            seg_end.append(b)
            seg_name.append(names[i])
    return from_segments(seg_start, seg_end, seg_name)
