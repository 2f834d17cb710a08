"""Before a verdict, whether two captures can be compared at all (issue 38): the same
kind of event, the same kind of work, enough samples, the same program. What differs is
said; what makes a verdict meaningless refuses it."""
import pytest
import yaml

from analysis.compare import Rate, compare_reports
from analysis.compare.comparable import base_event
from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES, PUBLIC, SPINPOOL

GREGG = PUBLIC / "brendangregg__FlameGraph" / "test"


def _report(path, label="load"):
    return build_report(load(path), label=label)


@pytest.mark.parametrize("name,event", [
    ("cpu-clock:pppH", "cpu-clock"), ("cpu-clock/freq=499/", "cpu-clock"),
    ("cycles:u", "cycles"), ("cpu/cycles/u", "cycles"), ("cpu_core/cycles/", "cycles"),
    ("sched:sched_switch", "sched:sched_switch"), ("page-faults", "page-faults")])
def test_events_are_compared_by_what_they_count(name, event):
    assert base_event(name) == event


def test_page_faults_are_not_compared_with_cpu_samples():
    faults = _report(GREGG / "perf-java-faults-01.txt")
    cpu = _report(GREGG / "perf-java-stacks-01.txt")
    assert (faults["event"], cpu["event"]) == ("page-faults", "cycles")
    c = compare_reports(cpu, faults)
    assert c["verdict"] == "inconclusive"
    assert c["reason"].startswith(
        "These captures cannot be compared: the event differs (cycles -> page-faults): "
        "they count different events, whose shares are different quantities; too few "
        "samples (46 -> 23)")


def test_an_idle_capture_is_not_compared_with_one_under_load():
    idle = _report(SPINPOOL / "1.0.0-idle.perf.data", "idle")
    busy = _report(SPINPOOL / "1.0.0-busy.perf.data", "busy")
    c = compare_reports(idle, busy)
    assert c["verdict"] == "inconclusive"
    assert c["reason"] == (
        "These captures cannot be compared: the label differs (idle -> busy): one is "
        "labelled idle and the other not: they did different work.")
    assert c["regression"] is None


def test_a_capture_of_a_handful_of_samples_gets_no_verdict():
    few = _report(FIXTURES / "offcpu" / "idle-pool" / "gateway-1.0-idle.perf.data")
    busy = _report(FIXTURES / "formats" / "gateway-1.0.perf.data")
    assert few["samples"] < 50 <= busy["samples"]
    c = compare_reports(busy, few)
    assert c["verdict"] == "inconclusive"
    assert c["reason"].startswith(f"These captures cannot be compared: too few samples "
                                  f"({busy['samples']} -> {few['samples']}): under 50 "
                                  f"samples show no change but the largest")


def test_another_program_is_compared_only_by_the_work_both_did():
    """The fix of holdout 8's bash loop is a gawk script: without rates the profiles of
    two programs say nothing of each other; with the lines per second of each, the
    throughput decides, and the difference is said."""
    here = FIXTURES / "realworld-holdout8"
    pair = yaml.safe_load((here / "pairs.yaml").read_text())["bash-fork-per-line"]
    bad = _report(here / "bash-fork-per-line" / pair["bad"])
    fixed = _report(here / "bash-fork-per-line" / pair["fixed"])
    c = compare_reports(fixed, bad)
    assert c["verdict"] == "inconclusive"
    assert c["reason"].startswith("These captures cannot be compared: the program differs "
                                  "(gawk -> bash)")
    c = compare_reports(fixed, bad, Rate(pair["rate_fixed"], pair["unit"]),
                        Rate(pair["rate_bad"], pair["unit"]))
    assert c["verdict"] == "regression"
    assert c["reason"].endswith(" Note: the program differs (gawk -> bash): their own code "
                                "is in different programs.")
