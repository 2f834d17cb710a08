"""Findings are listed by severity (issue 36), a symptom right after the finding naming
its cause (diagnosis._causes_first): the pair takes the place of the more severe."""
from analysis.diagnosis import _causes_first
from analysis.diagnosis.finding import Finding


def _f(rule: str, severity: str, explained_by=()) -> Finding:
    return Finding(rule, rule, severity, "high", 0.1, 10, "", "", "",
                   evidence={"explained_by": list(explained_by)})


def _order(findings):
    return [(f.rule, f.severity) for f in _causes_first(findings)]


def test_a_high_symptom_lifts_its_medium_cause():
    found = [_f("kernel-heavy", "high", ["lock-contention"]), _f("sync-io", "medium"),
             _f("lock-contention", "medium"), _f("hot-spot", "low")]
    assert _order(found) == [("lock-contention", "medium"), ("kernel-heavy", "high"),
                             ("sync-io", "medium"), ("hot-spot", "low")]


def test_a_symptom_follows_its_more_severe_cause():
    found = [_f("spin-wait", "high"), _f("broken-stacks", "medium"),
             _f("kernel-heavy", "low", ["spin-wait"])]
    assert _order(found) == [("spin-wait", "high"), ("kernel-heavy", "low"),
                             ("broken-stacks", "medium")]


def test_findings_without_causes_keep_their_order_and_cycles_end():
    found = [_f("a", "high"), _f("b", "medium", ["c"]), _f("c", "medium", ["b"]),
             _f("d", "low")]
    assert [f.rule for f in _causes_first(found)] in (["a", "c", "b", "d"],
                                                     ["a", "b", "c", "d"])
    plain = [_f("x", "high"), _f("y", "low")]
    assert _order(plain) == [("x", "high"), ("y", "low")]
