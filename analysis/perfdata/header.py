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
    #: the bytes of the data section that are in the file
    data_size: int = 0
    #: where the header says the data section ends; None for a pipe (a stream has no
    #: end written down) and for a file whose header says 0 (perf record did not finish)
    declared_end: int | None = None
    length: int = 0  # of the file
    feature_sections: dict[int, tuple[int, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        """The data runs to the end of the file (pipe, unfinished or cut file), so a
        record running past that end is where the file stops, not a damaged record."""
        return self.declared_end is None or self.declared_end > self.length


#: perf_event_attr: 64 bytes in its first version; the kernel refuses one over a page
ATTR_MIN, ATTR_MAX = 64, 4096
_IDS = 16  # each attrs entry ends with the (offset, size) of its ids array


def damaged_error(detail: str) -> ParseError:
    return ParseError(f"perf.data is damaged: {detail}; its samples cannot be read")


def damaged_magic(head: bytes) -> str | None:
    """What is wrong when a perf.data's magic took a flipped byte or two while the header
    size after it still reads as perf writes it (104, or 16 for a pipe); else None."""
    for magic, endian in ((MAGIC_LE, "<"), (MAGIC_BE, ">")):
        if len(head) >= 16 and head[:8] != magic and \
                sum(a != b for a, b in zip(head[:8], magic)) <= 2 and \
                struct.unpack_from(endian + "Q", head, 8)[0] in (104, 16):
            return f"its magic (bytes 0-7) reads {head[:8]!r} instead of {magic!r}"
    return None


def read_header(buf, length: int) -> FileHeader:
    """The header, checked against the file: every offset and size must fit the file and
    each other as perf writes them, since a misread attr or data offset decodes every
    sample wrong without any record looking damaged."""
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
        damaged = damaged_magic(bytes(buf[:16]))
        if damaged:
            raise damaged_error(damaged)
        raise UnrecognizedFormat("not a perf.data file (no PERFILE2 magic)")
    (size,) = struct.unpack_from(endian + "Q", buf, 8)
    if size == 16:
        return FileHeader(endian, True, data_offset=16, data_size=length - 16,
                          length=length)
    if size not in (104, 72):
        raise damaged_error(f"the header's size field (bytes 8-15) reads {size}; perf "
                            f"writes 104 (16 for a pipe)")
    if length < size:
        raise damaged_error(f"the file is {length} bytes, shorter than its {size}-byte "
                            f"header")
    h = FileHeader(endian, False, length=length)
    attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from(
        endian + "QQQQQ", buf, 16)
    _check_sections(size, length, attr_size, attrs_off, attrs_size, data_off)
    h.data_offset, h.data_size = data_off, data_size
    if data_size:
        h.declared_end = data_off + data_size
    if data_size == 0 or data_off + data_size > length:
        h.data_size = length - data_off
    for off in range(attrs_off, attrs_off + attrs_size, attr_size):
        h.attrs.append(_file_attr(buf, off, attr_size, length, endian))
    if size == 104 and data_size:
        _feature_table(buf, h, data_off + data_size)
    return h


def _check_sections(size: int, length: int, attr_size: int, attrs_off: int,
                    attrs_size: int, data_off: int) -> None:
    """perf writes the header, the ids arrays, the attrs and then the data, each at an
    8-byte boundary, and one attrs entry of `attr_size` bytes per event."""
    if attr_size % 8 or not ATTR_MIN + _IDS <= attr_size <= ATTR_MAX + _IDS:
        raise damaged_error(f"the header's attr_size (bytes 16-23) is {attr_size}; an "
                            f"attrs entry is a multiple of 8 from {ATTR_MIN + _IDS} to "
                            f"{ATTR_MAX + _IDS} bytes")
    if data_off > length:
        raise damaged_error(f"the header puts the data section at byte {data_off} (bytes "
                            f"40-47), past the end of the {length}-byte file: the file is "
                            f"cut short or its header is damaged")
    where = f"the attrs section (bytes 24-39: {attrs_size} bytes at byte {attrs_off})"
    if attrs_off % 8 or attrs_off < size or attrs_off + attrs_size > length:
        raise damaged_error(f"{where} is not at an 8-byte boundary inside the "
                            f"{length}-byte file after its {size}-byte header")
    if attrs_size < attr_size or attrs_size % attr_size:
        raise damaged_error(f"{where} is not a whole number of {attr_size}-byte entries "
                            f"(the header's attr_size, bytes 16-23)")
    if data_off % 8 or data_off < attrs_off + attrs_size:
        raise damaged_error(f"the data section starts at byte {data_off} (bytes 40-47), "
                            f"which is not an 8-byte boundary after the attrs section (it "
                            f"ends at byte {attrs_off + attrs_size})")


def _file_attr(buf, off: int, attr_size: int, length: int, endian: str) -> Attr:
    a = parse_attr(buf, off, attr_size - _IDS, endian)
    if a.size % 8 or not ATTR_MIN <= a.size <= attr_size - _IDS:
        raise damaged_error(f"the event attr at byte {off} says it is {a.size} bytes long, "
                            f"which does not fit its {attr_size - _IDS}-byte place in the "
                            f"attrs section")
    at = off + attr_size - _IDS
    ids_off, ids_size = struct.unpack_from(endian + "QQ", buf, at)
    if ids_size % 8 or ids_off + ids_size > length or (ids_size and ids_off % 8):
        raise damaged_error(f"the event attr at byte {off} points (bytes {at}-{at + 15}) "
                            f"at {ids_size} bytes of sample ids at byte {ids_off}, which "
                            f"are no aligned array of ids inside the {length}-byte file")
    a.ids = list(struct.unpack_from(f"{endian}{ids_size // 8}Q", buf, ids_off))
    return a


def _feature_table(buf, h: FileHeader, table: int) -> None:
    """Where each feature's section is; the table follows the data section."""
    bits = _feature_bits(buf, h.endian)
    if table > h.length:
        return  # cut short: the features went with the end of the file
    if table + 16 * len(bits) > h.length:
        raise damaged_error(f"the data section (bytes 40-55: {table - h.data_offset} bytes "
                            f"at byte {h.data_offset}) ends at byte {table}, leaving no "
                            f"room in the {h.length}-byte file for the table of the "
                            f"{len(bits)} features the feature bits (bytes 72-103) announce")
    for i, bit in enumerate(bits):
        off, sz = struct.unpack_from(h.endian + "QQ", buf, table + 16 * i)
        if off + sz <= h.length:
            h.feature_sections[bit] = (off, sz)


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
