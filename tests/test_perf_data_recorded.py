"""perf.data captures recorded for these tests (tests/fixtures/perfdata/record.sh has the
commands) against `perf script` of the same files, sample by sample."""
import pytest

from analysis.unwind.user_stacks import DWARF_NOTE
from analysis.importers import detect, load
from conftest import FIXTURES

HERE = FIXTURES / "perfdata"


def _samples(profile, user_leaf_only=False):
    out = []
    for i in range(len(profile)):
        frames = []
        for loc_id in profile.stacks[profile.s_stack[i]]:
            loc = profile.locations[loc_id]
            m = profile.mappings[loc.mapping_id]
            if user_leaf_only and m.kind != "kernel" and frames and \
                    frames[-1][2] != "kernel":
                break  # keep the kernel frames and the first user frame
            if m.path == "[unknown]" and loc.dso_offset is None and \
                    profile.functions[loc.functions[0]].resolved:
                # perf printed `sym (inlined)` without the frame it was inlined into,
                # so the text does not say the DSO: compare the address alone
                frames.append(("?", loc.address, "user"))
                continue
            frames.append((m.path, loc.dso_offset, m.kind))
        usec = int(round(profile.s_time[i] * 1e9)) // 1000
        out.append((profile.comm(i), profile.s_tid[i], usec, profile.events[
            profile.s_event[i]].name, tuple(frames)))
    return out


@pytest.mark.parametrize("name", ["dlopen", "two-events", "system-wide", "compressed", "pipe"])
def test_matches_perf_script(name):
    ours = load(HERE / f"{name}.perf.data")
    text = load(HERE / f"{name}.script.txt")
    assert len(ours) > 10
    assert _samples(ours) == _samples(text)


def test_dlopen_mapping_appears_mid_capture():
    p = load(HERE / "dlopen.perf.data")
    dsos = [p.mappings[p.locations[p.stacks[p.s_stack[i]][0]].mapping_id].path
            for i in range(len(p))]
    first_plugin = dsos.index("/tmp/libplugin.so")
    assert "/tmp/pw-dlopen" in dsos[:first_plugin]
    assert set(dsos[first_plugin:]) <= {"/tmp/libplugin.so", "[kernel.kallsyms]",
                                        "/usr/lib/x86_64-linux-gnu/libc.so.6"}


def test_two_events_and_system_wide_dummy():
    p = load(HERE / "two-events.perf.data")
    assert [e.name for e in p.events] == ["cpu-clock", "task-clock"]
    assert p.sample_count(0) == 118 and p.sample_count(1) == 118
    sw = load(HERE / "system-wide.perf.data")
    assert [e.name for e in sw.events] == ["cpu-clock:ppp"]  # the dummy event is not one
    assert set(sw.s_cpu) == {0, 1}


def test_pipe_and_compressed_are_detected():
    assert detect(HERE / "pipe.perf.data") == "perf-data"
    p = load(HERE / "compressed.perf.data")
    assert len(p) == 180


def test_dwarf_mode_gives_kernel_frames_and_the_user_leaf():
    ours = load(HERE / "dwarf.perf.data")
    text = load(HERE / "dwarf.script.txt")  # perf unwound the user stacks itself
    a, b = _samples(ours, user_leaf_only=True), _samples(text, user_leaf_only=True)
    assert len(a) == len(b) == 60
    for sa, sb in zip(a, b):
        assert sa[:4] == sb[:4]
        assert len(sa[4]) == len(sb[4])
        for fa, fb in zip(sa[4], sb[4]):
            assert (fa[1:] if fb[0] == "?" else fa) == (fb[1:] if fb[0] == "?" else fb)
    assert DWARF_NOTE in ours.notes  # no binaries given: nothing to unwind with
    assert max(len(s) for s in ours.stacks) < max(len(s) for s in text.stacks)
