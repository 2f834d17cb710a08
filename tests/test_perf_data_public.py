"""perf.data files of other projects, from perf 3.2 to 6.16, file and pipe mode, x86_64,
i686, armv7 and aarch64: the sample counts perf 6.1 prints for the files it can read,
and a result (with a warning where due) for those it cannot."""
import pytest

from analysis.errors import ParseError, UnrecognizedFormat
from analysis.unwind.user_stacks import DWARF_NOTE
from analysis.importers import load, perf_script
from conftest import PUBLIC

Q = "google__perf_data_converter/src/quipper/testdata/"
KD = "KDAB__perfparser/tests/auto/perfdata/"
MS = "mstange__linux-perf-data/tests/fixtures/"

# `perf script -G -F comm -i FILE | wc -l` with perf 6.1.187 (one line per sample)
PERF_61_COUNTS = {
    "KDAB__hotspot/tests/integrationtests/file_content/perf.data.true.v2": 1,
    KD + "contentsize.data": 69,
    KD + "fork_static_gcc/perf.data.zstd": 106,
    KD + "parallel_static_gcc/perf.data.zstd": 242,
    KD + "probe.data.file": 1,
    KD + "probe.data.stream": 1,
    KD + "vector_static_clang/perf.data": 54,
    KD + "vector_static_gcc/perf.data": 45,
    KD + "vector_static_gcc/perf.data.zstd": 34,
    KD + "vector_static_gcc/perf.lbr.data": 29,
    "google__autofdo/testdata/perf-kernel.data": 24,
    "google__autofdo/testdata/perf-vmlinux.data": 56,
    "google__autofdo/testdata/propeller_sample_1.perfdata1": 3740,
    "google__autofdo/testdata/ro_sample.perf": 13,
    "google__autofdo/testdata/test.lbr": 9232,
    Q + "perf.data.armv7-3.4": 3893,
    Q + "perf.data.armv7.perf_3.14-3.8": 700,
    Q + "perf.data.branch-4.14": 13,
    Q + "perf.data.branch_stack_hw_index": 5,
    Q + "perf.data.branch_stack_spec": 8,
    Q + "perf.data.busy.0-3.4": 628,
    Q + "perf.data.busy.0-3.8": 4,
    Q + "perf.data.busy.1-3.4": 11778,
    Q + "perf.data.busy.1-3.8": 9577,
    Q + "perf.data.callgraph-3.4": 1548,
    Q + "perf.data.callgraph-3.8": 1768,
    Q + "perf.data.callgraph_and_branch-3.4": 923,
    Q + "perf.data.callgraph_and_branch-3.8": 1856,
    Q + "perf.data.ctx_switch_namespaces-4.14": 2,
    Q + "perf.data.forkexit-3.4": 15499,
    Q + "perf.data.forkexit-3.8": 10335,
    Q + "perf.data.group_desc-4.14": 13,
    Q + "perf.data.hw_and_sw-3.4": 4941,
    Q + "perf.data.hybrid_topology": 7,
    Q + "perf.data.i686-3.4": 703,
    Q + "perf.data.lost_samples-4.4": 191,
    Q + "perf.data.numatopology-3.2": 175,
    Q + "perf.data.piped.ctx_switch_namespaces-4.14": 7,
    Q + "perf.data.piped.header_features-4.16": 2,
    Q + "perf.data.piped.header_features_aligned-6.12": 9,
    Q + "perf.data.piped.header_feautres_group_desc-6.8": 21,
    Q + "perf.data.piped.hw_and_sw-3.4": 4275,
    Q + "perf.data.piped.lost_samples-4.4": 191,
    Q + "perf.data.piped.no_attr_ids-4.14": 7,
    Q + "perf.data.piped.target-3.4": 1414,
    Q + "perf.data.piped.target-3.8": 5218,
    Q + "perf.data.piped.target.throttled-3.4": 228,
    Q + "perf.data.proc.map.timeout-3.18": 8,
    Q + "perf.data.raw-3.4": 441,
    Q + "perf.data.raw_callgraph_branch-3.4": 513,
    Q + "perf.data.remmap-3.2": 198,
    Q + "perf.data.singleprocess-3.4": 77,
    Q + "perf.data.singleprocess-3.8": 13,
    Q + "perf.data.systemwide.0-3.4": 507,
    Q + "perf.data.systemwide.0-3.8": 28,
    Q + "perf.data.systemwide.1-3.4": 2967,
    Q + "perf.data.systemwide.1-3.8": 755,
    Q + "perf.data.systemwide.5-3.4": 13142,
    Q + "perf.data.systemwide.5-3.8": 4080,
    Q + "perf.data.throttle-3.8": 14980,
    Q + "perf.data.weight_struct": 14,
    "google__perf_data_converter/src/testdata/multi-event-single-process.perf.data": 39217,
    "google__perf_data_converter/src/testdata/single-event-multi-process.perf.data": 19989,
    "google__perf_data_converter/src/testdata/single-event-single-process.perf.data": 45937,
    "google__perf_data_converter/src/testdata/with-callchain.perf.data": 48399,
    MS + "sleep.compressed.pipe.data": 8,
}


@pytest.mark.parametrize("rel,count", sorted(PERF_61_COUNTS.items()))
def test_same_sample_count_as_perf(rel, count):
    p = load(PUBLIC / rel)
    assert len(p) == count


# perf 6.1 refuses these (perf_event_attr of perf 6.3+, COMPRESSED2 of perf 6.16);
# counts from the files' own documentation or the text beside them
NEWER_THAN_PERF_61 = {
    "githedgehog__dataplane/perf.data": 58,  # perf.script beside it has 58 samples
    "KDAB__hotspot/tests/integrationtests/perf.data.PerfFormatLost": 34,
    KD + "cpp-inlining/cpp-inlining.perf.data": 539,
    MS + "sleep.data": 7,
    MS + "sleep.compressed.data": 8,
    MS + "sleep.compressed2.data": 7,
    MS + "sleep.compressed2.pipe.data": 7,
    MS + "fibo.compressed2.pipe.data": 547,
}


@pytest.mark.parametrize("rel,count", sorted(NEWER_THAN_PERF_61.items()))
def test_files_perf_61_cannot_read(rel, count):
    p = load(PUBLIC / rel)
    assert len(p) == count
    assert p.meta.perf_version


def test_hedgehog_matches_its_perf_script_text():
    """perf 6.14 unwound the DWARF stacks; we have the kernel frames and the user leaf."""
    ours = load(PUBLIC / "githedgehog__dataplane/perf.data")
    text = perf_script.parse(PUBLIC / "githedgehog__dataplane/perf.script")
    assert len(ours) == len(text) == 58
    kernel_mismatches = []
    for i in range(58):
        assert (ours.comm(i), ours.s_tid[i], ours.s_period[i]) == \
            (text.comm(i), text.s_tid[i], text.s_period[i])
        # perf prints microseconds, truncated
        assert int(round(ours.s_time[i] * 1e9)) // 1000 == round(text.s_time[i] * 1e6)
        a = [ours.locations[x] for x in ours.stacks[ours.s_stack[i]]]
        b = [text.locations[x] for x in text.stacks[text.s_stack[i]]]
        kernel_a = [l.address for l in a if ours.mappings[l.mapping_id].kind == "kernel"]
        kernel_b = [l.address for l in b if text.mappings[l.mapping_id].kind == "kernel"]
        if kernel_a != kernel_b:
            kernel_mismatches.append(i)
        user_b = [l for l in b if text.mappings[l.mapping_id].kind != "kernel"]
        user_a = [l for l in a if ours.mappings[l.mapping_id].kind != "kernel"]
        if user_b:
            assert user_a[0].address == user_b[0].address
            assert ours.mappings[user_a[0].mapping_id].path == \
                text.mappings[user_b[0].mapping_id].path
    # sample 47 was taken precisely (AMD IBS) in user space while the interrupt left one
    # kernel frame in the chain; perf 6.14 drops that frame, we keep the chain as recorded
    assert kernel_mismatches == [47]
    assert DWARF_NOTE in ours.notes  # no binaries given: nothing to unwind with


def test_trailing_garbage_keeps_the_stream_and_marks_it_damaged():
    """perf's own stderr messages were captured into this pipe-mode file after the data;
    to a reader they are a record running past the end of the stream, as a cut stream
    is, and perf keeps what came before the end of a stream."""
    p = load(PUBLIC / MS / "sleep.compressed2.pipe.data")
    assert len(p) == 7
    assert p.meta.damaged == (
        "perf.data is damaged: the record at byte 31808 (offset 0x7c30 of the data "
        "section) is 29216 bytes long and runs past the end of the data at byte 31951; "
        "the stream ends inside that record. 7 samples were read; the 143 bytes from "
        "there on (0.4% of the data section) are lost. No finding is drawn from a "
        "damaged capture.")
    assert p.notes[0] == p.meta.damaged


def test_corrupted_record_is_refused_as_perf_refuses_it():
    # `perf script -i - < FILE` says "bad event header size" and prints no sample
    with pytest.raises(ParseError) as e:
        load(PUBLIC / Q / "perf.data.piped.corrupted.zero_size_sample-3.2")
    assert str(e.value) == (
        "perf.data is damaged: the record at byte 49104 (offset 0xbfc0 of the data "
        "section) has size 0, and a record is at least 8 bytes; perf cannot read past it "
        "either (0 samples before it, 11536 bytes of data from it on)")


def test_not_perf_data():
    with pytest.raises(UnrecognizedFormat, match="before 2.6.35"):
        load(PUBLIC / "KDAB__hotspot/tests/integrationtests/file_content/perf.data.true.v1")
    with pytest.raises(UnrecognizedFormat, match="binary file of unknown kind"):
        load(PUBLIC / "KDAB__hotspot/tests/integrationtests/file_content/perf.data.broken.gz")


def test_gzip_wrapped_perf_data():
    p = load(PUBLIC / "KDAB__hotspot/tests/integrationtests/file_content/perf.data.true.v2.gz")
    assert len(p) == 1


def test_a_sample_without_a_period_has_its_events_own():
    """`perf record -c 5000000`: the samples record no period and perf reads each as the
    attr's sample_period; perfparser's expected output (KDAB's, from perf's own reading)
    prints `cycles: 5000000` for each of the 106 (they were 0 here, and the folded
    stacks then weighed them by count where perf script's text weighs them by period)."""
    import re
    d = PUBLIC / KD / "fork_static_gcc"
    expected = [int(n) for n in re.findall(r"^\tcycles: (\d+)$",
                                           (d / "perf.data.zstd.expected.txt").read_text(),
                                           re.M)]
    p = load(d / "perf.data.zstd")
    assert len(expected) == len(p) == 106
    assert list(p.periods()) == expected and set(expected) == {5_000_000}
