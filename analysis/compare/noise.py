"""How sure a comparison is of a change: the sampling noise of each figure.

A profile counts samples. A function's share of a capture is k of its n samples, a
binomial proportion; two captures of the same work differ by chance alone, by about
sqrt(p(1-p)/n) per capture. A change is significant when it lies outside its interval,
here 99% (Z): a comparison tests every function and library at once, and at 95% one
row in twenty would move by chance. The interval is Agresti and Caffo's (one sample
added to each side of each proportion), which stays honest for a function with no
sample in one capture, where the plain Wald interval is zero wide.

Counts per second (waits, samples as CPU use) are Poisson: a count k has variance k.

Samples of one run are not independent: a program's phases come in bursts, and the
kernel's network and scheduler functions move together. On five pairs of captures of
one unchanged program doing the same job twice (tests/fixtures/same-work: gzip, Redis,
CPython, Apache, a C sort), the largest change of a function or library was 1.46 times
its binomial half-width (Apache's tcp_sendmsg total, 3.7 points); the intervals are
widened by DISPERSION to hold such runs. Repeated captures of one build measure the
rest of the noise: where a side has several, a share's interval is also Welch's, at 99%,
on the captures' own spread (spread_half), and the wider of the two is kept.
"""
from __future__ import annotations

import math
import statistics

#: two-sided 99%
Z = 2.576
#: how much wider than a binomial's the intervals are (see above: 1.46 measured)
DISPERSION = 2.0


def share_change(ka: float, na: float, kb: float, nb: float) -> tuple[float, float]:
    """(the change of the share in points, the half-width of its interval in points)
    for k of n samples before and after."""
    na, nb = max(na, 0.0), max(nb, 0.0)
    pa = ka / na if na else 0.0
    pb = kb / nb if nb else 0.0
    se = math.sqrt(_variance(ka, na) + _variance(kb, nb))
    return 100 * (pb - pa), 100 * Z * DISPERSION * se


def _variance(k: float, n: float) -> float:
    """A capture with no sample at all ran nothing in its time (an idle service that
    stopped spinning): its share is known, not uncertain."""
    if not n:
        return 0.0
    q = (k + 1) / (n + 2)
    return q * (1 - q) / (n + 2)


def count_change(ka: float, ta: float, kb: float, tb: float) -> tuple[float, float]:
    """(the change of a rate, its half-width) for counts ka in ta seconds (or units of
    work) and kb in tb: Poisson, one count added to each side as for shares."""
    ra, rb = ka / ta, kb / tb
    se = math.sqrt((ka + 1) / ta ** 2 + (kb + 1) / tb ** 2)
    return rb - ra, Z * DISPERSION * se


def beyond(change: float, half: float) -> bool:
    return abs(change) > half


def ratio_of_cpus(a: float, na: int, b: float, nb: int) -> tuple[float, float]:
    """(the relative change of CPUs busy b/a - 1, its half-width): CPUs busy are the
    samples over the capture's time, so their relative noise is that of a Poisson count,
    1/sqrt(samples), on each side."""
    if not a or not na or not nb:
        return 0.0, math.inf
    return b / a - 1, Z * DISPERSION * (b / a) * math.sqrt(1 / na + 1 / nb)


#: Student's t, two-sided 99%, for 1 to 30 degrees of freedom (then Z)
_T99 = (63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106,
        3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819,
        2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750)


def spread_half(a: list[float], b: list[float]) -> float | None:
    """The half-width of the 99% interval of the change of a mean, each side's values
    being one figure measured in several captures (a share in points, per capture):
    Welch's t on their spread. A side captured once lends the other's spread (one
    machine, the same noise for both builds). None when neither side has two."""
    na, nb = len(a), len(b)
    if na < 2 and nb < 2:
        return None
    sa = statistics.variance(a) if na >= 2 else None
    sb = statistics.variance(b) if nb >= 2 else None
    sa = sa if sa is not None else sb
    sb = sb if sb is not None else sa
    va, vb = sa / na, sb / nb
    var = va + vb
    if not var:
        return 0.0
    df = var ** 2 / (va ** 2 / max(na - 1, 1) + vb ** 2 / max(nb - 1, 1))
    t = _T99[max(int(df), 1) - 1] if df < len(_T99) + 1 else Z
    return t * math.sqrt(var)
