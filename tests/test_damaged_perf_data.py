"""Damaged perf.data: refused with the part and byte that is wrong, or, when only the end
of the file is missing, read in part and marked damaged; never "idle" or "no samples".

Every variant is made from the spinpool 1.0.0 idle capture (975 samples; its data section
is bytes 296-99256, then the feature sections to byte 103996). What perf 6.1 says about
the same variant (`perf script -F comm -i FILE`, `perf report --stdio -i FILE`) is noted
beside each case: it reads nothing from any damaged file, only from a stream cut short.
"""
import struct
from collections import Counter

import pytest

from analysis.compare import compare
from analysis.errors import AnalysisError, ParseError
from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES, SPINPOOL
from test_perf_data_spinpool import _samples

IDLE = SPINPOOL / "1.0.0-idle.perf.data"
DATA_START, DATA_END = 296, 99256
FIRST_SAMPLE, SAMPLE_500, LAST_RECORD = 1968, 51400, 99248  # record offsets in IDLE
CHAIN_NR = 40  # in a sample record of IDLE: header 8, ip, pid/tid, time, period
PIPE = FIXTURES / "perfdata" / "pipe.perf.data"  # 179 samples, records from byte 16


@pytest.fixture(scope="module")
def whole():
    return load(IDLE)


def _variant(tmp_path, src=IDLE, edits=(), flip=None, cut=None):
    data = bytearray(src.read_bytes())
    for offset, fmt, value in edits:
        struct.pack_into(fmt, data, offset, value)
    if flip is not None:
        data[flip] ^= 0xFF
    path = tmp_path / "damaged.perf.data"
    path.write_bytes(bytes(data[:cut]))
    return path


def _refused(path) -> str:
    with pytest.raises(ParseError) as e:
        load(path)
    return str(e.value)


HEADER = "perf.data is damaged: "
UNREADABLE = "; its samples cannot be read"

# (what is damaged, edits, flipped byte, the message); perf's answer in the comment
HEADER_DAMAGE = [
    # "attr size field is 0 which is unexpected", no sample
    ("attr_size 0", [(16, "<Q", 0)], None,
     "the header's attr_size (bytes 16-23) is 0; an attrs entry is a multiple of 8 from 80 "
     "to 4112 bytes"),
    # "incompatible file format"
    ("attr_size 72", [(16, "<Q", 72)], None,
     "the header's attr_size (bytes 16-23) is 72; an attrs entry is a multiple of 8 from "
     "80 to 4112 bytes"),
    # "0x128 [0xd0]: failed to process type: 69", no sample (before: 975 skipped, "Idle")
    ("attr_size 200", [(16, "<Q", 200)], None,
     "the attrs section (bytes 24-39: 144 bytes at byte 152) is not a whole number of "
     "200-byte entries (the header's attr_size, bytes 16-23)"),
    ("attr_size 1000", [(16, "<Q", 1000)], None,
     "the attrs section (bytes 24-39: 144 bytes at byte 152) is not a whole number of "
     "1000-byte entries (the header's attr_size, bytes 16-23)"),
    ("attr_size 2^40", [(16, "<Q", 1 << 40)], None,
     "the header's attr_size (bytes 16-23) is 1099511627776; an attrs entry is a multiple "
     "of 8 from 80 to 4112 bytes"),
    # "incompatible file format"
    ("magic, byte 0", [], 0,
     "its magic (bytes 0-7) reads b'\\xafERFILE2' instead of b'PERFILE2'"),
    ("magic, byte 3", [], 3,
     "its magic (bytes 0-7) reads b'PER\\xb9ILE2' instead of b'PERFILE2'"),
    ("header size", [], 8,
     "the header's size field (bytes 8-15) reads 151; perf writes 104 (16 for a pipe)"),
    # perf reads its one attr by the attr's own size: 975 samples; the attrs are damaged
    ("attr_size, flipped", [], 16,
     "the header's attr_size (bytes 16-23) is 111; an attrs entry is a multiple of 8 from "
     "80 to 4112 bytes"),
    # "failed to process type: 69"; we read all 975 with a garbage attr: 0.04 CPUs busy
    ("attrs offset", [], 24,
     "the attrs section (bytes 24-39: 144 bytes at byte 103) is not at an 8-byte boundary "
     "inside the 103996-byte file after its 104-byte header"),
    # "failed to process type: 69" (before: 975 skipped, "Idle")
    ("attrs size", [], 32,
     "the attrs section (bytes 24-39: 111 bytes at byte 152) is not a whole number of "
     "144-byte entries (the header's attr_size, bytes 16-23)"),
    # "0x1d7 [0]: failed to process type: 186368": the same byte, 471
    ("data offset", [], 40,
     "the data section starts at byte 471 (bytes 40-47), which is not an 8-byte boundary "
     "after the attrs section (it ends at byte 296)"),
    ("data offset past the end", [(40, "<Q", 1 << 20)], None,
     "the header puts the data section at byte 1048576 (bytes 40-47), past the end of the "
     "103996-byte file: the file is cut short or its header is damaged"),
    ("attr's own size", [(152 + 4, "<I", 200)], None,
     "the event attr at byte 152 says it is 200 bytes long, which does not fit its "
     "128-byte place in the attrs section"),
    ("attr's ids", [(152 + 128 + 8, "<Q", 1 << 30)], None,
     "the event attr at byte 152 points (bytes 280-295) at 1073741824 bytes of sample ids "
     "at byte 104, which are no aligned array of ids inside the 103996-byte file"),
    ("data size short of the feature table", [(48, "<Q", 103996 - DATA_START - 8)], None,
     "the data section (bytes 40-55: 103692 bytes at byte 296) ends at byte 103988, "
     "leaving no room in the 103996-byte file for the table of the 20 features the "
     "feature bits (bytes 72-103) announce"),
]


@pytest.mark.parametrize("what,edits,flip,message", HEADER_DAMAGE,
                         ids=[c[0] for c in HEADER_DAMAGE])
def test_header_damage_is_refused_naming_the_field_and_its_bytes(tmp_path, what, edits,
                                                                 flip, message):
    path = _variant(tmp_path, edits=edits, flip=flip)
    assert _refused(path) == HEADER + message + UNREADABLE
    with pytest.raises(ParseError, match="perf.data is damaged"):
        load(path, "perf-data")  # the same when the format is not detected first


@pytest.mark.parametrize("flip", [56, 64, 80, 88, 96])
def test_flipped_bytes_that_no_reader_uses_change_nothing(tmp_path, whole, flip):
    """event_types (bytes 56-71, unused since perf 2.6) and feature bits of features no
    perf writes (bytes 80-103, bits 64-255): perf reads all 975 samples, and so do we."""
    p = load(_variant(tmp_path, flip=flip))
    assert _samples(p) == _samples(whole)
    assert p.meta.damaged is None and p.notes == whole.notes == []
    assert p.meta.hostname == "vm"


def test_flipped_feature_bits_lose_metadata_not_samples(tmp_path, whole):
    """Byte 72 holds the bits of features 0-7: the table then assigns sections to the
    wrong features. perf reads 975 samples; so do we, and say which sections misread."""
    p = load(_variant(tmp_path, flip=72))
    assert _samples(p) == _samples(whole)
    assert p.meta.damaged is None
    assert p.notes == ["feature section 11 at byte 100280 is damaged; skipped",
                       "feature section 12 at byte 100288 is damaged; skipped"]


RECORD = "perf.data is damaged: the record at byte "

# (what, edits, the message); perf exits non-zero printing no sample for each
RECORD_DAMAGE = [
    # "0x128 [0]: failed to process type: 69"
    ("first record size 0", [(DATA_START + 6, "<H", 0)],
     "296 (offset 0x0 of the data section) has size 0, and a record is at least 8 bytes; "
     "perf cannot read past it either (0 samples before it, 98960 bytes of data from it "
     "on)"),
    # "0x128 [0x4]: failed to process type: 69"
    ("first record size 4", [(DATA_START + 6, "<H", 4)],
     "296 (offset 0x0 of the data section) has size 4, and a record is at least 8 bytes; "
     "perf cannot read past it either (0 samples before it, 98960 bytes of data from it "
     "on)"),
    # "0x10127 [0]: failed to process type: 768": the first record swallows 65535 bytes
    # of samples, and the next header read is zeros, at the byte perf names
    ("first record size 0xffff", [(DATA_START + 6, "<H", 0xFFFF)],
     "65831 (offset 0xffff of the data section) has size 0, and a record is at least 8 "
     "bytes; perf cannot read past it either (0 samples before it, 33425 bytes of data "
     "from it on)"),
    ("the 500th sample size 0", [(SAMPLE_500 + 6, "<H", 0)],
     "51400 (offset 0xc7a0 of the data section) has size 0, and a record is at least 8 "
     "bytes; perf cannot read past it either (499 samples before it, 47856 bytes of data "
     "from it on)"),
    # the data section is whole in the file, so the record is damaged, not cut
    ("the last record past the data section", [(LAST_RECORD + 6, "<H", 0xFFFF)],
     "99248 (offset 0x18288 of the data section) is 65535 bytes long and runs past the "
     "end of the data at byte 99256; perf cannot read past it either (975 samples before "
     "it, 8 bytes of data from it on)"),
    # perf crashes (SIGBUS)
    ("data size, flipped", [(48, "<B", 0x90 ^ 0xFF)],
     "99144 (offset 0x18220 of the data section) is 104 bytes long and runs past the end "
     "of the data at byte 99223; perf cannot read past it either (974 samples before it, "
     "79 bytes of data from it on)"),
]


@pytest.mark.parametrize("what,edits,message", RECORD_DAMAGE,
                         ids=[c[0] for c in RECORD_DAMAGE])
def test_record_damage_is_refused_naming_the_byte(tmp_path, what, edits, message):
    assert _refused(_variant(tmp_path, edits=edits)) == RECORD + message


def test_a_sample_that_does_not_fit_its_layout_refuses_the_capture(tmp_path):
    """Its call chain claims 1,000 frames in a 120-byte record: before, it was skipped
    with a note and the other 974 analyzed as if nothing were missing. The message
    names the field and its byte in the record."""
    path = _variant(tmp_path, edits=[(SAMPLE_500 + CHAIN_NR, "<Q", 1000)])
    assert _refused(path) == (
        "perf.data is damaged: 1 record does not decode with the layout of its event, the "
        "first a SAMPLE record at byte 51400 (offset 0xc7a0 of the data section): the call "
        "chain's nr (byte 40 of the record) says 1,000 addresses, which run past the end of "
        "the 120-byte record; no finding is drawn from a capture whose records are "
        "unreadable")


def test_cut_within_the_tolerance_keeps_the_samples_marked_damaged(tmp_path, whole):
    # perf: "0x182b8 [0]: failed to process type: 0", no sample
    p = load(_variant(tmp_path, cut=99000))
    assert len(p) == 972
    assert not Counter(_samples(p)) - Counter(_samples(whole))
    assert p.meta.damaged == (
        "perf.data is damaged: the file ends at byte 99000; the header declares 98960 "
        "bytes of data, up to byte 99256: the file is cut short. 972 samples were read; "
        "the 256 bytes from there on (0.3% of the data section) are lost. No finding is "
        "drawn from a damaged capture.")
    assert p.notes == [p.meta.damaged]
    report = build_report(p, label="idle")
    assert [f["rule"] for f in report["findings"]] == ["damaged-capture"]
    assert report["findings"][0]["summary"] == p.meta.damaged
    assert report["metadata"]["damaged"] == p.meta.damaged
    assert report["samples"] == 972


def test_cut_inside_a_record_names_it(tmp_path):
    p = load(_variant(tmp_path, cut=99200))  # inside the last sample, at 99144
    assert len(p) == 974
    assert p.meta.damaged == (
        "perf.data is damaged: the record at byte 99144 (offset 0x18220 of the data "
        "section) is 104 bytes long and runs past the end of the data at byte 99200; the "
        "header declares 98960 bytes of data, up to byte 99256: the file is cut short. "
        "974 samples were read; the 112 bytes from there on (0.1% of the data section) "
        "are lost. No finding is drawn from a damaged capture.")


def test_cut_beyond_the_tolerance_is_refused(tmp_path):
    # perf: "0xea78 [0]: failed to process type: 0", no sample (before: 581 analyzed)
    assert _refused(_variant(tmp_path, cut=60000)) == (
        "perf.data is cut short: the record at byte 59880 (offset 0xe8c0 of the data "
        "section) is 144 bytes long and runs past the end of the data at byte 60000; the "
        "header declares 98960 bytes of data, up to byte 99256: the file is cut short. "
        "39376 bytes (39.8%) of the data section are missing, more than the 1% a capture "
        "may lose and still be analyzed (581 samples were read before it)")


def test_just_over_the_tolerance_is_refused(tmp_path):
    """1% of this data section is 989.6 bytes: a cut 992 bytes before its end fails."""
    assert "992 bytes (1.0%) of the data section are missing" in \
        _refused(_variant(tmp_path, cut=DATA_END - 992))
    assert len(load(_variant(tmp_path, cut=DATA_END - 600))) > 960


def test_cut_before_any_sample_is_refused_not_idle(tmp_path):
    # before: "the capture holds no samples ... (idle, 0% CPU)"
    assert _refused(_variant(tmp_path, cut=1000)) == (
        "perf.data is cut short: the record at byte 976 (offset 0x2a8 of the data "
        "section) is 136 bytes long and runs past the end of the data at byte 1000; the "
        "header declares 98960 bytes of data, up to byte 99256: the file is cut short; no "
        "sample could be read before it")
    assert _refused(_variant(tmp_path, cut=FIRST_SAMPLE)).endswith(
        "no sample could be read before it")


def test_perf_record_killed_before_writing_its_header(tmp_path, whole):
    """The header keeps data size 0 and no feature follows the data. perf warns "data
    size field is 0 ... Was the 'perf record' command properly terminated?" and prints no
    sample; we keep the records it wrote, marked damaged."""
    p = load(_variant(tmp_path, edits=[(48, "<Q", 0)], cut=DATA_END))
    assert _samples(p) == _samples(whole)
    assert p.meta.damaged == (
        "perf.data is damaged: the file ends at byte 99256; perf record did not finish "
        "writing the file: its header gives the data section no size (perf refuses such "
        "a file). 975 samples were read; the samples perf had not written yet are lost. "
        "No finding is drawn from a damaged capture.")
    cut = load(_variant(tmp_path, edits=[(48, "<Q", 0)], cut=60000))
    assert len(cut) == 581
    assert "the 120 bytes from there on (0.2% of the data section) and the samples perf " \
           "had not written yet are lost" in cut.meta.damaged
    with pytest.raises(ParseError, match="no sample could be read before it"):
        load(_variant(tmp_path, edits=[(48, "<Q", 0)], cut=FIRST_SAMPLE + 50))


def test_pipe_stream_cut_is_kept_a_damaged_record_in_it_refused(tmp_path):
    """perf keeps a stream that ends (`perf script -i - < FILE`: every sample before the
    end, silently) and refuses one with a bad record header ("bad event header size")."""
    p = load(_variant(tmp_path, src=PIPE, cut=22700))  # inside the last sample, at 22664
    assert len(p) == 178
    assert p.meta.damaged == (
        "perf.data is damaged: the record at byte 22664 (offset 0x5878 of the data "
        "section) is 88 bytes long and runs past the end of the data at byte 22700; the "
        "stream ends inside that record. 178 samples were read; the 36 bytes from there "
        "on (0.2% of the data section) are lost. No finding is drawn from a damaged "
        "capture.")
    assert _refused(_variant(tmp_path, src=PIPE, edits=[(12696 + 6, "<H", 0)])) == (
        RECORD + "12696 (offset 0x3188 of the data section) has size 0, and a record is at "
                 "least 8 bytes; perf cannot read past it either (89 samples before it, "
                 "10064 bytes of data from it on)")
    # a size that claims more than the stream holds looks like a cut, but loses too much
    assert "more than the 1% a capture may lose" in \
        _refused(_variant(tmp_path, src=PIPE, edits=[(12696 + 6, "<H", 0xFFFF)]))


def test_no_damaged_variant_is_called_idle(tmp_path):
    """Every variant above that was once read as 0 samples ("Idle: no samples, no CPU
    used") is now refused, or kept with the damaged-capture finding alone."""
    variants = [dict(edits=[(16, "<Q", n)]) for n in (0, 8, 72, 200, 1000, 1 << 40)] + \
        [dict(edits=[(DATA_START + 6, "<H", n)]) for n in (0, 4, 0xFFFF)] + \
        [dict(flip=n) for n in range(0, 104, 8)] + \
        [dict(cut=n) for n in (1000, 60000, 99000, 99200)]
    outcomes = Counter()
    for v in variants:
        try:
            p = load(_variant(tmp_path, **v))
        except AnalysisError:
            outcomes["refused"] += 1
            continue
        titles = [f["title"] for f in build_report(p, label="idle")["findings"]]
        assert not any(t.startswith("Idle: no samples") for t in titles), (v, titles)
        if p.meta.damaged:
            assert titles == ["Damaged capture: part of it could not be read"], v
            outcomes["damaged"] += 1
        else:
            assert len(p) == 975, v
            outcomes["whole"] += 1
    assert outcomes == {"refused": 18, "damaged": 2, "whole": 6}


def test_no_regression_is_drawn_against_a_damaged_capture(tmp_path):
    """1.1.0 idle uses no CPU; a 1.0.0 idle capture after it is a regression, unless it
    was read in part."""
    fixed = load(SPINPOOL / "1.1.0-idle.perf.data")
    assert compare(fixed, load(IDLE), "idle", "idle")["regression"] is not None
    cut = load(_variant(tmp_path, cut=99000))
    assert compare(fixed, cut, "idle", "idle")["regression"] is None


def test_compressed2_record_too_short_for_its_size_field(tmp_path):
    """A COMPRESSED2 record states its payload size in its first 8 body bytes; one of 8
    bytes at the end of a stream made the reader unpack past the buffer (struct.error)."""
    path = tmp_path / "short.perf.data"
    path.write_bytes(PIPE.read_bytes() + struct.pack("<IHH", 83, 0, 8))
    assert _refused(path) == (
        RECORD + "22760 (offset 0x58d8 of the data section) has size 8, and a COMPRESSED2 "
                 "record is at least 16 bytes; perf cannot read past it either (179 samples "
                 "before it, 8 bytes of data from it on)")
