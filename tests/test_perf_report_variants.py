"""perf report --stdio text in its other shapes: flat, caller graphs, fractal with -n,
--children without graphs, two events, and a public report."""
import pytest

from analysis.aggregate import Selection, stack_weights
from analysis.aggregate.functions import top_functions
from analysis.importers import load
from analysis.importers.perf_report import HIDDEN_FRAME
from conftest import FIXTURES, PUBLIC, SPINPOOL

REC = FIXTURES / "recorded"


def _self(profile, event_id=None):
    w = stack_weights(profile, Selection(event_id=event_id))
    return {f.name: (f.self, f.total) for f in top_functions(profile, w)}


@pytest.mark.parametrize("name", ["idle-flat", "idle-caller", "idle-fractal-n",
                                  "idle-children-flat"])
def test_every_shape_gives_the_same_self_counts(name):
    raw = _self(load(SPINPOOL / "1.0.0-idle.report-raw.txt"))
    p = load(REC / f"{name}.report.txt")
    assert p.sample_count() == 975
    ours = _self(p)
    for fn in ["pthread_mutex_lock@@GLIBC_2.2.5", "__GI___pthread_mutex_unlock_usercnt",
               "0xffffffff821ecc26", "libqualla.so+0x2458"]:
        assert ours[fn][0] == raw[fn][0], fn


def test_flat_output_has_single_frame_stacks():
    p = load(REC / "idle-flat.report.txt")
    assert all(len(s) == 1 for s in p.stacks)


def test_caller_graph_is_turned_leaf_first():
    callee = _self(load(SPINPOOL / "1.0.0-idle.report-raw.txt"))
    caller = _self(load(REC / "idle-caller.report.txt"))
    assert caller["__GI___lll_lock_wake"] == callee["__GI___lll_lock_wake"] == (44, 227)


def test_fractal_percentages_become_absolute():
    """Fractal graphs apply perf's threshold per parent, so they hide less: the caller
    totals come out as in the full capture (perf script truth: 55 self, 283 total)."""
    fractal = _self(load(REC / "idle-fractal-n.report.txt"))
    truth = _self(load(SPINPOOL / "1.0.0-idle.truth-script.txt"))
    assert fractal["__GI___lll_lock_wait"] == truth["__GI___lll_lock_wait"] == (55, 283)


def test_children_mode_keeps_self_and_children_columns():
    p = load(SPINPOOL / "1.0.0-idle.report-children-raw.txt")
    ours = _self(p)
    # perf: Children 18.46%, Self 18.36% of 975
    assert ours["pthread_mutex_lock@@GLIBC_2.2.5"] == (179, 180)
    assert HIDDEN_FRAME in ours
    assert any("did not print" in n for n in p.notes)


def test_two_events_in_one_report():
    p = load(REC / "two-events.report.txt")
    assert [e.name for e in p.events] == ["cpu-clock", "task-clock"]
    assert p.meta.declared_samples == {"cpu-clock": 192, "task-clock": 192}
    assert _self(p, 0)["[vdso]+0xb46"][0] == 72  # 37.50% of 192


def test_public_report_with_scaled_sample_count():
    p = load(PUBLIC / "tidesdb__tidesdb/perf_report.txt")
    assert p.meta.declared_samples == {"cycles": 1000}  # perf printed "1K"
    ours = _self(p)
    assert ours["__random"][0] == 299  # 29.86% of 1000
    assert ours["bloom_filter_add"][0] == 278
    assert ours["main"][1] > 900
