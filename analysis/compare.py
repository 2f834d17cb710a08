"""Comparing two captures: what grew, what shrank, what appeared.

Shares are normalised to each capture's own total, so a capture with twice the samples
does not look twice as bad; the differential tree carries both shares and both counts,
and the client colours frames by growth. A regression finding names what grew when the
new capture differs beyond the thresholds.
"""
from __future__ import annotations

from .aggregate import tree
from .aggregate.selection import stack_weights
from .profile import Profile
from .report import build_report

#: a function or DSO moving by this many percentage points of the capture is notable
MOVER_MIN_PP = 1.0
#: regression: CPUs busy up by this factor (and at least REGRESSION_MIN_CPUS), or a
#: function's share up by REGRESSION_PP points
REGRESSION_CPU_FACTOR = 1.2
REGRESSION_MIN_CPUS = 0.1
REGRESSION_PP = 5.0
#: ... and, when both captures know their CPU use, its own CPU use up by this many CPUs:
#: a function's share also grows when everything around it shrinks, which is no regression
REGRESSION_FN_CPUS = 0.05


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]  # the same library sits under another path per build


def _function_shares(report: dict) -> dict:
    total = report["samples"] or 1
    return {(f["name"], _basename(f["dso"])): (f["self"] / total, f["total"] / total)
            for f in report["functions"]}


def movers(ra: dict, rb: dict, n: int = 30) -> dict:
    """From the two reports (build_report with every function): their function and DSO
    tables already hold what moved."""
    fa, fb = _function_shares(ra), _function_shares(rb)
    ta, tb = ra["samples"] or 1, rb["samples"] or 1
    rows = []
    for key in set(fa) | set(fb):
        a = fa.get(key, (0.0, 0.0))
        b = fb.get(key, (0.0, 0.0))
        rows.append({"name": key[0], "dso": key[1],
                     "self_before": round(100 * a[0], 2), "self_after": round(100 * b[0], 2),
                     "total_before": round(100 * a[1], 2), "total_after": round(100 * b[1], 2),
                     "self_change": round(100 * (b[0] - a[0]), 2),
                     "total_change": round(100 * (b[1] - a[1]), 2)})
    rows.sort(key=lambda r: (-abs(r["self_change"]), -abs(r["total_change"]), r["name"]))
    da = {_basename(d["dso"]): d for d in ra["dsos"]}
    db = {_basename(d["dso"]): d for d in rb["dsos"]}
    dsos = []
    for dso in set(da) | set(db):
        a = da.get(dso, {"self": 0, "total": 0})
        b = db.get(dso, {"self": 0, "total": 0})
        dsos.append({"dso": dso, "self_before": round(100 * a["self"] / ta, 2),
                     "self_after": round(100 * b["self"] / tb, 2),
                     "self_change": round(100 * (b["self"] / tb - a["self"] / ta), 2)})
    dsos.sort(key=lambda r: -abs(r["self_change"]))
    return {"functions": [r for r in rows if abs(r["self_change"]) >= MOVER_MIN_PP or
                          abs(r["total_change"]) >= MOVER_MIN_PP][:n],
            "dsos": [d for d in dsos if abs(d["self_change"]) >= MOVER_MIN_PP][:n],
            "samples_before": ra["samples"], "samples_after": rb["samples"]}


def diff_tree(before: Profile, after: Profile, min_share: float = 0.001) -> dict:
    """One tree with both captures, frames keyed by function name: `a` and `b` the two
    captures' samples, `nodes` the frames (parents first): n name, a/b samples before and
    after, sa/sb shares of each capture, p the parent's index (-1: the root). Frames below
    `min_share` of both captures are merged; stacks deeper than tree.MAX_DEPTH end in a
    "[deeper frames]" node (see aggregate.tree: flat, bounded, never recursive)."""
    paths, wa, wb = [], [], []
    for p, weights, mine, other in ((before, stack_weights(before), wa, wb),
                                    (after, stack_weights(after), wb, wa)):
        names = [f.name for f in p.functions]
        fns = tree.location_functions(p)
        for sid, w in weights.items():
            fids = tree.functions_of(fns, p.stacks[sid], False, tree.MAX_DEPTH + 1)
            paths.append([names[f] for f in fids])
            mine.append(w)
            other.append(0)
    ta, tb = sum(wa) or 1, sum(wb) or 1
    rows = tree.grow(paths, [wa, wb], tree.ROOT,
                     keep=lambda t: max(t[0] / ta, t[1] / tb) >= min_share,
                     order=lambda key, t: -max(round(t[0] / ta, 5), round(t[1] / tb, 5)))
    nodes = [{"n": _DIFF_NAMES.get(r.key, r.key), "a": r.total[0], "b": r.total[1],
              "sa": round(r.total[0] / ta, 5), "sb": round(r.total[1] / tb, 5),
              "p": r.parent} for r in rows]
    return {"a": nodes[0]["a"], "b": nodes[0]["b"], "nodes": nodes}


_DIFF_NAMES = {tree.ROOT: "all", tree.MERGED: "[merged small frames]",
               tree.DEEPER: "[deeper frames]"}


def compare(before: Profile, after: Profile, label_before: str = "",
            label_after: str = "", report_before: dict | None = None,
            report_after: dict | None = None) -> dict:
    """Both captures' reports may be passed in when they are already computed."""
    ra = report_before or build_report(before, label=label_before)
    rb = report_after or build_report(after, label=label_after)
    rules_a = _notable(ra)
    rules_b = _notable(rb)
    moved = movers(ra, rb)
    out = {
        "cpus_before": ra["cpus_busy"], "cpus_after": rb["cpus_busy"],
        "cpus_change": None if ra["cpus_busy"] is None or rb["cpus_busy"] is None
        else round(rb["cpus_busy"] - ra["cpus_busy"], 3),
        "samples_before": ra["samples"], "samples_after": rb["samples"],
        "movers": moved,
        "findings_appeared": [rules_b[r] for r in sorted(set(rules_b) - set(rules_a))],
        "findings_gone": [rules_a[r] for r in sorted(set(rules_a) - set(rules_b))],
        "findings_kept": sorted(set(rules_a) & set(rules_b)),
    }
    damaged = ra["metadata"].get("damaged") or rb["metadata"].get("damaged")
    out["regression"] = None if damaged else regression(out)  # none from a partial read
    return out


def _notable(report: dict) -> dict:
    # a stored report may already carry a regression finding: not a finding of the capture
    return {f["rule"]: f for f in report["findings"]
            if f["severity"] != "info" and f["rule"] != "regression"}


def regression(cmp: dict) -> dict | None:
    """A finding (shaped like the diagnosis findings) when the new capture is worse beyond
    the thresholds, naming what grew."""
    a, b = cmp["cpus_before"], cmp["cpus_after"]

    def grew_in_cpus(m) -> bool:
        if a is None or b is None:
            return True
        return (m["self_after"] * b - m["self_before"] * a) / 100 >= REGRESSION_FN_CPUS
    grew = [m for m in cmp["movers"]["functions"]
            if m["self_change"] >= REGRESSION_PP and grew_in_cpus(m)]
    cpu_up = a is not None and b is not None and b - a >= REGRESSION_MIN_CPUS and \
        b >= a * REGRESSION_CPU_FACTOR
    appeared = [f["rule"] for f in cmp["findings_appeared"]]
    if not grew and not cpu_up:
        return None
    parts = []
    if cpu_up:
        parts.append(f"CPUs busy rose from {a:.2f} to {b:.2f}")
    if grew:
        parts.append("grew: " + ", ".join(f"{m['name']} {m['self_before']}% -> "
                                          f"{m['self_after']}%" for m in grew[:3]))
    if appeared:
        parts.append("new findings: " + ", ".join(appeared))
    total = cmp["samples_after"] or 1
    share = sum(m["self_change"] for m in grew) / 100
    return {
        "rule": "regression", "title": "Regression against the previous build",
        "severity": "high" if cpu_up else "medium", "confidence": "medium",
        "share": round(share, 4), "samples": round(share * total),
        "cpus": b, "summary": "; ".join(parts) + ".",
        "functions": [m["name"] for m in grew[:5]],
        "evidence": {"functions": [
            {"name": m["name"], "dso": m["dso"], "samples": round(m["self_after"] * total / 100),
             "share": m["self_after"] / 100, "before": m["self_before"] / 100}
            for m in grew[:5]]},
        "why": "Compared with the previous build's capture of the same label, normalised to "
               "each capture's samples, these functions take a larger share of the CPU.",
        "fix": "Open the comparison: the differential flame graph shows where the new time "
               "is spent; the changes between the two builds that touch these functions "
               "are the first suspects.",
        "focus": {},
    }
