"""A service across its builds: the chart data of its history, which capture a new one is
compared with, and the comparison itself (computed by analysis.compare)."""
from __future__ import annotations

import json

from analysis import compare
from analysis.export import comparison as export_comparison
from analysis.compare import Rate
from analysis.compare.rates import noise_band, per_unit_band
from analysis.compare.rates import parse_measurements  # noqa: F401 (forms, the API)
from analysis.identity import function_identity

from ..models import Capture
from .profiles import result_profile


#: a finding's share at or above this is of the whole capture, not of a pattern in it
WHOLE_CAPTURE = 0.999


def rate_of(capture: Capture) -> Rate | None:
    if not capture.rate:
        return None
    return Rate.of(capture.rate_values or [capture.rate], capture.rate_unit or "req/s")


#: a build's captures of one label whose rates count as repeated measurements, at most
SIBLINGS = 20


def label_rate(capture: Capture) -> Rate | None:
    """The throughput of the capture's build under its label, for a comparison: the runs
    of every analysed capture of that build and label in the same unit (repeated
    captures of one build are repeated measurements of its throughput, and their spread
    is the noise a change is judged against), the capture's own first."""
    rate = rate_of(capture)
    if rate is None:
        return None
    values = list(rate.values or [rate.value])
    siblings = Capture.objects.filter(
        build=capture.build, label=capture.label, status=Capture.Status.DONE,
        rate__isnull=False, rate_unit=capture.rate_unit).exclude(pk=capture.pk)
    for other in siblings.order_by("-created_at")[:SIBLINGS]:
        values += other.rate_values or [other.rate]
    return Rate.of(values, rate.unit)


def label_reports(capture: Capture) -> list[dict]:
    """The reports of the other analysed captures of the capture's build and label
    (the latest SIBLINGS): repeated captures of one build, whose spread is the noise a
    comparison judges what moved against (compare.movers)."""
    siblings = Capture.objects.filter(
        build=capture.build, label=capture.label, status=Capture.Status.DONE
    ).exclude(pk=capture.pk).order_by("-created_at").prefetch_related("results")
    out = []
    for other in siblings[:SIBLINGS]:
        result = other.latest_result()
        if result is not None and result.report:
            out.append(result.report)
    return out


def history(service) -> dict:
    """Chart data: one point per analyzed capture (CPUs busy, by label), and per build the
    average share of the top functions and the largest share of each finding's rule."""
    points, builds = [], []
    fn_totals: dict[str, float] = {}
    per_build_fns: list[dict] = []
    for build in service.builds.order_by("created_at"):
        fns: dict[str, float] = {}
        rules: dict[str, float] = {}
        n = 0
        done = build.captures.filter(status=Capture.Status.DONE).order_by("created_at")
        for capture in done.prefetch_related("results"):
            result = capture.latest_result()
            if result is None:
                continue
            r = result.report
            per_unit = r.get("cpu_per_unit") or {}
            points.append({"capture": capture.pk, "build": build.version,
                           "label": capture.label or "unlabelled", "cpus": r["cpus_busy"],
                           "samples": r["samples"], "rate": r.get("rate"),
                           "cpu_per_unit": per_unit.get("cpu_seconds"),
                           "unit": per_unit.get("unit"),
                           "verdict": (result.comparison or {}).get("verdict"),
                           **_bands(capture, r)})
            total = r["samples"] or 1
            for f in r["functions"][:20]:  # one line per function whatever its build's clones
                key = function_identity(f["name"])
                fns[key] = fns.get(key, 0) + 100 * f["self"] / total
            for f in result.findings():
                # a finding about the whole capture (the CPU headline, more threads than
                # CPUs) has no share of samples to chart: it would read as 100%
                if f["severity"] != "info" and f["share"] < WHOLE_CAPTURE:
                    rules[f["rule"]] = max(rules.get(f["rule"], 0), round(100 * f["share"], 2))
            n += 1
        if n:
            fns = {k: v / n for k, v in fns.items()}
            for k, v in fns.items():
                fn_totals[k] = fn_totals.get(k, 0) + v
        builds.append({"version": build.version, "captures": n, "rules": rules})
        per_build_fns.append(fns)
    top = sorted(fn_totals, key=lambda k: -fn_totals[k])[:8]
    for b, fns in zip(builds, per_build_fns):
        b["functions"] = {k: round(fns.get(k, 0.0), 2) for k in top}
    return {"points": points, "builds": builds, "top_functions": top}


def previous_capture(capture: Capture) -> Capture | None:
    """The same service's previous build's analyzed capture with the same label."""
    return Capture.objects.filter(
        build__service=capture.build.service, status=Capture.Status.DONE,
        build__created_at__lt=capture.build.created_at, label=capture.label,
    ).order_by("-build__created_at", "-created_at").first()


def _bands(capture: Capture, report: dict) -> dict:
    """The noise bands of a point with a rate (compare.rates.noise_band and
    per_unit_band): what its build's throughput and CPU per unit of work must leave for
    a change to be one."""
    rate = rate_of(capture)
    if rate is None:
        return {}
    out = {"rate_band": [round(x, 6) for x in noise_band(rate)]}
    if report.get("cpus_busy"):
        out["per_unit_band"] = [None if x is None else round(x, 9) for x in per_unit_band(
            report["cpus_busy"], report["samples"], rate)]
    return out


def comparison(before: Capture, after: Capture, tree: bool = False) -> dict | None:
    """None when either capture has no analyzed result. `tree`: with the differential
    tree (for the flame graph), which costs a walk over both profiles."""
    ra, rb = before.latest_result(), after.latest_result()
    pa, pb = result_profile(ra), result_profile(rb)
    if pa is None or pb is None:
        return None
    out = compare.compare(pa, pb, before.label, after.label,
                          report_before=ra.report, report_after=rb.report,
                          rate_before=label_rate(before), rate_after=label_rate(after),
                          repeats=(label_reports(before), label_reports(after)))
    if tree:
        out["tree"] = compare.diff_tree(pa, pb)
    out["title"] = comparison_title(before, after)
    out["before"] = {"id": before.pk, "build": before.build.version, "label": before.label}
    out["after"] = {"id": after.pk, "build": after.build.version, "label": after.label}
    return out


def comparison_title(before: Capture, after: Capture) -> str:
    """"gateway: 1.0 load -> 1.1 load" (the names as the users gave them)."""
    return (f"{after.build.service.name}: {before.build.version} {before.label} -> "
            f"{after.build.version} {after.label}")


def comparison_file(before: Capture, after: Capture, fmt: str) -> str | None:
    """A comparison as a file (analysis/export/comparison.py): `json`, the movers as
    `csv`, a `markdown` summary, or `diff-folded` stacks of the differential tree of
    every stack (none merged for being small). None when either side has no result."""
    if fmt == "diff-folded":
        pa = result_profile(before.latest_result())
        pb = result_profile(after.latest_result())
        if pa is None or pb is None:
            return None
        return export_comparison.diff_folded(compare.diff_tree(pa, pb, min_share=0.0))
    data = comparison(before, after)
    if data is None:
        return None
    if fmt == "json":
        return json.dumps(data, indent=1)
    if fmt == "csv":
        return export_comparison.movers_csv(data)
    return export_comparison.summary_markdown(data, data["title"])
