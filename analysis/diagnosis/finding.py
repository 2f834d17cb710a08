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

    def to_dict(self) -> dict:
        funcs = self.evidence.get("functions", [])
        return {"rule": self.rule, "title": self.title, "severity": self.severity,
                "confidence": self.confidence, "share": round(self.share, 4),
                "samples": self.samples,
                "cpus": None if self.cpus is None else round(self.cpus, 2),
                "summary": self.summary, "functions": [f["name"] for f in funcs],
                "evidence": self.evidence, "why": self.why, "fix": self.fix,
                "focus": self.focus}


@dataclass
class Rule:
    id: str
    title: str
    evaluate: Callable[[Context, dict], Finding | None]
    thresholds: dict


def severity_of(share: float, t: dict) -> str:
    return "high" if share >= t["high"] else "medium" if share >= t["medium"] else "low"


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def cpus_text(c: float | None) -> str:
    if c is None:
        return ""
    return f", about {c:.1f} CPUs" if c >= 0.1 else f", about {c:.2f} CPUs"


def focus_of(funcs: list[dict], tids=()) -> dict:
    return {"functions": [{"id": f["id"], "name": f["name"]} for f in funcs[:3]],
            "threads": sorted(t for t in tids if t is not None)}
