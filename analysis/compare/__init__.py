"""Comparing two captures: the one result the CLI, the API, the pipeline and the compare
page all show: the verdict and its reason (verdict.py), what moved (movers.py), the
findings that appeared or went away, and the regression finding (regression.py). The
differential tree (diff_tree.py) is computed apart, only when it is drawn."""
from __future__ import annotations

from ..diagnosis.stack_rules import RECORDING_RULES
from ..profile import Profile
from ..report import build_report
from . import comparable
from .diff_tree import diff_tree
from .movers import movers
from .regression import regression_finding
from .verdict import Rate, decide

__all__ = ["Rate", "compare", "compare_reports", "diff_tree", "movers"]


def compare(before: Profile, after: Profile, label_before: str = "",
            label_after: str = "", report_before: dict | None = None,
            report_after: dict | None = None, rate_before: Rate | None = None,
            rate_after: Rate | None = None, repeats: tuple = ((), ())) -> dict:
    """Both captures' reports may be passed in when they are already computed."""
    ra = report_before or build_report(before, label=label_before)
    rb = report_after or build_report(after, label=label_after)
    return compare_reports(ra, rb, rate_before, rate_after, repeats)


def compare_reports(ra: dict, rb: dict, rate_before: Rate | None = None,
                    rate_after: Rate | None = None, repeats: tuple = ((), ())) -> dict:
    """Rates default to those the reports carry (build_report's `rate`). `repeats`: the
    reports of the other captures of each side's build and label. What moved is judged
    against their spread too (movers.py), and a side's CPUs busy are the mean of its
    captures' (CPU per unit of work then is that mean over its rate, whose measurements
    are those of every capture: perfweb's history.label_rate)."""
    rate_before = rate_before or _rate_of(ra)
    rate_after = rate_after or _rate_of(rb)
    moved = movers(ra, rb, repeats=repeats)
    ra, rb = _mean_cpus(ra, repeats[0]), _mean_cpus(rb, repeats[1])
    rules_a, rules_b = _notable(ra), _notable(rb)
    out = {
        "rates": {"before": rate_before and rate_before.to_dict(),
                  "after": rate_after and rate_after.to_dict()},
        "cpus_before": ra["cpus_busy"], "cpus_after": rb["cpus_busy"],
        "cpus_change": None if ra["cpus_busy"] is None or rb["cpus_busy"] is None
        else round(rb["cpus_busy"] - ra["cpus_busy"], 3),
        "samples_before": ra["samples"], "samples_after": rb["samples"],
        "movers": moved,
        "findings_appeared": [rules_b[r] for r in sorted(set(rules_b) - set(rules_a))],
        "findings_gone": [rules_a[r] for r in sorted(set(rules_a) - set(rules_b))],
        "findings_kept": sorted(set(rules_a) & set(rules_b)),
    }
    diffs = comparable.differences(ra, rb)
    out["differences"] = diffs
    # another program doing the same job is compared by the work both did, when given
    refused = [d for d in diffs if d["refuses"] and not (
        d["what"] == "program" and rate_before is not None and rate_after is not None)]
    if ra["metadata"].get("damaged") or rb["metadata"].get("damaged"):
        out.update(verdict="inconclusive", cpu_per_unit=None, slow_paths=[],
                   reason="One of the captures could not be read whole (it is damaged), "
                          "so no verdict is drawn from it.")
    elif refused:
        out.update(verdict="inconclusive", cpu_per_unit=None, slow_paths=[],
                   reason=f"These captures cannot be compared: "
                          f"{comparable.describe(refused)}.")
    else:
        out.update(decide(ra, rb, rate_before, rate_after, out["movers"]))
        if diffs:
            out["reason"] += f" Note: {comparable.describe(diffs)}."
    if out["verdict"] == "regression":  # what went with the work is no fix
        out["findings_gone"] = [dict(f, with_less_work=True) if f["rule"] in WITH_THE_LOAD
                                else f for f in out["findings_gone"]]
    out["regression"] = regression_finding(out, ra, rb)
    return out


#: findings that go away when fewer requests are served: in a regression their going is
#: the regression's doing, not a fix (issue 38: "Scheduling pressure" listed as gone read
#: like an improvement)
WITH_THE_LOAD = frozenset({"scheduling-pressure"})


def _mean_cpus(report: dict, others) -> dict:
    """The report with the mean CPUs busy of it and its repeated captures."""
    cpus = [r["cpus_busy"] for r in (report, *others) if r.get("cpus_busy") is not None]
    if not others or report.get("cpus_busy") is None:
        return report
    return dict(report, cpus_busy=round(sum(cpus) / len(cpus), 3))


def _rate_of(report: dict) -> Rate | None:
    r = report.get("rate")
    return None if not r else Rate(r["value"], r["unit"])


def _notable(report: dict) -> dict:
    # a stored report may already carry a regression finding: not a finding of the
    # capture; and how a capture was recorded is no change of the program
    return {f["rule"]: f for f in report["findings"]
            if f["severity"] != "info" and f["rule"] != "regression"
            and f["rule"] not in RECORDING_RULES}
