"""Inputs built to hurt: archive bombs, too many members, duplicate and escaping names,
ELF files and perf.data files whose sizes and counts are absurd. Each is refused or
bounded with a message a person can read, nothing lands outside the private folder, and
memory stays small (measured with tracemalloc)."""
import io
import os
import struct
import tarfile
import tracemalloc
import zipfile

import pytest

from analysis.errors import AnalysisError, ParseError
from analysis.importers import load
from analysis.symbols import elf, inputs
from analysis.symbols.inputs import BundleError, collect
from conftest import FIXTURES, SPINPOOL

LIB = FIXTURES / "perfdata" / "bin" / "libplugin.so"
MiB = 1 << 20


def _peak(fn):
    """(result or exception, peak traced bytes)."""
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001 - returned for the test to judge
            out = e
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _work(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work


def _tar(path, members, mode="w:gz"):
    with tarfile.open(path, mode) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


def test_tar_bomb_is_refused(tmp_path):
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as t:
        info = tarfile.TarInfo("zeros.debug")
        info.size = 300 * MiB

        class Zeros(io.RawIOBase):
            left = info.size

            def readinto(self, b):
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n
        t.addfile(info, Zeros())
    assert bomb.stat().st_size < MiB
    out, peak = _peak(lambda: collect([bomb], _work(tmp_path)))
    assert isinstance(out, BundleError) and "expands more than 200x" in str(out)
    assert peak < 64 * MiB  # tarfile's and zlib's buffers, not the 300 MiB
    assert list((tmp_path / "work").iterdir()) == []  # the partial member is removed


def test_too_many_members_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_MEMBERS", 50)  # the real limit is 20,000
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as z:
        for i in range(60):
            z.writestr(f"f{i}", b"x")
    with pytest.raises(BundleError, match="more than 50 files"):
        collect([many], _work(tmp_path))


def test_duplicate_names_do_not_overwrite(tmp_path):
    kallsyms = zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip").read("kallsyms")[:64 * 1024]
    maps = (SPINPOOL / "1.0.0-idle.maps").read_bytes()
    dup = tmp_path / "dup.tar.gz"
    _tar(dup, [("symbols", kallsyms), ("symbols", maps)])
    got = collect([dup], _work(tmp_path))
    assert sorted(f.kind for f in got.files) == ["kallsyms", "maps"]
    assert len({f.path for f in got.files}) == 2


def test_absolute_and_escaping_tar_names_stay_inside(tmp_path):
    maps = (SPINPOOL / "1.0.0-idle.maps").read_bytes()
    bad = tmp_path / "bad.tar"
    _tar(bad, [("/etc/cron.d/maps", maps), ("../../../tmp/escape-maps", maps),
               ("a/../../b/maps", maps)], mode="w")
    work = _work(tmp_path)
    got = collect([bad], work)
    assert [f.kind for f in got.files] == ["maps"] * 3
    assert all(os.path.dirname(f.path) == str(work) for f in got.files)
    assert not os.path.exists("/etc/cron.d/maps") and not (tmp_path / "b").exists()


def _patched_elf(tmp_path, edits):
    data = bytearray(LIB.read_bytes())
    for offset, fmt, value in edits:
        struct.pack_into(fmt, data, offset, value)
    path = tmp_path / "hostile.so"
    path.write_bytes(bytes(data))
    return path


SHOFF, SHNUM = 0x28, 0x3C  # ELF64 header fields
SYMTAB_SIZE = 14304 + 29 * 64 + 0x20  # section 29 (.symtab) sh_size


def test_elf_with_absurd_section_table(tmp_path):
    for edits in ([(SHOFF, "<Q", 1 << 62)], [(SHNUM, "<H", 0xFFFF)],
                  [(SHOFF, "<Q", 0), (SHNUM, "<H", 0)]):
        path = _patched_elf(tmp_path, edits)
        out, peak = _peak(lambda: (elf.read_info(str(path)), elf.function_symbols(str(path))))
        assert peak < 8 * MiB
        assert isinstance(out, (tuple, elf.ElfUnreadable)), repr(out)


def test_elf_symbol_table_claiming_exabytes_is_bounded(tmp_path):
    """A .symtab whose sh_size says 2^60 bytes is damaged: no part of what it claims is
    known to be it, so it is not read (the .dynsym names what it can), in bounded memory,
    and read_info says which field of which byte is wrong."""
    path = _patched_elf(tmp_path, [(SYMTAB_SIZE, "<Q", 1 << 60)])
    out, peak = _peak(lambda: elf.function_symbols(str(path)))
    assert peak < 8 * MiB  # never what the header claims
    index, table = out
    assert table == ".dynsym" and len(index) > 0
    info = elf.read_info(str(path))
    assert not info.has_symtab and info.has_dynsym
    assert info.damage == [f"section 29 (.symtab) says it holds {1 << 60:,} bytes at byte "
                           f"13,000 (sh_size at byte {SYMTAB_SIZE:,}, sh_offset at byte "
                           f"{SYMTAB_SIZE - 8:,}), past the end of the 16,352-byte file: "
                           f"it is not read"]


def test_elf_string_table_without_a_nul_is_bounded(tmp_path):
    """libc's .symtab (10,012 symbols) over a .strtab of 132,499 bytes none of which is
    a NUL: each name ran to the end of the table, 221 MB of names and a 617 MB peak from
    a 381 KB file. Names are cut at MAX_NAME and may add up to a few times their table;
    past that the file is refused, naming the table."""
    data = bytearray((FIXTURES / "dwarf" / "system-libs" / "libc.so.6.symtab.debug")
                     .read_bytes())
    strtab_off, strtab_size = 0x03B640, 0x020593  # section 64 (.strtab)
    data[strtab_off:strtab_off + strtab_size] = b"A" * strtab_size
    path = tmp_path / "libc.debug"
    path.write_bytes(bytes(data))
    out, peak = _peak(lambda: elf.function_symbols(str(path)))
    assert peak < 64 * MiB
    assert isinstance(out, elf.ElfUnreadable), out
    assert str(out) == ("libc.debug: the names of the symbols of section 63 (.symtab) add "
                        "up to more than 4 times the 132,499 bytes of its string table "
                        "(section 64): their st_name fields point into the same long names "
                        "again and again")


def _perf_data(edits=(), append=b""):
    data = bytearray((SPINPOOL / "1.1.0-busy.perf.data").read_bytes())
    for offset, fmt, value in edits:
        struct.pack_into(fmt, data, offset, value)
    return bytes(data) + append


# perf.data header: magic, size, attr_size, attrs (offset, size), data (offset, size)
ATTRS_SIZE, DATA_OFFSET, DATA_SIZE = 32, 40, 48


def test_perf_data_with_absurd_data_size_is_refused_in_bounded_memory():
    out, peak = _peak(lambda: load(io.BytesIO(_perf_data([(DATA_SIZE, "<Q", 1 << 63)]))))
    # read as a cut file, its feature table (where the real data ends) is no record
    assert isinstance(out, ParseError), out
    assert str(out).startswith("perf.data is damaged: the record at byte 14296 ")
    assert peak < 64 * MiB


def test_perf_data_with_absurd_attrs_size_is_refused():
    with pytest.raises(ParseError, match="attrs section"):
        load(io.BytesIO(_perf_data([(ATTRS_SIZE, "<Q", 1 << 40)])))


def test_perf_data_record_of_size_zero_stops_with_the_byte_offset():
    data = _perf_data()
    offset, = struct.unpack_from("<Q", data, DATA_OFFSET)
    bad = bytearray(data)
    at = offset + 4096
    # walk to a record boundary near `at`, then zero its size field
    pos = offset
    while pos < at:
        pos += struct.unpack_from("<IHH", bad, pos)[2]
    struct.pack_into("<H", bad, pos + 6, 0)
    # perf refuses it too ("failed to process type"), and keeps none of the samples
    with pytest.raises(ParseError, match=f"the record at byte {pos} .* has size 0"):
        load(io.BytesIO(bytes(bad)))


def test_perf_data_record_claiming_65535_bytes_past_the_end():
    data = _perf_data()
    offset, = struct.unpack_from("<Q", data, DATA_OFFSET)
    size, = struct.unpack_from("<Q", data, DATA_SIZE)
    end = offset + size
    pos = offset
    while True:  # the last record
        n = struct.unpack_from("<IHH", data, pos)[2]
        if pos + n >= end:
            break
        pos += n
    bad = bytearray(data)
    struct.pack_into("<H", bad, pos + 6, 0xFFFF)
    # the data section is whole in the file, so the header and this record disagree:
    # damage, not a cut (perf 6.1 exits 234 without a sample)
    with pytest.raises(ParseError, match=f"the record at byte {pos} .* is 65535 bytes long "
                                         f"and runs past the end of the data"):
        load(io.BytesIO(bytes(bad)))


def _sample_field(data: bytes, nth: int, field_at) -> tuple[int, int]:
    """(file byte of the nth SAMPLE record, of a field in it: `field_at(reader)` bytes
    into its body)."""
    from analysis.perfdata.header import read_header
    from analysis.perfdata.sample import SampleReader
    h = read_header(data, len(data))
    reader = SampleReader(h.attrs[0], "<", "x86_64")
    pos, seen = h.data_offset, 0
    while True:
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        if rtype == 9:
            seen += 1
            if seen == nth:
                return pos, pos + 8 + field_at(reader)
        pos += size


def _both_ways(data: bytes) -> list[str]:
    """The error of the compiled record loop and of the Python reader alone."""
    from analysis.importers import perf_data
    out = []
    for compiled in (True, False):
        with perf_data._mapped(io.BytesIO(data)) as buf:
            r = perf_data._Reader(buf, len(buf))
            if not compiled:
                r._scan = lambda b, pos, end: pos
            with pytest.raises(ParseError) as e:
                r.read()
            out.append(str(e.value))
    return out


PERF_FORMAT_LOST = SPINPOOL.parent.parent / "public" / "KDAB__hotspot" / "tests" / \
    "integrationtests" / "perf.data.PerfFormatLost"


@pytest.mark.parametrize("path, field, what", [
    # the call chain's nr, after the fixed fields: the compiled loop leaves it to Python
    (SPINPOOL / "1.1.0-busy.perf.data", lambda r: r.prefix.size,
     "the call chain's nr (byte {rel} of the record) says {n:,} addresses"),
    # a read group's nr (PERF_FORMAT_GROUP): was an OverflowError, "failed unexpectedly"
    (PERF_FORMAT_LOST, lambda r: r.prefix.size,
     "the read group's nr (byte {rel} of the record) says {n:,} values of 24 bytes"),
], ids=["call-chain", "read-group"])
def test_a_sample_count_past_its_record_names_the_field_compiled_or_not(path, field, what):
    data = bytearray(path.read_bytes())
    record, at = _sample_field(bytes(data), 3, field)
    n = 1 << 62
    struct.pack_into("<Q", data, at, n)
    compiled, python = _both_ways(bytes(data))
    assert compiled == python
    assert f"the first a SAMPLE record at byte {record} " in compiled
    assert what.format(rel=at - record, n=n) + ", which run past the end of the" in compiled


def _with_record_first(path, record: bytes) -> bytes:
    """The perf.data at `path` with `record` the first of its data section (the header's
    data size and the feature sections' offsets, which follow the data, moved by it)."""
    data = bytearray(path.read_bytes())
    off, size = struct.unpack_from("<QQ", data, 40)
    bits = sum(bin(w).count("1") for w in struct.unpack_from("<4Q", data, 72))
    table = off + size
    for k in range(bits):
        f_off, f_size = struct.unpack_from("<QQ", data, table + 16 * k)
        struct.pack_into("<QQ", data, table + 16 * k, f_off + len(record), f_size)
    struct.pack_into("<Q", data, 48, size + len(record))
    return bytes(data[:off] + record + data[off:])


def test_perf_data_zstd_bomb_is_refused_in_bounded_memory():
    """A COMPRESSED record of 32,786 bytes holding 1 GiB of one repeated byte (zstd
    writes 128 KiB of it in 4 bytes): it was decompressed in one call, a 1 GiB bytes
    object and a copy of it; now the stream is fed in 1 KiB pieces and refused past 1,000
    times what was read (real captures: under 100)."""
    import zstandard
    z = zstandard.ZstdCompressor(level=1).compressobj()
    frame = b"".join(z.compress(b"\xbb" * MiB) for _ in range(1024)) + z.flush()
    record = struct.pack("<IHH", 81, 0, 8 + len(frame)) + frame  # PERF_RECORD_COMPRESSED
    bomb = _with_record_first(FIXTURES / "perfdata" / "compressed.perf.data", record)
    out, peak = _peak(lambda: load(io.BytesIO(bomb)))
    assert isinstance(out, ParseError), out
    assert str(out).startswith("perf.data is refused: its compressed records expand more "
                               "than 1000 times (")
    assert peak < 160 * MiB


def test_garbage_behind_a_valid_magic_is_a_typed_error():
    for junk in (b"PERFILE2" + b"\xff" * 200, b"PERFILE2", b"PERFILE2" + bytes(96)):
        with pytest.raises(AnalysisError):
            load(io.BytesIO(junk), "perf-data")


def test_gzip_perf_data_bomb_is_refused():
    import gzip
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz:
        gz.write(_perf_data()[:104])
        for _ in range(300):
            gz.write(bytes(MiB))
    assert len(buf.getvalue()) < MiB
    out, peak = _peak(lambda: load(io.BytesIO(buf.getvalue())))
    assert isinstance(out, ParseError) and "expands more than 100x" in str(out)
    assert peak < 16 * MiB
