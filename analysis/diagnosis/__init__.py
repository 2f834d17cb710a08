"""Diagnosis: findings a performance engineer would write after reading the capture, each
with its evidence, why it costs CPU, what to change, and what to focus the flame graph on.

Rules live in rules.py (one explicit list; the rules about files in io_rules.py, about
waiting in wait_rules.py, about hot libraries in code_rules.py), the meaning of symbols in
knowledge.py, what well-known software is and how to fix it in software.py.
"""
from __future__ import annotations

from ..profile import Profile
from .context import Context
from .evidence import RECORDING_NOTES, calibrate
from .rules import RULES, SEVERITY_RANK, Finding


def diagnose(profile: Profile, event_id: int | None = None, label: str = "") -> list[Finding]:
    """Findings ordered by impact; the CPU headline first; "nothing notable" when no rule
    found a pattern."""
    return findings_of(Context.build(profile, event_id, label))


def findings_of(ctx: Context) -> list[Finding]:
    found: list[Finding] = []
    for rule in RULES:
        got = rule.evaluate(ctx, rule.thresholds)
        if isinstance(got, list):
            found.extend(got)
        elif got:
            found.append(got)
    found = calibrate(_unnamed_elsewhere(found), ctx.total)
    headline = [f for f in found if f.rule == "cpu-use"]
    rest = [f for f in found if f.rule != "cpu-use"]
    rest.sort(key=lambda f: (-SEVERITY_RANK[f.severity], -f.share, f.rule))
    rest = _causes_first(rest)
    # (where the time goes, said at info, is no pattern of waste)
    if ctx.total and not any(f.severity != "info" for f in rest) and \
            not any(f.severity != "info" for f in headline):
        rest.append(Finding(
            "nothing-notable", "No known waste pattern found", "info", "medium", 0.0, 0,
            "None of the rules (spinning, locks and servers' own lock waits, interpreter "
            "locks, kernel time, commits and writes, allocation, copying, scheduling, "
            "interpreters, hot libraries, missing symbols) matched this capture.",
            "", "The flame graph shows where the time goes; the widest frames are the "
                "place to start."))
    return headline + rest


def _unnamed_elsewhere(found: list[Finding]) -> list[Finding]:
    """The general pass's hot spots (hot_spots.py) that no other finding already names:
    a function or a library another rule explains (zlib's longest_match under hot-code,
    malloc under allocator-churn) is said once, by the rule that knows why."""
    named: set = set()
    for f in found:
        # (notes about the recording name files to upload, not where the time goes)
        if f.rule in ("hot-spot", "cpu-use") or f.rule in RECORDING_NOTES:
            continue
        for row in f.evidence.get("functions", []) or []:
            named.add(row.get("name"))
            named.add(row.get("dso"))
        for key in ("dso", "library"):
            if f.evidence.get(key):
                named.add(f.evidence[key])
    out = []
    for f in found:
        if f.rule == "hot-spot":
            rows = f.evidence.get("functions", [])
            if f.evidence.get("dso") in named and not rows[:1] or \
                    (rows[:1] and rows[0]["name"] in named and len(rows) == 1):
                continue
        out.append(f)
    return out


def _causes_first(findings: list[Finding]) -> list[Finding]:
    """A finding that is the symptom of another (kernel time that is a server's lock
    waits, or its commits) comes right after the finding naming that cause, so the
    cause is what lists of captures show first; the two keep the place of the more
    severe of them (a high symptom of a medium cause lifts the cause: the list stays in
    order of severity, issue 36)."""
    cause_of: dict[int, Finding] = {}
    for f in findings:
        causes = [g for g in findings
                  if g is not f and g.rule in f.evidence.get("explained_by", ())]
        if causes:
            cause_of[id(f)] = causes[0]

    def root(f: Finding) -> Finding:
        seen: set[int] = set()
        while id(f) in cause_of and id(f) not in seen:  # (a cycle stops where it meets)
            seen.add(id(f))
            f = cause_of[id(f)]
        return f
    groups: dict[int, tuple[Finding, list[Finding]]] = {}  # in order of first member
    for f in findings:
        cause = root(f)
        groups.setdefault(id(cause), (cause, []))[1].append(f)
    return [g for cause, members in groups.values()
            for g in [cause] + [m for m in members if m is not cause]]


__all__ = ["Context", "diagnose", "findings_of", "Finding", "RULES"]
