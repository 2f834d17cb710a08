"""How sure a finding is, and what it costs: the gate every finding passes before it may
say more than "low".

A share of samples is a measurement with sampling noise: 2 of 4 samples is "50%", and
its 95% interval is 15%-85%. Every finding drawn from samples carries the Wilson score
interval of its share (the binomial interval that stays inside 0-1 and holds for small
counts: Wilson 1927; Brown, Cai and DasGupta 2001 recommend it over the normal
approximation), and its severity is decided by the interval's lower end, by the CPUs
it costs and by how many samples it rests on, never by a point share alone:

- below MIN_SAMPLES samples, or MIN_CPUS of CPU, a finding is at most "low": a capture of
  an idle pool with 4 samples can say where its samples are, and nothing more;
- "high" needs HIGH_CPUS of CPU (a quarter of a core burnt on one cause) and a lower
  bound of at least HIGH_SHARE; "medium" a lower bound of at least MEDIUM_SHARE.

Findings about the capture itself (missing symbols, cut stacks) are notes about the
recording, not costs: they are never above low.
"""
from __future__ import annotations

import math

Z95 = 1.959964  # two-sided 95%
MIN_SAMPLES = 30
MIN_CPUS = 0.05
HIGH_CPUS = 0.25
MEDIUM_SHARE = 0.05
HIGH_SHARE = 0.20

#: findings about how the capture was recorded, not about what the program did
RECORDING_NOTES = frozenset({"missing-symbols", "broken-stacks", "interpreter-bound"})
#: not drawn from a share of the on-CPU samples (the headline, a damaged capture, the
#: off-CPU rules, which weigh seconds and waits: blocked_rules gates those)
NOT_SAMPLED = frozenset({"cpu-use", "damaged-capture", "nothing-notable", "blocked-time",
                         "waiting-for-cpu", "round-trips", "thread-churn"})

#: findings whose samples are the visible part of a wait (a commit's fsync, a lock's
#: handoff, an interpreter lock, threads off-CPU): their cost is the waiting, which uses
#: no CPU, so the CPU gate does not apply to them (the samples and interval gates do)
WAIT_COSTS = frozenset({"commit-io", "lock-wait", "interpreter-lock", "lock-contention",
                        "off-cpu", "sync-io"})

_RANK = {"info": 0, "low": 1, "medium": 2, "high": 3}


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def cap(severity: str, ceiling: str) -> str:
    return severity if _RANK[severity] <= _RANK[ceiling] else ceiling


def ceiling(samples: float, total: float, cpus: float | None) -> str:
    """The highest severity the evidence allows a finding of `samples` of `total`."""
    if samples < MIN_SAMPLES or (cpus is not None and cpus < MIN_CPUS):
        return "low"
    lo, _ = wilson(samples, total)
    if lo < MEDIUM_SHARE:
        return "low"
    if lo < HIGH_SHARE or (cpus is not None and cpus < HIGH_CPUS):
        return "medium"
    return "high"


def calibrate(findings: list, total: float) -> list:
    """Each finding's interval in its evidence, and its severity capped by what the
    evidence allows (never raised)."""
    for f in findings:
        if f.rule in RECORDING_NOTES:
            f.severity = cap(f.severity, "low")
        if f.rule in NOT_SAMPLED or not total:
            continue
        lo, hi = wilson(f.samples, total)
        f.evidence["interval"] = [round(lo, 4), round(hi, 4)]
        cpus = None if f.rule in WAIT_COSTS else f.cpus
        f.severity = cap(f.severity, ceiling(f.samples, total, cpus))
    return findings
