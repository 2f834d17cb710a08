"""perf.data read natively must agree, sample by sample, with what perf 6.1 printed for
the same capture (`*.script-raw.txt`: perf 6.1 prints user frames DSO-relative)."""
import pytest

from analysis.importers import detect, load
from conftest import SPINPOOL

CASES = ["1.0.0-idle", "1.0.0-busy", "1.1.0-busy", "1.1.0-idle"]


def _samples(profile):
    out = []
    for i in range(len(profile)):
        frames = []
        for loc_id in profile.stacks[profile.s_stack[i]]:
            loc = profile.locations[loc_id]
            frames.append((profile.mappings[loc.mapping_id].path, loc.dso_offset))
        usec = int(round(profile.s_time[i] * 1e9)) // 1000
        out.append((profile.comm(i), profile.s_tid[i], usec, tuple(frames)))
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_sample_matches_perf_script(case):
    path = SPINPOOL / f"{case}.perf.data"
    assert detect(path) == "perf-data"
    ours = load(path)
    text = load(SPINPOOL / f"{case}.script-raw.txt")
    assert len(ours) == len(text)
    a, b = _samples(ours), _samples(text)
    assert a == b


def test_metadata_and_build_ids():
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    m = p.meta
    assert (m.hostname, m.os_release, m.perf_version, m.arch, m.cpus_online) == \
        ("vm", "6.18.44-fc-v595", "6.1.187", "x86_64", 2)
    assert m.cmdline == "/usr/bin/perf record -q -g -F 99 -p 18134 -o 1.0.0-idle.perf.data " \
                        "-- sleep 5"
    assert [(e.name, e.frequency) for e in p.events] == [("cpu-clock:ppp", 99.0)]
    assert m.lost_samples == 0
    by_path = {mp.path: mp for mp in p.mappings}
    assert by_path["/opt/qualla-1.0.0/bin/libqualla.so"].build_id
    assert len(by_path["[kernel.kallsyms]"].build_id) == 40
    assert set(p.s_pid) == {18134}


def test_idle_capture_without_samples():
    p = load(SPINPOOL / "1.1.0-idle.perf.data")
    assert len(p) == 0
    assert [e.name for e in p.events] == ["cpu-clock:ppp"]


def test_capture_cut_short_keeps_what_was_written_and_is_marked_damaged(tmp_path):
    """Cut 256 bytes before the end of its data (0.3%, under damage.TOLERANCE); more
    cuts are in test_damaged_perf_data.py."""
    raw = (SPINPOOL / "1.0.0-idle.perf.data").read_bytes()
    cut = tmp_path / "cut.perf.data"
    cut.write_bytes(raw[:99000])
    p = load(cut)
    full = load(SPINPOOL / "1.0.0-idle.perf.data")
    assert (len(p), len(full)) == (972, 975)
    # records are in per-CPU flush order, not time order: every sample read is one of
    # the full capture's, exactly as it is there
    from collections import Counter
    assert not Counter(_samples(p)) - Counter(_samples(full))
    assert p.meta.damaged.startswith("perf.data is damaged: the file ends at byte 99000; ")
    assert p.notes[0] == p.meta.damaged


def test_file_objects_and_streams_are_read(tmp_path):
    """Uploads arrive as file objects; those without a file descriptor go through a
    temporary file."""
    import io
    raw = (SPINPOOL / "1.0.0-idle.perf.data").read_bytes()
    with open(SPINPOOL / "1.0.0-idle.perf.data", "rb") as f:
        assert len(load(f)) == 975
    assert len(load(io.BytesIO(raw))) == 975
