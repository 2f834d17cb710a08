"""The PERFILE2 file header, the attrs section and the feature sections.

File mode: a 104-byte header points at the attrs (each with its array of sample ids), the
data section and, after the data, one section per feature bit. Pipe mode (`perf record
-o -`): a 16-byte header, then records only; attrs and features arrive as records
(HEADER_ATTR, HEADER_FEATURE) and are decoded by the same functions.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import ParseError, UnrecognizedFormat
from .attr import Attr, parse_attr

MAGIC_LE = b"PERFILE2"
MAGIC_BE = b"2ELIFREP"

# feature bits
F_BUILD_ID, F_HOSTNAME, F_OSRELEASE, F_VERSION, F_ARCH, F_NRCPUS, F_CPUDESC = \
    2, 3, 4, 5, 6, 7, 8
F_CMDLINE, F_EVENT_DESC, F_SAMPLE_TIME = 11, 12, 21

_STRING_FEATURES = {F_HOSTNAME: "hostname", F_OSRELEASE: "os_release",
                    F_VERSION: "perf_version", F_ARCH: "arch", F_CPUDESC: "cpu_desc"}

#: misc bit in build_id_event: the size byte after the id is valid
_BUILD_ID_SIZE_VALID = 1 << 15


@dataclass
class Features:
    hostname: str | None = None
    os_release: str | None = None
    perf_version: str | None = None
    arch: str | None = None
    cpus_available: int | None = None
    cpus_online: int | None = None
    cpu_desc: str | None = None
    cmdline: list[str] | None = None
    #: (attr, name, ids) per event from EVENT_DESC
    event_desc: list[tuple[Attr, str, list[int]]] = field(default_factory=list)
    first_sample_ns: int | None = None
    last_sample_ns: int | None = None
    #: (pid, path) -> build-id hex; pid -1 means any process
    build_ids: dict[tuple[int, str], str] = field(default_factory=dict)


@dataclass
class FileHeader:
    endian: str  # "<" or ">"
    pipe: bool
    attrs: list[Attr] = field(default_factory=list)
    data_offset: int = 0
    data_size: int = 0
    feature_sections: dict[int, tuple[int, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def read_header(buf, length: int) -> FileHeader:
    if length < 16:
        raise UnrecognizedFormat("too short to be a perf.data file")
    magic = bytes(buf[0:8])
    if magic == MAGIC_LE:
        endian = "<"
    elif magic == MAGIC_BE:
        endian = ">"
    elif magic == b"PERFFILE":
        raise UnrecognizedFormat("a perf.data file of the format perf used before 2.6.35 "
                                 "(PERFFILE); record it again with a newer perf")
    else:
        raise UnrecognizedFormat("not a perf.data file (no PERFILE2 magic)")
    (size,) = struct.unpack_from(endian + "Q", buf, 8)
    if size == 16:
        return FileHeader(endian, True, data_offset=16, data_size=length - 16)
    if size not in (104, 72) or length < size:
        raise ParseError(f"perf.data header size {size} is not one perf writes")
    h = FileHeader(endian, False)
    attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from(
        endian + "QQQQQ", buf, 16)
    h.data_offset, h.data_size = data_off, data_size
    if data_off > length:
        raise ParseError(f"the data section starts at byte {data_off}, past the end of "
                         f"the file ({length} bytes): the file is truncated")
    if data_size == 0 or data_off + data_size > length:
        h.warnings.append(
            f"the data section is {'empty in the header' if data_size == 0 else 'cut short'}"
            f" (perf record did not finish writing the file); reading the records present")
        h.data_size = length - data_off
    # attrs
    if attr_size < 64 + 16 or attrs_off + attrs_size > length:
        raise ParseError(f"attrs section (entry size {attr_size}) does not fit the file")
    for off in range(attrs_off, attrs_off + attrs_size - attr_size + 1, attr_size):
        a = parse_attr(buf, off, attr_size - 16, endian)
        ids_off, ids_size = struct.unpack_from(endian + "QQ", buf, off + attr_size - 16)
        if ids_off + ids_size <= length and ids_size % 8 == 0:
            a.ids = list(struct.unpack_from(f"{endian}{ids_size // 8}Q", buf, ids_off))
        h.attrs.append(a)
    # feature table
    if size == 104:
        bits = _feature_bits(buf, endian)
        table = data_off + (data_size if data_size else 0)
        if data_size and table + 16 * len(bits) <= length:
            for i, bit in enumerate(bits):
                off, sz = struct.unpack_from(endian + "QQ", buf, table + 16 * i)
                if off + sz <= length:
                    h.feature_sections[bit] = (off, sz)
    return h


def _feature_bits(buf, endian: str) -> list[int]:
    words = struct.unpack_from(endian + "4Q", buf, 72)
    bits = [w * 64 + b for w in range(4) for b in range(64) if words[w] >> b & 1]
    if endian == ">" and F_HOSTNAME not in bits:
        # written as 32-bit longs by a 32-bit big-endian perf
        words32 = struct.unpack_from(endian + "8I", buf, 72)
        bits = [w * 32 + b for w in range(8) for b in range(32) if words32[w] >> b & 1]
    return bits


def read_features(buf, h: FileHeader) -> Features:
    f = Features()
    for bit, (off, size) in sorted(h.feature_sections.items()):
        try:
            apply_feature(f, bit, bytes(buf[off:off + size]), h.endian)
        except (struct.error, UnicodeDecodeError, ValueError, IndexError):
            h.warnings.append(f"feature section {bit} at byte {off} is damaged; skipped")
    return f


def apply_feature(f: Features, bit: int, data: bytes, endian: str) -> None:
    """Decode one feature payload (file section or HEADER_FEATURE record body)."""
    if bit in _STRING_FEATURES:
        setattr(f, _STRING_FEATURES[bit], _string(data, 0, endian)[0])
    elif bit == F_NRCPUS:
        f.cpus_available, f.cpus_online = struct.unpack_from(endian + "II", data, 0)
    elif bit == F_CMDLINE:
        (n,) = struct.unpack_from(endian + "I", data, 0)
        pos, args = 4, []
        for _ in range(min(n, 4096)):
            s, pos = _string(data, pos, endian)
            args.append(s)
        f.cmdline = args
    elif bit == F_EVENT_DESC:
        f.event_desc = _event_desc(data, endian)
    elif bit == F_SAMPLE_TIME:
        f.first_sample_ns, f.last_sample_ns = struct.unpack_from(endian + "QQ", data, 0)
    elif bit == F_BUILD_ID:
        f.build_ids.update(parse_build_ids(data, endian))


def _string(data: bytes, pos: int, endian: str) -> tuple[str, int]:
    (n,) = struct.unpack_from(endian + "I", data, pos)
    raw = data[pos + 4:pos + 4 + n]
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace"), pos + 4 + n


def _event_desc(data: bytes, endian: str) -> list[tuple[Attr, str, list[int]]]:
    nr, attr_size = struct.unpack_from(endian + "II", data, 0)
    pos, out = 8, []
    for _ in range(min(nr, 65536)):
        a = parse_attr(data, pos, attr_size, endian)
        pos += attr_size
        (nr_ids,) = struct.unpack_from(endian + "I", data, pos)
        name, pos = _string(data, pos + 4, endian)
        ids = list(struct.unpack_from(f"{endian}{nr_ids}Q", data, pos))
        pos += 8 * nr_ids
        out.append((a, name, ids))
    return out


def parse_build_ids(data: bytes, endian: str) -> dict[tuple[int, str], str]:
    """build_id_event records: header (type, misc, size), pid, 20-byte id buffer, [size
    byte], then the NUL-padded file name."""
    out: dict[tuple[int, str], str] = {}
    pos = 0
    while pos + 8 <= len(data):
        _type, misc, size = struct.unpack_from(endian + "IHH", data, pos)
        if size < 36 or pos + size > len(data):
            break
        (pid,) = struct.unpack_from(endian + "i", data, pos + 8)
        raw_id = data[pos + 12:pos + 32]
        id_len = data[pos + 32] if misc & _BUILD_ID_SIZE_VALID else 20
        if not misc & _BUILD_ID_SIZE_VALID:
            id_len = len(raw_id.rstrip(b"\0")) if raw_id.rstrip(b"\0") else 20
            id_len = 20 if id_len > 16 else (16 if id_len > 8 else 8)
        name = data[pos + 36:pos + size].split(b"\0", 1)[0].decode("utf-8", "replace")
        out[(pid, name)] = raw_id[:id_len].hex()
        pos += size
    return out
