"""The checks every folder of real-software pairs gets (tests/fixtures/realworld*/): its
table names real files, and the comparison follows the throughput the load generator
printed: with rates the fix is an improvement and the reverse a regression, without them
the fix is never a regression."""
from functools import lru_cache

from analysis.compare import Rate, compare_reports, costs
from analysis.importers import load
from analysis.report import build_report


def assert_pairs_on_disk(here, pairs: dict, expected: dict) -> None:
    assert set(expected) == set(pairs)
    for kind, pair in pairs.items():
        for side in ("bad", "fixed"):
            assert (here / kind / pair[side]).is_file(), (kind, side)


def reports(here, pairs: dict):
    """report(kind, side): the side's capture of a folder's pair analysed as under load,
    once per test process."""
    @lru_cache(maxsize=None)
    def report(kind: str, side: str) -> dict:
        return build_report(load(here / kind / pairs[kind][side]), label="load")
    return report


def folder_reports(here) -> tuple[dict, object]:
    """(the folder's pairs.yaml, its report(kind, side))."""
    import yaml
    pairs = yaml.safe_load((here / "pairs.yaml").read_text())
    return pairs, reports(here, pairs)


def by_rule(report: dict) -> dict:
    """A report's findings by their rule."""
    return {f["rule"]: f for f in report["findings"]}


def problems(report: dict) -> list[dict]:
    """The findings that say something is wrong: medium or high."""
    return [f for f in report["findings"] if f["severity"] in ("medium", "high")]


def assert_names_the_cause(report: dict, expected: tuple) -> None:
    """A problem finding of the rule, the severity and the title expected, whose summary
    or fix holds each of the words (the cause and what to change)."""
    rule, severity, title, words = expected
    found = [f for f in problems(report) if f["rule"] == rule and title in f["title"]]
    assert found, [(f["rule"], f["title"]) for f in problems(report)]
    f = found[0]
    assert f["severity"] == severity
    text = f["summary"] + " " + f["fix"]
    for w in words:
        assert w in text, (w, text)


def assert_rates_decide(pair: dict, bad: dict, fixed: dict) -> None:
    """With the throughputs, the fix is an improvement and the reverse a regression."""
    rb, rf = Rate(pair["rate_bad"], pair["unit"]), Rate(pair["rate_fixed"], pair["unit"])
    assert compare_reports(bad, fixed, rb, rf)["verdict"] == "improvement"
    assert compare_reports(fixed, bad, rf, rb)["verdict"] == "regression"


def assert_follows_throughput(pair: dict, bad: dict, fixed: dict) -> None:
    assert_rates_decide(pair, bad, fixed)
    assert_judged_without_rates(bad, fixed, None)


#: pairs whose fixed capture carries a known false alarm (tests/test_false_alarms.py
#: KNOWN): without rates one cost appeared and another went away, so no verdict is drawn
#: from the costs, and the pair is only held to the right direction
BOTH_WAYS = {"numpy-elementwise-python-loop", "sqlite-prepare-per-query"}


def assert_judged_without_rates(bad: dict, fixed: dict, expected: tuple | None,
                                kind: str = "") -> None:
    """Without the throughput (issue 38): never the wrong direction; and where the bad
    capture names its cause as a waste (`expected`: rule, severity, title, words), the
    bad side after the fix is a regression and the fix an improvement, each reason
    naming that cause by its title."""
    worse, better = compare_reports(fixed, bad), compare_reports(bad, fixed)
    assert worse["verdict"] != "improvement", worse["reason"]
    assert better["verdict"] != "regression", better["reason"]
    assert better["regression"] is None
    if expected is None or expected[0] in costs.NOT_WASTE or kind in BOTH_WAYS:
        return
    if worse["reason"].startswith("These captures cannot be compared: the program "
                                  "differs"):  # the fix is another program (bash -> gawk)
        assert better["verdict"] == "inconclusive"
        return
    title = expected[2]
    assert worse["verdict"] == "regression", worse["reason"]
    assert better["verdict"] == "improvement", better["reason"]
    for c, said in ((worse, "A cost grew: "), (better, "A cost went away: ")):
        if c["reason"].startswith("Threads spend "):  # blocked time decided: its kinds
            continue
        assert c["reason"].startswith(said) and title in c["reason"], (title, c["reason"])


def holdout_tests(here, expected: dict, where_instead: dict | None = None,
                  fixed_known: dict | None = None) -> tuple[dict, dict, object]:
    """The tests every holdout folder gets, made for its module: (the test functions, to
    put in the module's namespace where pytest collects them; the folder's pairs; its
    report(kind, side)). `expected` per pair: the finding that names the cause (rule,
    severity, title, words) or None; `where_instead`: an unnamed cause's capture with the
    one problem finding that says where its time goes; `fixed_known`: a fixed capture's
    findings on a cost its README names (tests/test_false_alarms.py KNOWN), whose pair is
    then judged with its throughput only."""
    import pytest
    where_instead, fixed_known = where_instead or {}, fixed_known or {}
    pairs, report = folder_reports(here)

    def test_every_pair_is_expected_and_on_disk():
        assert_pairs_on_disk(here, pairs, expected)

    @pytest.mark.parametrize("kind", sorted(k for k, v in expected.items() if v))
    def test_the_bad_capture_names_the_cause(kind):
        assert_names_the_cause(report(kind, "bad"), expected[kind])

    @pytest.mark.parametrize("kind", sorted(k for k, v in expected.items()
                                            if not v and k not in where_instead))
    def test_an_unnamed_cause_gets_no_problem_finding_instead(kind):
        assert problems(report(kind, "bad")) == []

    @pytest.mark.parametrize("kind", sorted(where_instead))
    def test_where_the_time_goes_is_said_when_the_cause_is_not(kind):
        assert len(problems(report(kind, "bad"))) == 1
        assert_names_the_cause(report(kind, "bad"), where_instead[kind])

    @pytest.mark.parametrize("kind", sorted(pairs))
    def test_the_fixed_capture_has_no_problem_finding(kind):
        assert [f["rule"] for f in problems(report(kind, "fixed"))] == \
            fixed_known.get(kind, []), pairs[kind]["fixed_expect"]

    @pytest.mark.parametrize("kind", sorted(pairs))
    def test_the_comparison_follows_the_throughput(kind):
        bad, fixed = report(kind, "bad"), report(kind, "fixed")
        assert_rates_decide(pairs[kind], bad, fixed)
        if kind not in fixed_known:
            assert_judged_without_rates(bad, fixed, expected[kind], kind)

    tests = {name: fn for name, fn in locals().items() if name.startswith("test_")}
    if not where_instead:  # (a parametrize over nothing would be collected as skipped)
        del tests["test_where_the_time_goes_is_said_when_the_cause_is_not"]
    return tests, pairs, report
