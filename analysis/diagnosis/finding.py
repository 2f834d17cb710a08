"""What a rule returns, and the small helpers every rule uses to word it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .context import Context

SEVERITY_RANK = {"high": 3, "medium": 2, "low": 1, "info": 0}


@dataclass
class Finding:
    rule: str
    title: str
    severity: str  # high | medium | low | info
    confidence: str  # high | medium | low
    share: float  # of the capture's samples
    samples: int
    summary: str
    why: str
    fix: str
    cpus: float | None = None
    evidence: dict = field(default_factory=dict)
    focus: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # rules list a function under several roles (the code that spins, the lock
        # primitive, the runtime): it is evidence once, where it first appears
        funcs = self.evidence.get("functions")
        if funcs:
            seen: set = set()
            self.evidence["functions"] = [
                f for f in funcs if not (_row_key(f) in seen or seen.add(_row_key(f)))]

    def to_dict(self) -> dict:
        funcs = self.evidence.get("functions", [])
        return {"rule": self.rule, "title": self.title, "severity": self.severity,
                "confidence": self.confidence, "share": round(self.share, 4),
                "samples": self.samples,
                "cpus": None if self.cpus is None else round(self.cpus, 2),
                "summary": self.summary, "functions": [f["name"] for f in funcs],
                "evidence": self.evidence, "why": self.why, "fix": self.fix,
                "focus": self.focus}


def _row_key(row: dict):
    return row.get("id", (row.get("name"), row.get("dso")))


@dataclass
class Rule:
    id: str
    title: str
    evaluate: Callable[[Context, dict], Finding | None]
    thresholds: dict


def severity_of(share: float, t: dict) -> str:
    return "high" if share >= t["high"] else "medium" if share >= t["medium"] else "low"


def seconds_text(s: float) -> str:
    """0.0402 -> "40.2 ms": a duration at the scale a reader compares it."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def with_work_rate(findings: list[Finding], rate) -> list[Finding]:
    """Each finding that costs CPUs also says what that costs per unit of work, when the
    capture's throughput is known (a `compare.Rate`): "0.8 CPUs" reads as a share, "32 ms
    of CPU per request" as what one request pays, which is what a fix changes."""
    if rate is None:
        return findings
    for f in findings:
        if f.rule == "round-trips" and f.evidence.get("waits_per_second"):
            # (a round trip per row, per key: the number a fix of batching divides)
            per = f.evidence["waits_per_second"] / rate.value
            f.evidence["waits_per_unit"] = {"unit": rate.per, "waits": per}
            f.summary += f" Per {rate.per}: {per:.2g} round trips."
            continue
        waited = f.evidence.get("per_second") if f.rule in ("blocked-time",
                                                               "round-trips") else None
        if waited:  # blocked seconds per second over requests per second
            per = waited / rate.value
            f.evidence["wait_per_unit"] = {"unit": rate.per, "seconds": per}
            f.summary += f" Per {rate.per}: {seconds_text(per)} of waiting."
            continue
        if f.cpus is None or f.severity == "info" and f.rule != "cpu-use":
            continue
        per = f.cpus / rate.value
        f.evidence["cpu_per_unit"] = {"unit": rate.per, "cpu_seconds": per}
        f.summary += f" Per {rate.per}: {seconds_text(per)} of CPU."
    return findings


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def cpus_text(c: float | None) -> str:
    if c is None:
        return ""
    return f", about {c:.1f} CPUs" if c >= 0.1 else f", about {c:.2f} CPUs"


def focus_of(funcs: list[dict], tids=()) -> dict:
    return {"functions": [{"id": f["id"], "name": f["name"]} for f in funcs[:3]],
            "threads": sorted(t for t in tids if t is not None)}
