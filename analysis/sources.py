"""A function's source text from an uploaded source archive, around its hot lines.

Debug info names files as the compiler saw them (`/build/app/src/pool/worker.cpp`); an
archive of the source tree holds `app/src/pool/worker.cpp` or `src/pool/worker.cpp`. The
member is the one whose path is the longest tail of the debug path (at least the file
name). The archive itself is read once, within a budget, by analysis.source_archive;
this module only matches names and cuts text.
"""
from __future__ import annotations

from dataclasses import dataclass

#: bytes kept of a source file, lines around hot lines
MAX_SOURCE_BYTES = 4 << 20
CONTEXT = 6
MAX_ROWS = 600


@dataclass(frozen=True)
class SourceRow:
    line: int
    text: str


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p and p != "."]


def member_basename(path: str) -> str | None:
    """The last component of a path (either separator): what a member and a debug path
    must share to match at all."""
    parts = _parts(path)
    return parts[-1] if parts else None


def best_member(names: list[str], wanted: str) -> str | None:
    """The member name whose path components are the longest tail of `wanted`'s."""
    want = _parts(wanted)
    if not want:
        return None
    best, best_n = None, 0
    for name in names:
        have = _parts(name)
        if not have or ".." in have or have[-1] != want[-1]:
            continue
        n = 0
        while n < min(len(have), len(want)) and have[-1 - n] == want[-1 - n]:
            n += 1
        if n > best_n or (n == best_n and best is not None and len(name) < len(best)):
            best, best_n = name, n
    return best


def rows_around(text: bytes, lines: list[int]) -> list[SourceRow]:
    """The lines of `text` from CONTEXT before the first hot line to CONTEXT after the
    last (at most MAX_ROWS), decoded as UTF-8 with replacement."""
    if not lines:
        return []
    all_lines = text.decode("utf-8", "replace").splitlines()
    first = max(1, min(lines) - CONTEXT)
    last = min(len(all_lines), max(lines) + CONTEXT, first + MAX_ROWS - 1)
    return [SourceRow(n, all_lines[n - 1]) for n in range(first, last + 1)]
