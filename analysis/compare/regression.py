"""The regression finding: what a comparison whose verdict is `regression` tells the
capture page, shaped like the diagnosis findings."""
from __future__ import annotations

from ..diagnosis.knowledge import is_c_library
from ..identity import unnamed

#: a throughput loss this large is a high regression whatever else shows (a 21% loss
#: was "medium" when only CPU per unit and slow paths decided)
LOST_HIGH = 0.20
#: points of busy time more in the kernel that the finding names, symbols or not
KERNEL_PP = 5.0
#: a function whose share grew by this many points is named as grown...
GREW_PP = 2.0
#: ... if its own CPU use grew too, when both captures know their CPU use (a share also
#: grows when everything around it shrinks, which is no regression)
GREW_CPUS = 0.02


def grown_functions(cmp: dict) -> list[dict]:
    a, b = cmp["cpus_before"], cmp["cpus_after"]

    def own_cpu_grew(m) -> bool:
        if a is None or b is None:
            return True
        return (m["self_after"] * b - m["self_before"] * a) / 100 >= GREW_CPUS
    return [m for m in _named(cmp["movers"]["functions"])
            if m["self_change"] >= GREW_PP and own_cpu_grew(m)]


def _named(rows: list[dict]) -> list[dict]:
    """The movers with the addresses no symbol names summed per library, never a raw
    address as a reason: "gateway-1.1 (no symbols: upload its symbol file)" 0% -> 94%,
    "the kernel (no symbols: upload the recording host's kallsyms)"."""
    out, per_library = [], {}
    for m in rows:
        if not unnamed(m["name"]):
            out.append(m)
            continue
        kernel = m["name"].startswith("0xffff") or m["dso"].startswith("[kernel")
        key = "[kernel]" if kernel else m["dso"]
        row = per_library.setdefault(key, {
            "name": ("the kernel (no symbols: upload the recording host's kallsyms)"
                     if kernel else f"{key} (no symbols: upload its symbol file)"),
            "dso": key, "self_before": 0.0, "self_after": 0.0, "self_change": 0.0})
        for col in ("self_before", "self_after", "self_change"):
            row[col] = round(row[col] + m[col], 2)
    out += per_library.values()
    out.sort(key=lambda m: -m["self_change"])
    return out


def kernel_shift(ra: dict, rb: dict) -> str | None:
    """"13.4 points more time in the kernel (0.4% -> 13.8% of busy time); upload
    kallsyms to name it": kernel time that grew matters even when nothing names it."""
    a = (ra.get("time_in") or {}).get("kernel")
    b = (rb.get("time_in") or {}).get("kernel")
    if a is None or b is None or 100 * (b - a) < KERNEL_PP:
        return None
    text = (f"{100 * (b - a):.1f} points more time in the kernel ({100 * a:.1f}% -> "
            f"{100 * b:.1f}% of busy time)")
    calls = _system_calls(rb)
    if calls:
        text += f", by system call: {calls}"
    coverage = rb.get("coverage", [])
    missing = []
    kernel = next((c for c in coverage if c["dso"].startswith("[kernel")), None)
    if kernel is not None and kernel["status"] != "resolved":
        missing.append("the recording host's kallsyms")
    libc = next((c for c in coverage if is_c_library(c["dso"])), None)
    if libc is not None and libc["status"] != "resolved":
        missing.append("the C library's symbols (libc6-dbg's debug file)")
    if missing:
        text += f"; upload {' and '.join(missing)} to name it"
    return text


def _system_calls(report: dict) -> str:
    """"write 20.4%, openat 16.9%, close 4.6%": the kernel time by the system call its
    stacks entered through (the kernel-heavy finding's evidence, at any severity), when
    the kernel's frames were named."""
    for f in report.get("findings", []):
        if f["rule"] == "kernel-heavy":
            calls = [c for c in (f.get("evidence") or {}).get("syscalls", [])
                     if c["name"] not in _NOT_A_CALL]
            return ", ".join(f"{c['name']} {100 * c['share']:.1f}%" for c in calls[:3])
    return ""


_NOT_A_CALL = {"other kernel paths", "system call entry and exit"}


def regression_finding(cmp: dict, ra: dict | None = None,
                       rb: dict | None = None) -> dict | None:
    if cmp["verdict"] != "regression":
        return None
    grew = grown_functions(cmp)
    paths = [p for p in cmp["slow_paths"] if p["waste"] and p["change"] >= 1.0]
    parts = [cmp["reason"].rstrip(".")]  # it names the slow paths; evidence has each
    kernel = kernel_shift(ra, rb) if ra is not None and rb is not None else None
    if kernel:
        parts.append(kernel)
    if grew:
        parts.append("grew: " + ", ".join(f"{m['name']} {m['self_before']}% -> "
                                          f"{m['self_after']}%" for m in grew[:3]))
    appeared = [f["rule"] for f in cmp["findings_appeared"]]
    if appeared:
        parts.append("new findings: " + ", ".join(appeared))
    per_unit = cmp.get("cpu_per_unit") or {}
    lost = 0.0  # the throughput at stake
    if "rate_before" in per_unit:
        lost = 1 - per_unit["rate_after"]["value"] / per_unit["rate_before"]["value"]
    big = lost >= LOST_HIGH or per_unit.get("change", 0) >= 0.25 or \
        sum(p["change"] for p in paths) >= 10.0
    total = cmp["samples_after"] or 1
    share = sum(p["change"] for p in paths) / 100 if paths else \
        sum(m["self_change"] for m in grew) / 100
    return {
        "rule": "regression", "title": "Regression against the previous build",
        "severity": "high" if big else "medium", "confidence": "medium",
        "share": round(share, 4), "samples": round(share * total),
        "cpus": cmp["cpus_after"], "summary": "; ".join(parts) + ".",
        "functions": [m["name"] for m in grew[:5]],
        "evidence": {
            "slow_paths": paths[:5],
            "functions": [{"name": m["name"], "dso": m["dso"],
                           "samples": round(m["self_after"] * total / 100),
                           "share": m["self_after"] / 100, "before": m["self_before"] / 100}
                          for m in grew[:5]]},
        "why": "Compared with the previous build's capture, normalised to each capture's "
               "samples (and to the work done when rates are given), the new build spends "
               "more on the paths named here.",
        "fix": "Open the comparison: the differential flame graph shows where the new time "
               "is spent; the changes between the two builds that touch these functions "
               "are the first suspects.",
        "focus": {},
    }
