"""Inline frames and source lines from DWARF debug info.

For an address, the compiler's debug info says which functions were inlined there and
at which line of which file each one was: `std::sort` inlined into `work::sort_records`
at libwork.cpp:58, `std::__sort` inlined into `std::sort` at stl_algo.h:4853. perf
prints those frames as `(inlined)`; perfweb gives every location the same chain. The
tables come from Sentry's `symbolic` (its SymCache, which reads .debug_info and
.debug_line, split DWARF and compressed sections included), built once per file
content and kept on disk beside the symbol indexes, keyed by the file's SHA-256.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .index_cache import cache_dir, cache_key


@dataclass(frozen=True)
class Frame:
    """One function at an address: its linkage (mangled) name, file and line."""
    symbol: str
    file: str
    line: int


class LineTable:
    """`frames(address)` -> innermost first, the last one the function that holds the
    address; () when the debug info does not cover it. Addresses are relative to the
    image base (the first PT_LOAD's address), as Breakpad's are."""

    def __init__(self, cache) -> None:
        self._cache = cache

    def frames(self, rel: int) -> tuple[Frame, ...]:
        try:
            found = self._cache.lookup(rel)
        except Exception:  # noqa: BLE001 - a lookup symbolic refuses names nothing
            return ()
        return tuple(Frame(loc.symbol or "", loc.full_path or "", loc.line or 0)
                     for loc in found)


def line_table(path: str, digest: str) -> LineTable | None:
    """The line table of the ELF at `path` (SHA-256 `digest`), from the disk cache or
    built now; None when it has no DWARF debug info."""
    import symbolic  # imported here: only captures with debug files pay for it

    cache = Path(cache_dir()) / f"{cache_key('symcache', digest)}.symc"
    try:
        return LineTable(symbolic.SymCache.open(str(cache)))
    except (symbolic.SymbolicError, OSError):
        pass
    try:
        objects = list(symbolic.Archive.open(path).iter_objects())
        if not objects or "debug" not in objects[0].features:
            return None
        built = symbolic.SymCache.from_object(objects[0])
    except symbolic.SymbolicError:
        return None
    try:
        tmp = cache.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            built.dump_into(f)
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only cache only costs time
    return LineTable(built)
