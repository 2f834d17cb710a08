"""Diagnosis: findings a performance engineer would write after reading the capture, each
with its evidence, why it costs CPU, what to change, and what to focus the flame graph on.

Rules live in rules.py (one explicit list; the rules about files in io_rules.py, about
waiting in wait_rules.py, about hot libraries in code_rules.py), the meaning of symbols in
knowledge.py, what well-known software is and how to fix it in software.py.
"""
from __future__ import annotations

from ..profile import Profile
from .context import Context
from .rules import RULES, SEVERITY_RANK, Finding


def diagnose(profile: Profile, event_id: int | None = None, label: str = "") -> list[Finding]:
    """Findings ordered by impact; the CPU headline first; "nothing notable" when no rule
    found a pattern."""
    return findings_of(Context.build(profile, event_id, label))


def findings_of(ctx: Context) -> list[Finding]:
    found = [f for f in (rule.evaluate(ctx, rule.thresholds) for rule in RULES) if f]
    headline = [f for f in found if f.rule == "cpu-use"]
    rest = [f for f in found if f.rule != "cpu-use"]
    rest.sort(key=lambda f: (-SEVERITY_RANK[f.severity], -f.share, f.rule))
    rest = _causes_first(rest)
    if ctx.total and not rest and not any(f.severity != "info" for f in headline):
        rest.append(Finding(
            "nothing-notable", "No known waste pattern found", "info", "medium", 0.0, 0,
            "None of the rules (spinning, locks and servers' own lock waits, interpreter "
            "locks, kernel time, commits and writes, allocation, copying, scheduling, "
            "interpreters, hot libraries, missing symbols) matched this capture.",
            "", "The flame graph shows where the time goes; the widest frames are the "
                "place to start."))
    return headline + rest


def _causes_first(findings: list[Finding]) -> list[Finding]:
    """A finding that is the symptom of another (kernel time that is a server's lock
    waits, or its commits) comes right after the finding naming that cause, so the
    cause is what lists of captures show first."""
    out = list(findings)
    for f in findings:
        causes = [g for g in out if g.rule in f.evidence.get("explained_by", ())]
        if causes:
            out.remove(f)
            out.insert(out.index(causes[0]) + 1, f)
    return out


__all__ = ["Context", "diagnose", "findings_of", "Finding", "RULES"]
