"""Which build-ids the stored symbol files hold, for the debuginfod endpoints.

A symbol file may be an archive: its members are read with the same hostile-archive
rules as symbolization (analysis.symbols.inputs), in a private temporary folder."""
from __future__ import annotations

import tempfile

from analysis.symbols.elf import ElfUnreadable, read_info
from analysis.symbols.inputs import BundleError, collect

from .local_files import local_copy
from .models import BuildIdEntry, SymbolFile


def _elves(sf: SymbolFile, folder: str, path: str | None = None):
    try:
        collected = collect([path or local_copy(sf.file, folder, f"symbol-{sf.pk}")], folder)
    except BundleError:
        return
    for f in collected.files:
        if f.kind != "elf":
            continue
        try:
            info = read_info(f.path, f.origin)
        except ElfUnreadable:
            continue
        build_id = info.build_id or f.build_id_hint
        if build_id:
            yield f, info, build_id


def index(sf: SymbolFile, path: str | None = None) -> int:
    """Record the build-ids of `sf` (idempotent); `path`: a local copy the caller has."""
    if sf.indexed:
        return 0
    entries = []
    with tempfile.TemporaryDirectory(prefix="perfweb-buildids-") as work:
        for f, info, build_id in _elves(sf, work, path):
            member = f.origin.split(":", 1)[1] if ":" in f.origin else ""
            if info.has_symtab or info.debug_only:
                entries.append(BuildIdEntry(symbol_file=sf, build_id=build_id,
                                            kind="debuginfo", member=member))
            if not info.debug_only and info.segments:
                entries.append(BuildIdEntry(symbol_file=sf, build_id=build_id,
                                            kind="executable", member=member))
    BuildIdEntry.objects.bulk_create(entries)
    SymbolFile.objects.filter(pk=sf.pk).update(indexed=True)
    return len(entries)


def extract(entry: BuildIdEntry, folder: str) -> str | None:
    """A local path to the ELF an entry names (taken out of its archive if need be)."""
    for f, info, build_id in _elves(entry.symbol_file, folder):
        member = f.origin.split(":", 1)[1] if ":" in f.origin else ""
        if build_id == entry.build_id and member == entry.member:
            return f.path
    return None
