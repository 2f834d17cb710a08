"""Mutations that know a format's structure, for inputs that byte edits rarely reach:
a perf.data record of another type, size or field value (byte edits mostly break the
header, and the reader stops there), a perf.data whose records travel in zstd frames
(COMPRESSED records: the records inside are only reached through the decompressor), and
a saved profile whose tables hold other values (byte edits of its JSON make JSON the
decoder refuses, so the loader's compiled row loops never see them). Each shape gives
`edit(data, choices)`, one edit, and `finish(data, choices)`, the last step."""
from __future__ import annotations

import json
import struct

from .edits import ABSURD, FORMATS, NUDGES, Choices, put

HEADER_TRACING_DATA, AUXTRACE, COMPRESSED = 66, 71, 81
#: every record type perf writes (perf_event.h and perf's own, up to COMPRESSED2), and a
#: few it does not
RECORD_TYPES = list(range(1, 22)) + list(range(64, 84)) + [0, 200, 0xFFFF, 0xFFFFFFFF]
_MAX_RECORDS = 20_000


def _endian(data) -> str | None:
    head = bytes(data[:8])
    return "<" if head == b"PERFILE2" else ">" if head == b"2ELIFREP" else None


def _data_section(data, e: str) -> tuple[int, int, bool] | None:
    """(start, end, file mode) of the records, None when the header does not say."""
    if len(data) < 16:
        return None
    (size,) = struct.unpack_from(e + "Q", data, 8)
    if size == 16:  # a pipe: records to the end
        return 16, len(data), False
    if size != 104 or len(data) < 104:
        return None
    off, n = struct.unpack_from(e + "QQ", data, 40)
    if not 104 <= off <= len(data):
        return None
    return off, min(len(data), off + n), True


def records(data, e: str, start: int, end: int) -> list[tuple[int, int]]:
    """(offset, length) of the whole records in [start, end), as the reader walks them."""
    out, pos = [], start
    while pos + 8 <= end and len(out) < _MAX_RECORDS:
        rtype, size = struct.unpack_from(e + "I", data, pos)[0], \
            struct.unpack_from(e + "H", data, pos + 6)[0]
        length = size
        if rtype == HEADER_TRACING_DATA and size >= 12:
            length += struct.unpack_from(e + "I", data, pos + 8)[0]
        elif rtype == AUXTRACE and size >= 16:
            length += struct.unpack_from(e + "Q", data, pos + 8)[0]
        if size < 8 or pos + length > end:
            break
        out.append((pos, length))
        pos += length
    return out


def small_perf_data(data: bytes, limit: int) -> bytes:
    """The file with at most `limit` bytes of its records, half of them samples and
    switches and half the rest (sideband: maps, comms, forks), each the first of its
    kind in file order, and the feature sections after them (their table re-pointed): a
    real, undamaged capture of fuzzing size, with its event names and tracepoint formats,
    even when the first thousand records of a system-wide capture are all maps."""
    e = _endian(data)
    section = _data_section(data, e) if e else None
    if section is None:
        return data[:limit]
    start, end, file_mode = section
    budget = {True: limit // 2, False: limit // 2}  # samples and switches, the rest
    kept = bytearray()
    for pos, length in records(data, e, start, end):
        kind = struct.unpack_from(e + "I", data, pos)[0] in (9, 14, 15)
        if length <= budget[kind]:
            budget[kind] -= length
            kept += data[pos:pos + length]
        elif budget[not kind] < 8:
            break
    out = bytearray(data[:start]) + kept + data[end:]
    if file_mode:
        _resized(out, e, end, start + len(kept) - end)
    return bytes(out)


def _resized(data: bytearray, e: str, end: int, delta: int) -> None:
    """The header's data size and the feature table's offsets after the data section
    (which ended at `end`) grew by `delta` bytes, in place."""
    (size,) = struct.unpack_from(e + "Q", data, 48)
    struct.pack_into(e + "Q", data, 48, min(max(0, size + delta), (1 << 64) - 1))
    bits = int.from_bytes(data[72:104], "little")
    for i in range(bin(bits).count("1")):
        at = end + delta + 16 * i
        if at + 16 > len(data):
            break
        (off,) = struct.unpack_from(e + "Q", data, at)
        if off >= end and 0 <= off + delta < 1 << 64:
            struct.pack_into(e + "Q", data, at, off + delta)


class PerfData:
    """Edits of one record of the data section: its type, its size, a field of its
    body, the record repeated, dropped or moved; and, at the end, sometimes the whole
    data section put into COMPRESSED records (one zstd stream in frames of at most
    64 KiB, records straddling them, as perf record -z writes it)."""

    share = 35  # percent of the edits; the rest are byte edits anywhere

    def edit(self, data: bytearray, c: Choices) -> bytearray:
        e = _endian(data)
        section = _data_section(data, e) if e else None
        recs = records(data, e, section[0], section[1]) if section else []
        if not recs:
            return data
        pos, length = c.pick(recs)
        before = len(data)
        op = c.int(0, 6)
        if op == 0:  # another type: its body read with another type's layout
            struct.pack_into(e + "I", data, pos, c.pick(RECORD_TYPES))
        elif op == 1:  # another misc (cpumode, switch-out and exec bits)
            struct.pack_into(e + "H", data, pos + 4, c.int(0, 0xFFFF))
        elif op == 2:  # a size off by a little, or absurd
            size = struct.unpack_from(e + "H", data, pos + 6)[0] + c.pick(NUDGES + [0])
            struct.pack_into(e + "H", data, pos + 6,
                             (size if c.int(0, 1) else c.pick(ABSURD)) & 0xFFFF)
        elif op == 3:  # a field of the body: absurd, or off by a little
            if length > 8:
                at = pos + 8 + (c.int(0, length - 9) & ~7)
                width, fmt = (8, e + "Q") if at + 8 <= pos + length else (4, e + "I")
                if at + width <= pos + length:
                    (old,) = struct.unpack_from(fmt, data, at)
                    value = c.pick(ABSURD) if c.int(0, 1) else old + c.pick(NUDGES)
                    struct.pack_into(fmt, data, at, value & ((1 << (8 * width)) - 1))
        elif op == 4:  # the record again, a few times
            data[pos:pos] = data[pos:pos + length] * c.int(1, 3)
        elif op == 5:  # the record dropped
            del data[pos:pos + length]
        else:  # the record moved after another
            other, olen = c.pick(recs)
            rec = bytes(data[pos:pos + length])
            if other + olen <= pos:
                del data[pos:pos + length]
                data[other + olen:other + olen] = rec
            elif other >= pos + length:
                data[other + olen:other + olen] = rec
                del data[pos:pos + length]
        if section[2]:  # the data section's size and the features follow the edit
            _resized(data, e, section[1], len(data) - before)
        return data

    def finish(self, data: bytearray, c: Choices) -> bytes:
        if c.int(0, 7):
            return bytes(data)
        return compressed(bytes(data), c)


def compressed(data: bytes, c: Choices) -> bytes:
    """The data section's records as COMPRESSED records of one zstd stream, cut into
    frames at sizes chosen by `c` (records straddle frames); the rest as it was."""
    import zstandard
    e = _endian(data)
    section = _data_section(data, e) if e else None
    if section is None:
        return data
    start, end, file_mode = section
    raw = data[start:end]
    z = zstandard.ZstdCompressor(level=1).compressobj()
    out, at = bytearray(), 0
    while at < len(raw):
        n = c.int(1, 16384)
        chunk = z.compress(raw[at:at + n]) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        at += n
        while chunk:  # a COMPRESSED record holds at most 65535 - 8 bytes
            piece, chunk = chunk[:65527], chunk[65527:]
            out += struct.pack(e + "IHH", COMPRESSED, 0, 8 + len(piece)) + piece
    result = bytearray(data[:start]) + out + data[end:]
    if file_mode:
        _resized(result, e, end, len(out) - (end - start))
    return bytes(result)


#: what a saved profile's table cell is replaced with
_VALUES = [-1, 0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 31, 1 << 63, (1 << 64) - 1,
           1 << 64, 10**30, -(1 << 63), -(1 << 64), 1.5, float("1e300"), "", "x", None, True,
           [], [0], [[]], [[0, 0]], [["f", 1]], {}, [None], [-1], [1 << 70]]
_TABLES = ("functions", "locations", "location_files", "mappings", "events", "strings")


class SavedProfile:
    """Edits of the tables of a saved profile (analysis/profile_io.py: magic, a u64
    length, the JSON document, the columns: the locations' ten, the stacks' offsets and
    location ids, then the samples'): a cell, a row's length, a row or a table replaced, a row repeated, on
    the decoded document, written back as JSON; or a byte edit of the columns after it (byte edits of the JSON make JSON the decoder refuses:
    the row loops would never see them)."""

    share = 100

    def edit(self, data: bytearray, c: Choices) -> bytearray:
        from analysis.profile_io import MAGIC
        if data[:len(MAGIC)] != MAGIC or len(data) < len(MAGIC) + 8:
            return data
        (n,) = struct.unpack_from("<Q", data, len(MAGIC))
        start = len(MAGIC) + 8
        if c.int(0, 2) == 0 and start + n < len(data):
            return self._columns(data, start + n, c)
        try:
            doc = json.loads(bytes(data[start:start + n]))
        except ValueError:
            return data
        if not isinstance(doc, dict):
            return data
        key = c.pick(_TABLES)
        table = doc.get(key)
        if not isinstance(table, list) or not table:
            doc[key] = c.pick(_VALUES)
        else:
            i = c.int(0, len(table) - 1)
            row = table[i]
            op = c.int(0, 4)
            if op <= 1 and isinstance(row, list) and row:  # a cell
                row[c.int(0, len(row) - 1)] = c.pick(_VALUES)
            elif op == 2 and isinstance(row, list):  # a row of another length
                if row and c.int(0, 1):
                    row.pop()
                else:
                    row.append(c.pick(_VALUES))
            elif op == 3:  # a row replaced
                table[i] = c.pick(_VALUES)
            else:  # a row repeated
                table.insert(i, row)
        blob = json.dumps(doc, separators=(",", ":")).encode()
        return bytearray(data[:len(MAGIC)]) + struct.pack("<Q", len(blob)) + blob + \
            data[start + n:]

    @staticmethod
    def _columns(data: bytearray, at: int, c: Choices) -> bytearray:
        """A column's type code, length or values (each is `<cQ` and its bytes)."""
        at = c.int(at, len(data) - 1)
        op = c.int(0, 3)
        if op == 0:
            put(data, at, c.pick(FORMATS), c.pick(ABSURD))
        elif op == 1:
            fmt = c.pick(FORMATS)
            if at + 8 <= len(data):
                (old,) = struct.unpack_from(fmt, data, at)
                put(data, at, fmt, old + c.pick(NUDGES))
        elif op == 2:
            data[at] = ord(c.pick("bBhHiIlLqQfdu"))  # another array type code
        else:
            del data[at:]
        return data

    def finish(self, data: bytearray, c: Choices) -> bytes:
        return bytes(data)
