"""jit-PID.dump files: the record of every piece of code a JIT made, for `perf inject
--jit`. Node's --perf-prof, the JVM with linux-perf's libperf-jvmti.so, .NET
(DOTNET_PerfMapEnabled=1), LLVM's and Wasmtime's perf profilers write them. perf inject
turns each code load into a tiny ELF file; uploaded as is, the dump names the capture's
JIT mappings directly: the samples of a `perf record -k 1` capture not yet injected land
in anonymous memory, which the dump's records place.

Format: tools/perf/util/jitdump.h. A header (magic "JiTD" in the writer's byte order,
version 1, its own size, the JIT's pid), then records of a 16-byte prefix (type, total
size, timestamp): JIT_CODE_LOAD (pid, tid, vma, code address, code size, code index,
the name up to a NUL, then the code bytes), JIT_CODE_MOVE (code index moved to a new
address), JIT_CODE_DEBUG_INFO, JIT_CODE_UNWINDING_INFO and JIT_CODE_CLOSE (not needed for
names: skipped). The dump is an upload: every size is checked against what is left of
the file before it moves the reader, a name is read up to 64 KiB within its record, code
bytes are skipped unread, and each record is charged to the file's budget (budget.py).
Like perf, reading stops at a record that does not fit in the file (a JIT killed while
writing leaves one) and keeps what came before. Where code was placed over older code,
the later load holds the address (symindex.build_latest_wins), as the mmaps perf inject
makes do.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..errors import AnalysisError
from . import budget
from .symindex import SymbolIndex, build_latest_wins

MAGIC = 0x4A695444  # "JiTD"
_HEADER = struct.Struct("IIIIII QQ")  # magic version total_size elf_mach pad1 pid ts flags
_PREFIX = struct.Struct("IIQ")  # id total_size timestamp
_LOAD = struct.Struct("IIQQQQ")  # pid tid vma code_addr code_size code_index
_MOVE = struct.Struct("IIQQQQQ")  # pid tid vma old_code_addr new_code_addr size index
JIT_CODE_LOAD, JIT_CODE_MOVE = 0, 1
FLAGS_KNOWN = 1  # JITDUMP_FLAGS_ARCH_TIMESTAMP; perf refuses a dump with any other
MAX_NAME = 64 * 1024
_TOP = 1 << 64


class JitdumpError(AnalysisError):
    """A jitdump whose header perf would refuse too."""


@dataclass
class Jitdump:
    pid: int  # the JIT's process id, as it saw it (in its PID namespace)
    index: SymbolIndex
    loads: int  # JIT_CODE_LOAD records read
    stopped: str  # why reading stopped before the end of the file ("" when it did not)


def looks_like_jitdump(head: bytes) -> bool:
    return len(head) >= 4 and struct.unpack_from("<I", head)[0] in (MAGIC, _swap32(MAGIC))


def _swap32(v: int) -> int:
    return struct.unpack("<I", struct.pack(">I", v))[0]


def read(path: str | os.PathLike) -> Jitdump:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return _read(f, size)


def parse(data: bytes) -> Jitdump:
    """(for the fuzzer: the same reader over bytes)"""
    import io
    return _read(io.BytesIO(data), len(data))


def _read(f, size: int) -> Jitdump:
    raw = f.read(_HEADER.size)
    if len(raw) < _HEADER.size:
        raise JitdumpError(f"jitdump: the file ends inside its {_HEADER.size}-byte header")
    order = "<"
    if struct.unpack_from("<I", raw)[0] != MAGIC:
        order = ">"
        if struct.unpack_from(">I", raw)[0] != MAGIC:
            raise JitdumpError("jitdump: no JiTD magic at byte 0")
    header = struct.Struct(order + _HEADER.format)
    prefix_s = struct.Struct(order + _PREFIX.format)
    load_s = struct.Struct(order + _LOAD.format)
    move_s = struct.Struct(order + _MOVE.format)
    _, version, header_size, _, _, pid, _, flags = header.unpack(raw)
    if version != 1:
        raise JitdumpError(f"jitdump: version {version} (perf reads version 1)")
    if flags & ~FLAGS_KNOWN:
        raise JitdumpError(f"jitdump: unknown flags {flags:#x} in its header (perf "
                           f"refuses them too)")
    if header_size > size:
        raise JitdumpError(f"jitdump: its header says it is {header_size:,} bytes long, "
                           f"past the end of the {size:,}-byte file")
    pos = max(header_size, _HEADER.size)
    starts: list[int] = []
    sizes: list[int] = []
    names: list[bytes] = []
    by_index: dict[int, bytes] = {}
    loads = 0
    stopped = ""
    while pos < size:
        budget.charge()
        f.seek(pos)
        raw = f.read(prefix_s.size)
        if len(raw) < prefix_s.size:
            stopped = f"the file ends inside the record at byte {pos:,}"
            break
        kind, total, _ = prefix_s.unpack(raw)
        if total < prefix_s.size or total > size - pos:
            stopped = (f"the record at byte {pos:,} says it is {total:,} bytes long "
                       f"({size - pos:,} are left)")
            break
        body = total - prefix_s.size
        if kind == JIT_CODE_LOAD and body > load_s.size:
            fixed = load_s.unpack(f.read(load_s.size))
            _, _, _, addr, code_size, code_index = fixed
            name = _name(f, min(body - load_s.size, MAX_NAME))
            if name is not None and addr + code_size <= _TOP:
                starts.append(addr)
                sizes.append(code_size)
                names.append(name)
                by_index[code_index] = name
                loads += 1
        elif kind == JIT_CODE_MOVE and body >= move_s.size:
            _, _, _, _, new_addr, code_size, code_index = move_s.unpack(f.read(move_s.size))
            name = by_index.get(code_index)
            if name is not None and new_addr + code_size <= _TOP:
                starts.append(new_addr)
                sizes.append(code_size)
                names.append(name)
        pos += total
    budget.charge(len(starts))
    return Jitdump(pid, build_latest_wins(starts, sizes, names), loads, stopped)


def _name(f, limit: int) -> bytes | None:
    """The NUL-terminated name at the reader, within `limit` bytes; None without a NUL
    or when empty (perf would read past its record)."""
    raw = f.read(limit)
    end = raw.find(b"\0")
    if end <= 0:
        return None
    return raw[:end]
