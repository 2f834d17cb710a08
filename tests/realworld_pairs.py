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
