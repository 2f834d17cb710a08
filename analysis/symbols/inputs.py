"""Turning whatever the user uploaded as symbols into classified local files.

Inputs are files, directories or archives (zip, tar, tar.gz, tar.bz2, tar.xz, tar.zst,
nested up to MAX_DEPTH). Every member is recognised by its content: ELF, kallsyms or
System.map, /proc/PID/maps, perf-PID.map, jit-PID.dump. Archives are hostile until
proven otherwise: members are extracted by content into a private folder under names we choose (so `../`
and absolute paths cannot escape), links and device files are skipped, and the number of
members and the bytes written are bounded: each member by its compressed size, and each
input with every archive inside it by the input's size, checked before every chunk is
written (an archive inside an archive has no budget of its own, so nesting gains a bomb
nothing). Decompression is streamed in bounded pieces, never a block at once.
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

from ..compressed_stream import READ_AHEAD as _READ, Counted as _Counted, \
    decompressed as _decompressed, is_compressed as _compressed
from ..errors import AnalysisError
from . import jitdump, kallsyms, perfmap, procmaps
from .elf import is_elf

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 16 << 30
#: bytes written per compressed byte: for each member, and for each input given with
#: every archive nested in it (what a nested archive writes counts against the input)
MAX_RATIO = 200
SLACK_BYTES = 1 << 20  # what a small member or input may expand to whatever its ratio
MAX_DEPTH = 2
_CHUNK = 1 << 20
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
    kind: str  # elf | kallsyms | maps | perfmap | jitdump
    build_id_hint: str = ""  # from perf's build-id cache layout
    path_hint: str = ""  # the DSO path that layout names ("/usr/lib/.../libc.so.6")
    sha256: str = ""  # of the bytes at `path`, when the caller recorded it (else hashed)


@dataclass
class Collected:
    files: list[SymbolFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Budget:
    """What extraction may still write. Checked before each chunk is written, so a bomb
    is stopped within its allowance, not after it has filled the disk."""

    def __init__(self, only: str | None = None) -> None:
        self.only = only  # the origin of the one member wanted, see collect()
        self.members = 0
        self.bytes = 0  # for the whole call
        self.input_origin = ""
        self.input_bytes = 0  # for the input being read, at every nesting level
        self.input_limit = 0

    def wants(self, origin: str) -> bool:
        """Is this member the one wanted, or an archive that may hold it?"""
        return self.only is None or self.only == origin or \
            self.only.startswith(origin + ":")

    def start_input(self, origin: str, size: int) -> None:
        self.input_origin = origin
        self.input_bytes = 0
        self.input_limit = MAX_RATIO * size + SLACK_BYTES

    def charge(self, n: int, member_bytes: int, member_limit: int, origin: str) -> None:
        """Account for `n` more bytes of a member that has `member_bytes` written so far
        (these `n` included) and may write `member_limit`."""
        self.bytes += n
        self.input_bytes += n
        if self.bytes > MAX_TOTAL_BYTES:
            raise BundleError(f"{origin}: expands beyond {MAX_TOTAL_BYTES >> 30} GiB; "
                              f"refused")
        if member_bytes > member_limit:
            raise BundleError(f"{origin}: expands more than {MAX_RATIO}x its compressed "
                              f"size (an archive bomb?); refused")
        if self.input_bytes > self.input_limit:
            raise BundleError(f"{self.input_origin}: expands more than {MAX_RATIO}x, "
                              f"counting the archives inside it (an archive bomb?); "
                              f"refused")


def collect(inputs: list[str | os.PathLike], workdir: str | os.PathLike,
            digests: Mapping[str, str] | None = None, only: str | None = None) -> Collected:
    """`digests`: SHA-256 of input files (by `os.fspath` of the input) recorded when they
    were stored, so a 400 MB library is not hashed again for every capture that uses it.
    Only a digest of the very bytes at that path may be given: it keys the symbol cache.
    `only`: the origin of one member ("bundle.zip:inner.tar.gz:lib.debug"); the other
    members are skipped, never written (debuginfod serves one file of a bundle)."""
    out = Collected()
    budget = _Budget(only)
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
        if depth == 0:
            budget.start_input(origin, os.path.getsize(path))
        _extract(path, origin, out, budget, work, depth + 1)
        return
    if kind is None:
        # perf archive's build-id cache holds `probes` lists (SDT probes of a binary)
        # beside the ELF files: not symbols, and nothing the user did wrong
        if member.replace("\\", "/").rsplit("/", 1)[-1] != "probes":
            out.notes.append(f"{origin}: not a symbol file (ELF, kallsyms, System.map, "
                             f"/proc/PID/maps, perf-PID.map or jit-PID.dump); skipped")
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
    if head[:4] == b"PK\x03\x04" or _compressed(head) or head[257:262] == b"ustar":
        return "archive"
    if jitdump.looks_like_jitdump(head):
        return "jitdump"
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
    try:
        with open(path, "rb") as f:
            head = f.read(8)
        if head[:4] == b"PK\x03\x04":
            _extract_zip(path, origin, out, budget, work, depth)
        else:
            _extract_tar(path, head, origin, out, budget, work, depth)
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


def _copy(src, dst: Path, budget: _Budget, origin: str, packed) -> None:
    """Copy one member; `packed()`: the compressed bytes read for it so far."""
    try:
        with open(dst, "wb") as out:
            written = 0
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                budget.charge(len(chunk), written, MAX_RATIO * packed() + SLACK_BYTES,
                              origin)
                out.write(chunk)
    except BundleError:
        dst.unlink(missing_ok=True)  # what a bomb wrote so far does not stay on disk
        raise


def _extract_zip(path, origin, out, budget, work, depth) -> None:
    size = os.path.getsize(path)
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.is_dir():
                continue
            mode = info.external_attr >> 16
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # symlinks, devices
                out.notes.append(f"{origin}:{info.filename}: not a regular file; skipped")
                continue
            if not budget.wants(f"{origin}:{info.filename}"):
                continue
            dst = _target(work, budget, info.filename)
            # zipfile reads no more than compress_size bytes of the member, nor can it
            # read more than the file holds, whatever the header claims
            packed = min(info.compress_size, size)
            with z.open(info) as src:
                _copy(src, dst, budget, f"{origin}:{info.filename}", lambda: packed)
            _classify_file(str(dst), f"{origin}:{info.filename}", info.filename, out, budget,
                           work, depth)


def _extract_tar(path, head, origin, out, budget, work, depth) -> None:
    try:
        _extract_tar_members(path, head, origin, out, budget, work, depth)
    except tarfile.ReadError:
        if not _compressed(head):
            raise  # not compressed, and no tar: what it is cannot be told
        _extract_compressed_file(path, head, origin, out, budget, work, depth)


def _extract_compressed_file(path, head, origin, out, budget, work, depth) -> None:
    """A compressed file that holds no tar (`gzip kallsyms`, `xz libfoo.so.debug`): its
    contents are one member, named as the file without its compression suffix."""
    name = re.sub(r"\.(gz|bz2|xz|zst)$", "", origin.rsplit("/", 1)[-1]) or "member"
    with open(path, "rb") as raw:
        counted = _Counted(raw)
        dst = _target(work, budget, name)
        _copy(_decompressed(counted, head), dst, budget, origin, lambda: counted.consumed)
    _classify_file(str(dst), origin, name, out, budget, work, depth)


def _extract_tar_members(path, head, origin, out, budget, work, depth) -> None:
    with open(path, "rb") as raw:
        counted = _Counted(raw)
        with tarfile.open(fileobj=_decompressed(counted, head), mode="r|",
                          bufsize=_CHUNK) as tf:
            for member in tf:
                if member.isdir():
                    continue
                if not member.isreg():
                    kind = "link" if member.issym() or member.islnk() else "special file"
                    if kind != "link":
                        out.notes.append(f"{origin}:{member.name}: {kind}; skipped")
                    continue  # perf archive's .build-id/ symlinks: targets are in it too
                if not budget.wants(f"{origin}:{member.name}"):
                    continue
                src = tf.extractfile(member)
                if src is None:
                    continue
                dst = _target(work, budget, member.name)
                # a stream has no member sizes: what is read from disk while the member
                # streams is its compressed size (plus what was read ahead before it)
                start = counted.consumed - _READ
                _copy(src, dst, budget, f"{origin}:{member.name}",
                      lambda: counted.consumed - start)
                _classify_file(str(dst), f"{origin}:{member.name}", member.name, out, budget,
                               work, depth)


def read_bytes(sf: SymbolFile) -> bytes:
    with open(sf.path, "rb") as f:
        return f.read()

