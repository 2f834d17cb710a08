"""Which build-ids the stored symbol files hold, and the one file a debuginfod request
asks for.

A symbol file may be an archive: its members are read with the same hostile-archive
rules as symbolization (analysis.symbols.inputs), in a private temporary folder. The
worker indexes a file once (BuildIdEntry rows, with the member's name). A request then
reads only its member: a plain file is served as stored; a member of an archive is taken
out alone the first time (the others are skipped, not written) and kept in
PERFWEB_CACHE_DIR/debuginfod under the stored file's SHA-256, the member's name and its
build-id, so the next request for it opens one file. Unpacking the whole 5.4 MB perf
archive for every request took 0.6 to 0.9 s."""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from django.conf import settings

from analysis.errors import AnalysisError
from analysis.symbols.elf import read_info
from analysis.symbols.inputs import BundleError, Collected, collect

from ..local_files import local_copy
from ..models import BuildIdEntry, SymbolFile

_SHA256 = re.compile(r"[0-9a-f]{64}")


def _elves(collected: Collected):
    for f in collected.files:
        if f.kind != "elf":
            continue
        try:
            info = read_info(f.path, f.origin, f.sha256)  # (symbolize reads it next)
        except AnalysisError:  # damaged, or over its budget (analysis/symbols/budget.py)
            continue
        build_id = info.build_id or f.build_id_hint
        if build_id:
            yield f, info, build_id


def _member(origin: str, top: str) -> str:
    """The member's names inside the archive `top` ("" for the file itself); cut by the
    known prefix, since the uploaded name may hold a colon too."""
    return origin[len(top) + 1:] if origin.startswith(top + ":") else ""


def index(sf: SymbolFile, path: str | None = None) -> int:
    """Record the build-ids of `sf` (idempotent); `path`: a local copy the caller has."""
    return index_all([(sf, path)])


def index_all(files: list[tuple[SymbolFile, str | None]]) -> int:
    """Record the build-ids of each (symbol file, local copy or None) not indexed yet, in
    one insert and one update: the worker indexes every symbol file of a new build, and
    two queries a file were 20 ms of each upload of 21 files."""
    entries, done = [], []
    for sf, path in files:
        if not sf.indexed:
            entries += _entries(sf, path)
            done.append(sf.pk)
    if done:
        BuildIdEntry.objects.bulk_create(entries)
        SymbolFile.objects.filter(pk__in=done).update(indexed=True)
    return len(entries)


def _entries(sf: SymbolFile, path: str | None) -> list[BuildIdEntry]:
    entries = []
    with tempfile.TemporaryDirectory(prefix="perfweb-buildids-") as work:
        local = path or local_copy(sf.file, work, f"symbol-{sf.pk}", sf.sha256)
        try:
            collected = collect([local], work, digests={local: sf.sha256})
        except BundleError:
            collected = Collected()
        for f, info, build_id in _elves(collected):
            member = _member(f.origin, os.path.basename(local))
            if info.has_symtab or info.debug_only:
                entries.append(BuildIdEntry(symbol_file=sf, build_id=build_id,
                                            kind="debuginfo", member=member))
            if not info.debug_only and info.segments:
                entries.append(BuildIdEntry(symbol_file=sf, build_id=build_id,
                                            kind="executable", member=member))
    return entries


def open_member(entry: BuildIdEntry):
    """An open file of the ELF `entry` names, or None if it is not there after all."""
    sf = entry.symbol_file
    if not entry.member:
        return sf.file.open("rb")
    if not _SHA256.fullmatch(sf.sha256):  # no content key: take it out every time
        with tempfile.TemporaryDirectory(prefix="perfweb-debuginfod-") as work:
            path = _take_out(entry, work)
            return open(path, "rb") if path else None  # readable once its folder is gone
    cached = _cache_path(sf.sha256, entry)
    try:
        return open(cached, "rb")
    except FileNotFoundError:
        pass
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="extract-", dir=cached.parent) as work:
        path = _take_out(entry, work)
        if path is None:
            return None
        os.replace(path, cached)  # whole or not at all, whoever else is writing it
    return open(cached, "rb")


def _cache_path(sha256: str, entry: BuildIdEntry) -> Path:
    key = hashlib.sha256(f"v1\0{sha256}\0{entry.member}\0{entry.build_id}".encode())
    return Path(settings.PERFWEB_CACHE_DIR) / "debuginfod" / sha256[:2] / key.hexdigest()


def _take_out(entry: BuildIdEntry, work: str) -> str | None:
    """The member alone, extracted into `work` (all members of that name are, since an
    archive may repeat a name: the one with the entry's build-id is the one)."""
    sf = entry.symbol_file
    local = local_copy(sf.file, work, f"symbol-{sf.pk}", sf.sha256)
    top = os.path.basename(local)
    try:
        collected = collect([local], work, only=f"{top}:{entry.member}")
    except BundleError:
        return None
    for f, _info, build_id in _elves(collected):
        if build_id == entry.build_id and _member(f.origin, top) == entry.member:
            return f.path
    return None
