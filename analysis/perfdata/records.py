"""Walking the record stream of the data section.

Every record is `u32 type, u16 misc, u16 size` plus a body. Two record types carry bytes
after their declared size (HEADER_TRACING_DATA, AUXTRACE); COMPRESSED (perf record -z)
and COMPRESSED2 (perf 6.16) hold chunks of one zstd stream whose decompressed bytes are
ordinary records that may straddle chunks. A record that does not fit ends the walk with
a warning naming its byte offset; everything before it is kept.
"""
from __future__ import annotations

import struct
from typing import Iterator

from ..errors import AnalysisError

# kernel record types
MMAP, LOST, COMM, EXIT, THROTTLE, UNTHROTTLE, FORK, READ, SAMPLE, MMAP2 = range(1, 11)
LOST_SAMPLES = 13
# perf tool record types
HEADER_ATTR, HEADER_EVENT_TYPE, HEADER_TRACING_DATA, HEADER_BUILD_ID, FINISHED_ROUND = \
    64, 65, 66, 67, 68
ID_INDEX, AUXTRACE_INFO, AUXTRACE, AUXTRACE_ERROR, THREAD_MAP, CPU_MAP = 69, 70, 71, 72, 73, 74
EVENT_UPDATE, TIME_CONV, HEADER_FEATURE, COMPRESSED, FINISHED_INIT, COMPRESSED2 = \
    78, 79, 80, 81, 82, 83

#: decompressed bytes we accept per input byte, and in total: a zstd bomb stops here
MAX_DECOMPRESSED = 8 << 30


class Walk:
    """Iterates (type, misc, buffer, body_start, record_end, file_offset) and collects
    warnings; `file_offset` is where the record (or its COMPRESSED carrier) starts."""

    def __init__(self, buf, start: int, end: int, endian: str) -> None:
        self.buf, self.start, self.end = buf, start, end
        self.endian = endian
        self.hdr = struct.Struct(endian + "IHH")
        self.warnings: list[str] = []
        self._zstd = None
        self._decompressed = 0

    def __iter__(self) -> Iterator[tuple[int, int, object, int, int, int]]:
        buf, end, unpack = self.buf, self.end, self.hdr.unpack_from
        pos = self.start
        pending = b""  # decompressed bytes not yet forming a whole record
        while pos + 8 <= end:
            rtype, misc, size = unpack(buf, pos)
            if size < 8 or pos + size > end:
                self._stop(pos, size, end)
                return
            if rtype == COMPRESSED or rtype == COMPRESSED2:
                if rtype == COMPRESSED2:
                    (data_size,) = struct.unpack_from(self.endian + "Q", buf, pos + 8)
                    payload = buf[pos + 16:pos + 16 + min(data_size, size - 16)]
                else:
                    payload = buf[pos + 8:pos + size]
                try:
                    pending += self._decompress(bytes(payload))
                except AnalysisError as e:
                    self.warnings.append(f"{e} at byte {pos}; records after it are lost")
                    return
                p = 0
                n = len(pending)
                while p + 8 <= n:
                    itype, imisc, isize = unpack(pending, p)
                    if isize < 8:
                        self.warnings.append(f"damaged record inside the compressed data "
                                             f"of the record at byte {pos}; stopped there")
                        return
                    if p + isize > n:
                        break
                    yield itype, imisc, pending, p + 8, p + isize, pos
                    p += isize
                pending = pending[p:]
                pos += size
                continue
            yield rtype, misc, buf, pos + 8, pos + size, pos
            if rtype == HEADER_TRACING_DATA and size >= 12:
                (extra,) = struct.unpack_from(self.endian + "I", buf, pos + 8)
                pos += size + extra
            elif rtype == AUXTRACE and size >= 16:
                (extra,) = struct.unpack_from(self.endian + "Q", buf, pos + 8)
                pos += size + extra
            else:
                pos += size
        if pos < end and end - pos < 8 and any(bytes(buf[pos:end])):
            self._stop(pos, None, end)
        if pending:
            self.warnings.append("the compressed data ends inside a record; that record "
                                 "is lost")

    def _stop(self, pos: int, size: int | None, end: int) -> None:
        if size is not None and size < 8:
            what = f"a record header with an impossible size ({size})"
        else:
            what = "a record that runs past the end of the data"
        self.warnings.append(f"perf.data is damaged or cut short at byte {pos} of "
                             f"{end}: {what}; everything before it was read")

    def _decompress(self, payload: bytes) -> bytes:
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
            raise AnalysisError(f"damaged zstd data ({e})") from e
        self._decompressed += len(out)
        if self._decompressed > MAX_DECOMPRESSED:
            raise AnalysisError("compressed records expand beyond the 8 GiB limit")
        return out
