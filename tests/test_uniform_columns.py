"""Raw samples count 1 each, and a clock event's samples all have one period: a profile
of them keeps no count column (Profile.s_count) and no period column (s_period), 16 of the
48 bytes a sample, 64 MiB of bench-size's 4M-sample text. What the columns said must
still be said everywhere: the engine's passes, the exports, the saved profile (whose file
is the one held columns give), transforms and the size estimate."""
import io
from array import array

from analysis import profile_io
from analysis.export.folded import SAMPLES, FoldOptions, fold
from analysis.importers import load
from analysis.profile import Profile
from analysis.profile_size import approx_bytes
from analysis.report import build_report
from analysis.transforms import apply, parse
from conftest import FIXTURES, SPINPOOL

PERF_DATA = SPINPOOL / "1.0.0-busy.perf.data"
SCRIPT = SPINPOOL / "1.0.0-busy.truth-script.txt"
REPORT_TEXT = SPINPOOL / "1.0.0-busy.truth-report.txt"


def _held_ones(p: Profile) -> Profile:
    """The same profile with its column of ones (and of its one period) made and held."""
    period = p.period_value()
    assert list(p.s_count) == [1] * len(p.s_stack)
    assert list(p.s_period) == [period] * len(p.s_stack)
    assert p.has_count_column() and p.has_period_column()
    return p


def test_raw_sample_imports_hold_no_count_column():
    for path in (PERF_DATA, SCRIPT):
        p = load(path)
        assert len(p.s_stack) > 900
        assert not p.has_count_column() and not p.has_period_column()
        assert p.unit_rows() and p.sample_count() == len(p.s_stack)
        assert p.period_value() == 10101010  # (perf script prints it on every sample line)
        assert list(p.periods()) == [10101010] * len(p.s_stack)
        assert list(p.counts()) == [1] * len(p.s_stack) and p.counts()[-1] == 1
        assert not p.has_count_column() and not p.has_period_column()  # (none made)
    # a perf report text's rows stand for many samples: it keeps its column
    r = load(REPORT_TEXT)
    assert r.has_count_column() and not r.unit_rows()


def test_results_are_those_of_a_held_column_of_ones():
    for path in (PERF_DATA, SCRIPT):
        lean, held = load(path), _held_ones(load(path))
        assert build_report(lean) == build_report(held)
        by_samples = FoldOptions(weight=SAMPLES)
        assert fold(lean) == fold(held) and fold(lean, by_samples) == fold(held, by_samples)
        assert sum(fold(lean, by_samples).values()) == len(lean.s_stack)
        assert fold(lean, compiled=False) == fold(lean)
        assert fold(lean, by_samples, compiled=False) == fold(lean, by_samples)
        assert not lean.has_count_column() and not lean.has_period_column()


def test_the_saved_profile_is_the_same_file_and_loads_without_the_column():
    lean = load(SCRIPT)
    a, b = io.BytesIO(), io.BytesIO()
    profile_io.dump(lean, a)
    profile_io.dump(_held_ones(load(SCRIPT)), b)
    assert a.getvalue() == b.getvalue()
    back = profile_io.load(io.BytesIO(a.getvalue()))
    assert not back.has_count_column() and back.sample_count() == len(lean.s_stack)
    assert not back.has_period_column() and back.period_value() == lean.period_value()
    # a column that is not all ones is loaded as it was saved
    counted = load(REPORT_TEXT)
    c = io.BytesIO()
    profile_io.dump(counted, c)
    again = profile_io.load(io.BytesIO(c.getvalue()))
    assert again.has_count_column() and list(again.s_count) == list(counted.s_count)


def _one_stack() -> tuple[Profile, int]:
    """A profile of one cpu-clock stack, and that stack, to add samples to."""
    p = Profile()
    p.event("cpu-clock")
    m = p.mapping("/usr/bin/a")
    return p, p.stack((p.add_location(m, 0x10, (p.function("f", m),)),))


def test_a_count_other_than_one_makes_the_column_with_the_ones_before_it():
    p, sid = _one_stack()
    for _ in range(3):
        p.add_sample(sid)
    assert not p.has_count_column() and p.sample_count() == 3
    p.add_sample(sid, count=5)
    assert p.has_count_column() and list(p.s_count) == [1, 1, 1, 5]
    assert p.sample_count() == 8 and not p.unit_rows()
    p.add_sample(sid)
    assert list(p.s_count) == [1, 1, 1, 5, 1] and len(p.s_count) == len(p.s_stack)


def test_views_and_the_size_estimate_make_no_column():
    p = load(PERF_DATA)
    size = approx_bytes(p)
    assert not p.has_count_column()
    assert size + 16 * len(p.s_stack) == approx_bytes(_held_ones(load(PERF_DATA)))
    leaf = p.locations[p.stacks[p.s_stack[0]][0]].functions[0]
    v = apply(p, parse(f"mf-{leaf}"))  # (merged into its callers: every sample stays)
    assert v is not p and not v.has_count_column() and not p.has_count_column()
    assert not v.has_period_column() and v.period_value() == p.period_value() > 0
    assert v.sample_count() == len(v.s_stack) == len(p.s_stack)


def test_periods_that_differ_keep_their_column():
    """perf record -e with two events of their own periods (page-faults/period=200/ and
    cpu-clock/freq=199/): the column is kept, with perf script's periods: page-faults'
    samples record no period, and perf gives them the attr's 200 (they were 0 here)."""
    p = load(FIXTURES / "perfdata" / "events.perf.data")
    q = load(FIXTURES / "perfdata" / "events.script.txt")
    assert p.has_period_column() and q.has_period_column()
    assert p.period_value() is None and q.period_value() is None
    assert set(q.s_period) == {200, 5025125}
    assert list(p.s_period) == list(q.s_period)


def test_a_period_other_than_the_first_makes_the_column():
    p, sid = _one_stack()
    for _ in range(3):
        p.add_sample(sid, period=250000)
    assert not p.has_period_column() and p.period_value() == 250000
    p.add_sample(sid, period=7)
    assert p.has_period_column() and list(p.s_period) == [250000] * 3 + [7]
    p.add_sample(sid, period=250000)
    assert list(p.s_period) == [250000] * 3 + [7, 250000]
    # periods appended in bulk (the compiled text reader's), after their rows
    q = Profile()
    for _ in range(4):
        q.s_stack.append(sid)
    q.extend_periods(array("Q", [5, 5, 5, 5]).tobytes())
    assert not q.has_period_column() and q.period_value() == 5
    q.s_stack.extend([sid, sid])
    q.extend_periods(array("Q", [5, 9]).tobytes())
    assert q.has_period_column() and list(q.s_period) == [5] * 5 + [9]


def test_cpu_seconds_of_one_period_and_of_a_column():
    from analysis import cpu
    lean = load(PERF_DATA)
    secs = cpu.cpu_seconds(lean, lean.default_event())
    assert secs == lean.period_value() * len(lean) / 1e9
    assert cpu.cpu_seconds(_held_ones(load(PERF_DATA)), 0) == secs
