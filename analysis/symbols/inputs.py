"""Turning whatever the user uploaded as symbols into classified local files.

Inputs are files, directories or archives (zip, tar, tar.gz, tar.bz2, tar.xz, tar.zst,
nested up to MAX_DEPTH). Every member is recognised by its content: ELF, kallsyms or
System.map, /proc/PID/maps, perf-PID.map. Archives are hostile until proven otherwise:
members are extracted by content into a private folder under names we choose (so `../`
and absolute paths cannot escape), links and device files are skipped, and the number of
members, the bytes written and the expansion ratio are bounded.
"""
from __future__ import annotations

import os
import re
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..errors import AnalysisError
from . import kallsyms, perfmap, procmaps
from .elf import is_elf

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 16 << 30
MAX_RATIO = 200  # expanded bytes per compressed byte, for the archive as a whole
MAX_DEPTH = 2
_HEAD = 64 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")

# perf archive / build-id cache: <path>/<build-id>/{elf,debug,kallsyms,vdso}
_BUILDID_CACHE = re.compile(r"^(.*)/([0-9a-f]{16,40})/(elf|debug|kallsyms|vdso)$")
# /usr/lib/debug/.build-id/ab/cdef....debug
_DEBUG_BUILDID = re.compile(r"\.build-id/([0-9a-f]{2})/([0-9a-f]{14,38})(?:\.debug)?$")


class BundleError(AnalysisError):
    """A symbol bundle that breaks our limits or cannot be opened at all."""


@dataclass
class SymbolFile:
    origin: str  # what the user calls it: "symbols-1.0.0.zip:libqualla.so.debug"
    path: str  # a local file to read
    kind: str  # elf | kallsyms | maps | perfmap
    build_id_hint: str = ""  # from perf's build-id cache layout
    path_hint: str = ""  # the DSO path that layout names ("/usr/lib/.../libc.so.6")
    sha256: str = ""  # of the bytes at `path`, when the caller recorded it (else hashed)


@dataclass
class Collected:
    files: list[SymbolFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Budget:
    def __init__(self) -> None:
        self.members = 0
        self.bytes = 0


def collect(inputs: list[str | os.PathLike], workdir: str | os.PathLike,
            digests: Mapping[str, str] | None = None) -> Collected:
    """`digests`: SHA-256 of input files (by `os.fspath` of the input) recorded when they
    were stored, so a 400 MB library is not hashed again for every capture that uses it.
    Only a digest of the very bytes at that path may be given: it keys the symbol cache."""
    out = Collected()
    budget = _Budget()
    work = Path(workdir)
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            for root, dirs, files in os.walk(p, followlinks=False):
                dirs.sort()
                for name in sorted(files):
                    fp = Path(root) / name
                    if fp.is_symlink() or not fp.is_file():
                        continue
                    rel = str(fp.relative_to(p))
                    _classify_file(str(fp), f"{p.name}/{rel}", rel, out, budget, work, 0)
        elif p.is_file():
            digest = (digests or {}).get(os.fspath(item), "")
            _classify_file(str(p), p.name, p.name, out, budget, work, 0,
                           digest if _SHA256.fullmatch(digest) else "")
        else:
            out.notes.append(f"{p}: no such file or directory")
    return out


def _classify_file(path: str, origin: str, member: str, out: Collected, budget: _Budget,
                   work: Path, depth: int, sha256: str = "") -> None:
    with open(path, "rb") as f:
        head = f.read(_HEAD)
    if not head:
        return  # empty files (perf archive's `probes`) carry nothing
    kind = _kind(head)
    if kind == "archive":
        if depth >= MAX_DEPTH:
            out.notes.append(f"{origin}: archive nested deeper than {MAX_DEPTH}; skipped")
            return
        _extract(path, origin, out, budget, work, depth + 1)
        return
    if kind is None:
        out.notes.append(f"{origin}: not a symbol file (ELF, kallsyms, System.map, "
                         f"/proc/PID/maps or perf-PID.map); skipped")
        return
    sf = SymbolFile(origin, path, kind, sha256=sha256)
    m = _BUILDID_CACHE.match(member.replace("\\", "/"))
    if m:
        sf.build_id_hint = m.group(2)
        dso = m.group(1)
        sf.path_hint = dso if dso.startswith("[") else "/" + dso.lstrip("/")
    else:
        d = _DEBUG_BUILDID.search(member)
        if d:
            sf.build_id_hint = d.group(1) + d.group(2)
    out.files.append(sf)


def _kind(head: bytes) -> str | None:
    if is_elf(head):
        return "elf"
    if head[:4] == b"PK\x03\x04" or head[:3] == b"BZh" or head[:2] == b"\x1f\x8b" or \
            head[:6] == b"\xfd7zXZ\x00" or head[:4] == b"\x28\xb5\x2f\xfd" or \
            head[257:262] == b"ustar":
        return "archive"
    if b"\0" in head[:4096]:
        return None
    if kallsyms.looks_like_kallsyms(head):
        return "kallsyms"
    if procmaps.looks_like_maps(head):
        return "maps"
    if perfmap.looks_like_perf_map(head):
        return "perfmap"
    return None


def _extract(path: str, origin: str, out: Collected, budget: _Budget, work: Path,
             depth: int) -> None:
    compressed = os.path.getsize(path) or 1
    before = budget.bytes
    try:
        with open(path, "rb") as f:
            head = f.read(8)
        if head[:4] == b"PK\x03\x04":
            _extract_zip(path, origin, out, budget, work, depth, compressed, before)
        else:
            _extract_tar(path, head, origin, out, budget, work, depth, compressed, before)
    except BundleError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        out.notes.append(f"{origin}: damaged archive ({e}); what could be read was used")
    except Exception as e:  # zstandard/lzma errors have no common base
        out.notes.append(f"{origin}: damaged archive ({type(e).__name__}); what could be "
                         f"read was used")


def _target(work: Path, budget: _Budget, member: str) -> Path:
    budget.members += 1
    if budget.members > MAX_MEMBERS:
        raise BundleError(f"symbol bundles hold more than {MAX_MEMBERS} files")
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", member.rsplit("/", 1)[-1])[:80] or "member"
    return work / f"{budget.members:05d}-{base}"


def _copy(src, dst: Path, budget: _Budget, origin: str, compressed: int, before: int) -> None:
    try:
        _copy_bounded(src, dst, budget, origin, compressed, before)
    except BundleError:
        dst.unlink(missing_ok=True)  # what a bomb wrote so far does not stay on disk
        raise


def _copy_bounded(src, dst: Path, budget: _Budget, origin: str, compressed: int,
                  before: int) -> None:
    with open(dst, "wb") as out:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            budget.bytes += len(chunk)
            if budget.bytes > MAX_TOTAL_BYTES:
                raise BundleError(f"{origin}: expands beyond {MAX_TOTAL_BYTES >> 30} GiB; "
                                  f"refused")
            if budget.bytes - before > MAX_RATIO * compressed + (64 << 20):
                raise BundleError(f"{origin}: expands more than {MAX_RATIO}x (an archive "
                                  f"bomb?); refused")
            out.write(chunk)


def _extract_zip(path, origin, out, budget, work, depth, compressed, before) -> None:
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.is_dir():
                continue
            mode = info.external_attr >> 16
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # symlinks, devices
                out.notes.append(f"{origin}:{info.filename}: not a regular file; skipped")
                continue
            dst = _target(work, budget, info.filename)
            with z.open(info) as src:
                _copy(src, dst, budget, origin, compressed, before)
            _classify_file(str(dst), f"{origin}:{info.filename}", info.filename, out, budget,
                           work, depth)


def _extract_tar(path, head, origin, out, budget, work, depth, compressed, before) -> None:
    raw = open(path, "rb")
    try:
        if head[:4] == b"\x28\xb5\x2f\xfd":
            import zstandard
            stream = zstandard.ZstdDecompressor().stream_reader(raw)
            tf = tarfile.open(fileobj=stream, mode="r|")
        else:
            tf = tarfile.open(fileobj=raw, mode="r|*")
        with tf:
            for member in tf:
                if member.isdir():
                    continue
                if not member.isreg():
                    kind = "link" if member.issym() or member.islnk() else "special file"
                    if kind != "link":
                        out.notes.append(f"{origin}:{member.name}: {kind}; skipped")
                    continue  # perf archive's .build-id/ symlinks: targets are in it too
                src = tf.extractfile(member)
                if src is None:
                    continue
                dst = _target(work, budget, member.name)
                _copy(src, dst, budget, origin, compressed, before)
                _classify_file(str(dst), f"{origin}:{member.name}", member.name, out, budget,
                               work, depth)
    finally:
        raw.close()


def read_bytes(sf: SymbolFile) -> bytes:
    with open(sf.path, "rb") as f:
        return f.read()

