"""perf script text in the shapes perf prints it: -F variants, several events, no call
chains, vDSO and deleted DSOs, gzip, and inputs from many perf versions and languages."""
import gzip
import math

import pytest

from analysis.aggregate import Selection, stack_weights
from analysis.aggregate.functions import top_functions
from analysis.export.folded import FoldOptions, fold
from analysis.importers import detect, load, perf_script
from analysis.profile import NO_ID
from analysis.report import build_report
from conftest import FIXTURES, PUBLIC, SPINPOOL

REC = FIXTURES / "recorded"


def _functions(profile, event_id=None):
    w = stack_weights(profile, Selection(event_id=event_id))
    return {f.name: f for f in top_functions(profile, w)}


def test_pid_tid_period_fields():
    p = load(REC / "busy-F-pid-period.script.txt")
    assert p.sample_count() == 154
    assert set(p.s_pid) == {18292}
    assert set(p.s_tid) == {18294, 18295}
    assert set(p.s_period) == {10101010}
    assert p.comm(0) == "api"
    assert p.s_time[0] == pytest.approx(1311.764588)


def test_default_fields_have_tid_only():
    p = load(SPINPOOL / "1.1.0-busy.truth-script.txt")
    assert set(p.s_pid) == {NO_ID}
    assert set(p.s_tid) == {18294, 18295}


def test_ip_sym_only_blocks_start_with_frames():
    p = load(REC / "busy-F-ip-sym.script.txt")
    assert detect(REC / "busy-F-ip-sym.script.txt") == "perf-script"
    assert p.sample_count() == 154
    assert [e.name for e in p.events] == [""]
    assert max(len(s) for s in p.stacks) == 3


def test_frames_on_the_event_line_without_call_chains():
    p = load(REC / "busy-no-callchain.script.txt")
    assert p.sample_count() == 154
    assert all(len(s) == 1 for s in p.stacks)
    loc = p.locations[p.stacks[p.s_stack[0]][0]]
    assert loc.address == 0x7f3764597461
    assert p.mappings[loc.mapping_id].path == "/opt/qualla-1.1.0/bin/libqualla.so"


def test_two_events_are_kept_apart():
    p = load(REC / "two-events.script.txt")
    names = [e.name for e in p.events]
    assert names == ["cpu-clock", "task-clock"]
    assert [p.sample_count(i) for i in range(2)] == [192, 192]
    r = build_report(p, event="task-clock")
    assert r["event"] == "task-clock" and r["samples"] == 192
    # the folded writer shows the first event only, as stackcollapse-perf.pl does
    assert sum(fold(p, FoldOptions(weight="samples")).values()) == 192


def test_vdso_and_deleted_dsos():
    p = load(REC / "two-events.script.txt")
    kinds = {m.path: (m.kind, m.deleted) for m in p.mappings}
    assert kinds["[vdso]"] == ("vdso", False)
    assert kinds["/tmp/fx/fixture-worker"] == ("user", True)
    assert kinds["[kernel.kallsyms]"] == ("kernel", False)
    f = _functions(p, 0)
    assert f["__vdso_clock_gettime"].self == 92
    assert "fixture-worker+0x130d" in f  # stripped by deletion: DSO+offset stays visible


def test_header_gives_metadata_and_frequency():
    p = load(REC / "busy-header.script.txt")
    m = p.meta
    assert (m.hostname, m.os_release, m.perf_version, m.arch) == \
        ("vm", "6.18.44-fc-v595", "6.1.187", "x86_64")
    assert m.cpus_online == 2
    assert m.cmdline.startswith("/usr/bin/perf record -q -g -F 99 -p 18292")
    assert p.events[0].frequency == 99.0
    assert m.duration_s == pytest.approx(4.916525)
    r = build_report(p)
    # 154 samples x 10101010 ns over 4.9165 s
    assert r["cpus_busy"] == pytest.approx(154 * 0.01010101 / 4.916525, abs=1e-3)


def test_gzip_input_is_read_as_a_stream():
    path = PUBLIC / "firefox-devtools__profiler/src/test/fixtures/upgrades/graphviz.perf.gz"
    with gzip.open(path, "rt") as f:
        events = sum(1 for line in f if line[:1] not in ("\t", " ", "#", "\n"))
    p = load(path)
    assert p.sample_count() == events == 312
    assert p.meta.perf_version is not None


@pytest.mark.parametrize("rel,samples", [
    ("jlfwong__speedscope/sample/profiles/linux-perf/system-wide.linux-perf.txt", 556),
    ("jlfwong__speedscope/sample/profiles/linux-perf/simple-with-pid.linux-perf.txt", 137),
    ("jlfwong__speedscope/sample/profiles/linux-perf/rust-mangled.linux-perf.txt", 96),
    ("jrfonseca__gprof2dot/tests/perf/xwax.perf", 7300),
    ("jrfonseca__gprof2dot/tests/perf/glxgears.perf", 1401),
    ("Netflix__flamescope/examples/perf.test01", 9),
    ("githedgehog__dataplane/perf.script", 58),
    ("firefox-devtools__profiler/src/test/fixtures/upgrades/simple-perf.txt.gz", 163),
])
def test_public_script_texts_import(rel, samples):
    p = load(PUBLIC / rel)
    assert detect(PUBLIC / rel) == "perf-script"
    assert p.sample_count() == samples
    assert p.notes == []


def test_jit_map_frames_are_jit():
    p = load(PUBLIC / "brendangregg__FlameGraph/test/perf-vertx-stacks-01.txt")
    jit = [m for m in p.mappings if m.kind == "jit"]
    assert [m.path for m in jit] == ["/tmp/perf-3236.map"]


def test_symbols_with_spaces_parentheses_templates():
    text = "std::function<void (int)>::operator()(int) const+0x1f (/usr/lib/libfoo.so (deleted))"
    assert perf_script.split_dso(text) == (
        "std::function<void (int)>::operator()(int) const+0x1f", "/usr/lib/libfoo.so (deleted)")


def test_unknown_pid_samples():
    """`:-1 -1` is how perf script prints samples whose thread it never saw."""
    text = [":-1    -1 [000]  100.000001:     250000 cpu-clock: ",
            "\tffffffff81000000 native_safe_halt+0x0 ([kernel.kallsyms])", "",
            "swapper     0 [001]  100.000002:     250000 cpu-clock: ",
            "\tffffffff81000000 native_safe_halt+0x0 ([kernel.kallsyms])", ""]
    p = perf_script.parse_lines(text)
    assert p.sample_count() == 2
    assert (p.comm(0), p.s_tid[0], p.s_cpu[0]) == (":-1", -1, 0)
    assert (p.comm(1), p.s_tid[1], p.s_cpu[1]) == ("swapper", 0, 1)


def test_comm_with_spaces_and_digits():
    text = ["V8 WorkerThread 2 24636/25607 [000] 94564.109216: 100 cycles: ",
            "\t7f00 foo (/bin/x)", ""]
    p = perf_script.parse_lines(text)
    assert (p.comm(0), p.s_pid[0], p.s_tid[0], p.s_period[0]) == \
        ("V8 WorkerThread 2", 24636, 25607, 100)
    assert math.isclose(p.s_time[0], 94564.109216)


def test_header_numbers_past_64_bits_are_unknown():
    """perf prints its header counts from u64 fields: an edited header's "nrcpus online :
    92233720368547758074" (make fuzz-native, tests/fuzz/crashes/perf-script-compiled-
    fd5b1ed8614a.bin) is no count. It was kept, and saving the profile failed (its JSON
    holds 64-bit integers at most): now unknown, and the profile saves."""
    import io

    from analysis import profile_io
    text = (b"# ========\n# nrcpus online : 92233720368547758074\n# nrcpus avail : 4\n"
            b"# total lost samples : 18446744073709551616\n"
            b"# cmdline : /usr/bin/perf record -c 99999999999999999999999 -g\n# ========\n"
            b"app 1 [000] 1.000000: 1 cycles:\n\t    1111 main+0x1 (/usr/bin/app)\n\n")
    for compiled in (True, False):
        p = perf_script.parse(io.BytesIO(text), compiled=compiled)
        assert (p.meta.cpus_online, p.meta.cpus_available, p.meta.lost_samples) == \
            (None, 4, None)
        assert p.events[0].period is None
        profile_io.dump(p, io.BytesIO())
