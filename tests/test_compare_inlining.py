"""A change of inlining is no change of cost (issue 38): one job built twice, `fnv1a`
called by `handle_request` in 1.0 and inlined into it in 1.1 (tests/fixtures/inlining,
recorded here with frame pointers and with DWARF unwinding; perf's own reports beside
them). Functions are compared as compiled (self where perf counts it, totals of the
functions holding addresses), except one compiled in one build and only inlined in the
other: that one keeps its own row in both, taken out of its holder."""
import pytest

from analysis.compare import compare_reports, diff_tree
from analysis.importers import load
from analysis.report import build_report
from analysis.symbols import symbolize
from conftest import FIXTURES, SPINPOOL

HERE = FIXTURES / "inlining"


@pytest.fixture(scope="module")
def captures():
    out = {}
    for name in ("1.0", "1.1", "1.0-dwarf", "1.1-dwarf"):
        profile = load(HERE / f"{name}.perf.data")
        symbolize(profile, [str(HERE / f"work-{name[:3]}")])
        out[name] = (profile, build_report(profile, label="load"))
    return out


def _row(report: dict, name: str) -> dict:
    return next(f for f in report["functions"] if f["name"] == name)


def test_the_inlined_callee_is_counted_as_perf_counts_it(captures):
    # perf report --children on 1.1-dwarf: "fnv1a (inlined) 71.46%" of 995 samples, and
    # handle_request's self 72.26% holds it
    r = captures["1.1-dwarf"][1]
    assert r["samples"] == 995
    fnv = _row(r, "fnv1a")
    assert (fnv["self"], fnv["total"], fnv["physical_total"]) == (0, 711, 0)
    assert fnv["inline_self"] == 711 and fnv["inlined_in"] == [["handle_request", 711]]
    handle = _row(r, "handle_request")
    assert (handle["self"], handle["inline_self"], handle["physical_total"]) == (719, 8, 719)
    # a capture without inline frames has none of these columns
    assert "inline_self" not in _row(captures["1.0-dwarf"][1], "fnv1a")


@pytest.mark.parametrize("unwinding", ["", "-dwarf"])
@pytest.mark.parametrize("order", [("1.0", "1.1"), ("1.1", "1.0")])
def test_a_callee_inlined_by_one_build_moves_nothing(captures, unwinding, order):
    a, b = (captures[v + unwinding][1] for v in order)
    c = compare_reports(a, b)
    assert c["verdict"] == "no significant change", c["reason"]
    assert not [m for m in c["movers"]["functions"]
                if abs(m["self_change"]) >= 1.0 and abs(m["self_change"]) > m["self_noise"]]
    # compared only as compiled, fnv1a would have moved by 72 points and handle_request
    # by as much the other way: the largest change of any function's self is 1.5 points
    assert abs(c["movers"]["largest"]["self_change"]) < 2


def test_frame_pointer_callers_that_differ_are_said_as_such(captures):
    """perf's children report of the same files: main 73.13% in 1.0 and none in 1.1,
    handle_request 0.20% and 72.42%."""
    c = compare_reports(captures["1.0"][1], captures["1.1"][1])
    assert c["reason"].startswith("No function's own time, library or kind of time moved")
    assert "only the callers above the same code differ (handle_request total 0.2% -> " \
           "72.4%, main total 73.1% -> 0.0%)" in c["reason"]
    assert "--call-graph dwarf" in c["reason"]
    # DWARF unwinding keeps both callers: nothing to say
    c = compare_reports(captures["1.0-dwarf"][1], captures["1.1-dwarf"][1])
    assert "callers" not in c["reason"]


def test_the_differential_tree_has_the_callee_in_both_builds(captures):
    t = diff_tree(captures["1.0-dwarf"][0], captures["1.1-dwarf"][0])
    nodes = t["nodes"]
    fnv = [n for n in nodes if n["n"] == "fnv1a"]
    assert len(fnv) == 1 and (fnv[0]["a"], fnv[0]["b"]) == (702, 711)
    assert nodes[fnv[0]["p"]]["n"] == "handle_request"
    handle = next(n for n in nodes if n["n"] == "handle_request")
    assert (handle["a"], handle["b"]) == (706, 719)


def test_what_both_builds_inline_stays_in_its_holder():
    """The spinpool builds both inline qualla::KVCache::touch into the job's lambda
    (std::_Function_handler<...>::_M_invoke holds its addresses in both): compared as
    compiled, it is no row of its own and no frame of the differential tree."""
    profiles, reports = [], []
    for version in ("1.1.0", "1.0.0"):
        p = load(SPINPOOL / f"{version}-busy.perf.data")
        symbolize(p, [SPINPOOL / f"symbols-{version}.zip"])
        profiles.append(p)
        reports.append(build_report(p, label="busy"))
    touch = _row(reports[0], "qualla::KVCache::touch")
    assert (touch["self"], touch["physical_total"]) == (0, 0) and touch["total"] > 0
    c = compare_reports(*reports)
    assert not [m for m in c["movers"]["functions"] if m["name"] == "qualla::KVCache::touch"]
    assert "qualla::KVCache::touch" not in {n["n"] for n in diff_tree(*profiles)["nodes"]}
