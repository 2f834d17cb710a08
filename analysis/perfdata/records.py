"""Walking the record stream of the data section.

Every record is `u32 type, u16 misc, u16 size` plus a body. Two record types carry bytes
after their declared size (HEADER_TRACING_DATA, AUXTRACE); COMPRESSED (perf record -z)
and COMPRESSED2 (perf 6.16) hold chunks of one zstd stream whose decompressed bytes are
ordinary records that may straddle chunks. The first record that does not fit ends the
walk and `Walk.stop` says where and why; whether what was read before it may be used is
decided by `damage.judge`, not here.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

from ..errors import AnalysisError, ParseError

# kernel record types
MMAP, LOST, COMM, EXIT, THROTTLE, UNTHROTTLE, FORK, READ, SAMPLE, MMAP2 = range(1, 11)
LOST_SAMPLES = 13
# perf tool record types
HEADER_ATTR, HEADER_EVENT_TYPE, HEADER_TRACING_DATA, HEADER_BUILD_ID, FINISHED_ROUND = \
    64, 65, 66, 67, 68
ID_INDEX, AUXTRACE_INFO, AUXTRACE, AUXTRACE_ERROR, THREAD_MAP, CPU_MAP = 69, 70, 71, 72, 73, 74
EVENT_UPDATE, TIME_CONV, HEADER_FEATURE, COMPRESSED, FINISHED_INIT, COMPRESSED2 = \
    78, 79, 80, 81, 82, 83

#: decompressed bytes we accept in total, and per compressed byte read so far (real
#: captures: 9x to 97x, DWARF stack copies being mostly zeros) beyond a floor: a zstd
#: bomb stops here
MAX_DECOMPRESSED = 8 << 30
MAX_RATIO, RATIO_FLOOR = 1000, 64 << 20
#: compressed bytes handed to zstd at once: a zstd block of one repeated byte takes 4
#: bytes for 128 KiB, so one 64 KiB record could give 2 GiB in a single call; a piece
#: gives at most 32 MiB
_PIECE = 1024


@dataclass(frozen=True)
class Stop:
    """Where the walk stopped before the end of the data, and why."""

    offset: int  # file byte of the record (or of the COMPRESSED record carrying it)
    what: str  # completes "the record at byte N ..."
    #: the record runs past the last byte of the data: what a cut file looks like
    past_end: bool


class _DamagedZstd(Exception):
    pass


class Walk:
    """Iterates (type, misc, buffer, body_start, record_end, file_offset); `file_offset` is
    where the record (or its COMPRESSED carrier) starts. After the loop `stop` is None
    when the bytes up to `end` were whole records."""

    def __init__(self, buf, start: int, end: int, endian: str) -> None:
        self.buf, self.start, self.end = buf, start, end
        self.endian = endian
        self.hdr = struct.Struct(endian + "IHH")
        self.stop: Stop | None = None
        self._zstd = None
        self._decompressed = self._compressed = 0
        #: (buffer, pos, end) -> pos: consumes a run of records in bulk and returns where
        #: the first one it left begins (the importer's compiled loop); those records
        #: are not yielded
        self.scan = None

    def __iter__(self) -> Iterator[tuple[int, int, object, int, int, int]]:
        buf, end, unpack, scan = self.buf, self.end, self.hdr.unpack_from, self.scan
        pos = self.start
        pending = b""  # decompressed bytes not yet forming a whole record
        pending_from = pos  # the COMPRESSED record where they began
        while pos + 8 <= end:
            if scan is not None:
                pos = scan(buf, pos, end)
                if pos + 8 > end:
                    break
            rtype, misc, size = unpack(buf, pos)
            if size < 8:
                self.stop = Stop(pos, f"has size {size}, and a record is at least 8 bytes",
                                 False)
                return
            if pos + size > end:
                self.stop = Stop(pos, f"is {size} bytes long and runs past the end of the "
                                      f"data at byte {end}", True)
                return
            if rtype == COMPRESSED2 and size < 16:
                self.stop = Stop(pos, f"has size {size}, and a COMPRESSED2 record is at "
                                      f"least 16 bytes", False)
                return
            if rtype == COMPRESSED or rtype == COMPRESSED2:
                if rtype == COMPRESSED2:
                    (data_size,) = struct.unpack_from(self.endian + "Q", buf, pos + 8)
                    payload = bytes(buf[pos + 16:pos + 16 + min(data_size, size - 16)])
                else:
                    payload = bytes(buf[pos + 8:pos + size])
                for piece in range(0, len(payload), _PIECE):
                    try:
                        out = self._decompress(payload[piece:piece + _PIECE], pos)
                    except _DamagedZstd as e:
                        self.stop = Stop(pos, f"holds damaged zstd data ({e})", False)
                        return
                    old = len(pending)
                    if not old:
                        pending_from = pos
                    pending += out
                    p, n = 0, len(pending)
                    while p + 8 <= n:
                        if scan is not None:
                            p = scan(pending, p, n)
                            if p + 8 > n:
                                break
                        itype, imisc, isize = unpack(pending, p)
                        if isize < 8:
                            self.stop = Stop(pos, f"holds a compressed record of size "
                                                  f"{isize}, and a record is at least 8 "
                                                  f"bytes", False)
                            return
                        if p + isize > n:
                            break
                        yield itype, imisc, pending, p + 8, p + isize, pos
                        p += isize
                    if old <= p < n:
                        pending_from = pos  # the record left over began in this one
                    pending = pending[p:]
                pos += size
                continue
            yield rtype, misc, buf, pos + 8, pos + size, pos
            start = pos
            if rtype == HEADER_TRACING_DATA and size >= 12:
                (extra,) = struct.unpack_from(self.endian + "I", buf, pos + 8)
                pos += size + extra
            elif rtype == AUXTRACE and size >= 16:
                (extra,) = struct.unpack_from(self.endian + "Q", buf, pos + 8)
                pos += size + extra
            else:
                pos += size
            if pos > end:
                self.stop = Stop(start, f"carries {pos - start - size} bytes after its "
                                        f"header, past the end of the data at byte {end}",
                                 True)
                return
        if pending:
            self.stop = Stop(pending_from, "holds compressed records that end inside a "
                                           "record", True)
        elif pos < end and any(bytes(buf[pos:end])):
            # fewer than 8 bytes left: zeros are padding, anything else a cut header
            self.stop = Stop(pos, f"is cut off after {end - pos} of its 8 header bytes",
                             True)

    def _decompress(self, payload: bytes, pos: int) -> bytes:
        """The bytes `payload` (of the COMPRESSED record at byte `pos`) adds to the
        stream, within MAX_DECOMPRESSED and MAX_RATIO."""
        if self._zstd is None:
            try:
                import zstandard
            except ImportError as e:  # pragma: no cover - it is a declared dependency
                raise AnalysisError("zstd-compressed perf.data needs the zstandard "
                                    "package") from e
            self._zstd = zstandard.ZstdDecompressor().decompressobj()
        try:
            out = self._zstd.decompress(payload)
        except Exception as e:  # zstandard.ZstdError; its type is not importable lazily
            raise _DamagedZstd(str(e)) from e
        self._decompressed += len(out)
        self._compressed += len(payload)
        if self._decompressed > MAX_DECOMPRESSED:
            raise ParseError("perf.data is refused: its compressed records expand beyond "
                             "the 8 GiB limit")
        if self._decompressed > max(RATIO_FLOOR, MAX_RATIO * self._compressed):
            raise ParseError(
                f"perf.data is refused: its compressed records expand more than "
                f"{MAX_RATIO} times ({self._compressed:,} compressed bytes up to the record "
                f"at byte {pos} give {self._decompressed:,}); real captures expand under "
                f"100 times")
        return out
