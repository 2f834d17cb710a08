"""A function's source text from an uploaded source archive, around its hot lines.

Debug info names files as the compiler saw them (`/build/app/src/pool/worker.cpp`); an
archive of the source tree holds `app/src/pool/worker.cpp` or `src/pool/worker.cpp`. The
member is the one whose path is the longest tail of the debug path (at least the file
name). Archives are hostile: members are only read, never extracted; links and devices
are skipped; the number of members looked at and the bytes read of the one member are
bounded, so a bomb costs at most those bounds.
"""
from __future__ import annotations

import tarfile
import zipfile
from dataclasses import dataclass

#: members looked at per archive, bytes read of a source file, lines around hot lines
MAX_MEMBERS = 200_000
MAX_SOURCE_BYTES = 4 << 20
CONTEXT = 6
MAX_ROWS = 600


@dataclass(frozen=True)
class SourceRow:
    line: int
    text: str


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p and p != "."]


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


def read_member(archive: str, wanted: str) -> tuple[str, bytes] | None:
    """(member name, its first MAX_SOURCE_BYTES) of the source file `wanted` names, or
    None when the archive is unreadable or has no such file."""
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                infos = [i for i in z.infolist()[:MAX_MEMBERS] if not i.is_dir()]
                name = best_member([i.filename for i in infos], wanted)
                if name is None:
                    return None
                with z.open(name) as f:
                    return name, f.read(MAX_SOURCE_BYTES)
        with tarfile.open(archive, "r:*") as t:
            members = []
            for i, m in enumerate(t):
                if i >= MAX_MEMBERS:
                    break
                if m.isfile():
                    members.append(m)
            name = best_member([m.name for m in members], wanted)
            if name is None:
                return None
            member = next(m for m in members if m.name == name)
            f = t.extractfile(member)
            return (name, f.read(MAX_SOURCE_BYTES)) if f is not None else None
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, ValueError,
            RuntimeError):  # RuntimeError: encrypted zip members
        return None


def rows_around(text: bytes, lines: list[int]) -> list[SourceRow]:
    """The lines of `text` from CONTEXT before the first hot line to CONTEXT after the
    last (at most MAX_ROWS), decoded as UTF-8 with replacement."""
    if not lines:
        return []
    all_lines = text.decode("utf-8", "replace").splitlines()
    first = max(1, min(lines) - CONTEXT)
    last = min(len(all_lines), max(lines) + CONTEXT, first + MAX_ROWS - 1)
    return [SourceRow(n, all_lines[n - 1]) for n in range(first, last + 1)]
