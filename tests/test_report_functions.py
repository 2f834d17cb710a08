"""The report lists the notable functions, not all of them (issue 16: a diverse capture's
65,026 functions made 6 MB of JSON stored with every result): every function on at least
0.05% of the stacks and the first 200 by self; `functions_rest` counts the others."""
from analysis.importers import load
from analysis.report import FUNCTIONS_MIN, FUNCTIONS_MIN_SHARE, build_report
from conftest import FIXTURES

HOT_ROW = FIXTURES / "realworld" / "postgres-hot-row" / "bad-hot-row.perf.data"


def test_the_rest_of_a_many_function_capture_is_counted_not_listed():
    r = build_report(load(HOT_ROW))
    listed, rest = r["functions"], r["functions_rest"]
    assert r["samples"] == 3464
    assert (len(listed), rest["functions"]) == (1083, 1413)
    floor = FUNCTIONS_MIN_SHARE * r["samples"]
    assert all(i < FUNCTIONS_MIN or f["total"] >= floor for i, f in enumerate(listed))
    assert rest["max_total"] < floor  # each left out is on fewer stacks than that
    # every sample's self is in a listed function or in the rest
    assert sum(f["self"] for f in listed) + rest["self"] == r["samples"]
    whole = build_report(load(HOT_ROW), top=10_000)  # --top: as many as asked
    assert len(whole["functions"]) == 1083 + 1413 and whole["functions_rest"] is None


def test_a_small_capture_lists_every_function():
    r = build_report(load(FIXTURES / "recorded" / "two-events.script.txt"))
    assert r["functions_rest"] is None
