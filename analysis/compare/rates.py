"""A throughput: the work done per second while a capture was taken, measured once or
several times. Measured several times, its spread is the noise a change of throughput
is judged against (a rate measured once has none: SHARED_NOISE stands in)."""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass

from .noise import DISPERSION, Z

#: two-sided 95% Student t for the degrees of freedom 1..30 (beyond: the normal's 1.96):
#: the means of 3 measurements against 3 have 4 (Welch's approximation gives fewer)
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
        2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
        2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


@dataclass(frozen=True)
class Rate:
    """Work done per second while the capture was taken, e.g. Rate(53556, "req/s")."""
    value: float
    unit: str
    #: every measurement, when there were several (value is then their mean)
    values: tuple[float, ...] = ()

    def __post_init__(self):
        for v in (self.value, *self.values):
            if not v > 0:
                raise ValueError(f"a rate must be a positive number, not {v!r}")

    @classmethod
    def of(cls, values, unit: str) -> "Rate":
        """Rate.of([7.5, 7.9, 8.1], "MB/s"): their mean, with the measurements kept."""
        values = tuple(float(v) for v in values)
        if not values:
            raise ValueError("a rate needs at least one measurement")
        if len(values) == 1:
            return cls(values[0], unit)
        return cls(statistics.fmean(values), unit, values)

    @property
    def per(self) -> str:
        """What one unit of work is: "req/s" -> "req", "rows per second" -> "rows"."""
        u = self.unit.strip()
        for tail in ("/s", "/sec", " per second", " per sec"):
            if u.lower().endswith(tail) and len(u) > len(tail):
                u = u[: -len(tail)].strip()
                break
        return _UNIT_WORDS.get(u.lower(), _singular(u)) or "unit"

    def to_dict(self) -> dict:
        out = {"value": self.value, "unit": self.unit}
        if self.values:
            out["values"] = list(self.values)
        return out


#: units whose name is their rate: what one unit of work is called
_UNIT_WORDS = {"req": "request", "tps": "transaction", "qps": "query", "rps": "request", "ops": "operation",
               "iops": "I/O"}


def _singular(word: str) -> str:
    """"rows" -> "row", "queries" -> "query"; "req", "MB", "bytes" stay readable."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3 and \
            word[:-1].isalpha() and word[:-1].islower():
        return word[:-1]
    return word




#: a throughput measured once moving by less than this ratio, either way (with profiles
#: that show no change beyond noise), is doubted (verdict.py): one job ran at 34.25 and
#: 27.01 units/s in two runs, 1.27x, on a 2-CPU machine shared with test suites
#: (tests/fixtures/same-work/python-cpu)
SHARED_NOISE = 1.3


def noise_band(rate: Rate) -> tuple[float, float]:
    """(low, high) around a build's throughput that a change must leave to be one: the
    95% interval of the mean of its measurements, or for a rate measured once what one
    run on a shared machine varies by (SHARED_NOISE either way). The service history
    draws it around each build's point."""
    n = len(rate.values)
    if n < 2:
        return rate.value / SHARED_NOISE, rate.value * SHARED_NOISE
    t = _T95[n - 2] if n - 1 <= len(_T95) else 1.96
    half = t * statistics.stdev(rate.values) / math.sqrt(n)
    return max(rate.value - half, 0.0), rate.value + half


def per_unit_band(cpus: float, samples: int, rate: Rate) -> tuple[float, float | None]:
    """(low, high) CPU-seconds per unit of work: CPUs busy (within their sampling noise,
    noise.ratio_of_cpus) over the throughput's noise_band; no upper bound (None) when
    the throughput's band reaches zero."""
    c = Z * DISPERSION / math.sqrt(samples) if samples else 1.0
    low, high = noise_band(rate)
    return cpus * max(1 - c, 0.0) / high, (cpus * (1 + c) / low if low else None)


#: measurements of one rate, at most (a form field is no data set)
MAX_MEASUREMENTS = 100


#: a rate with its spread: "7.8±0.3 n=5", "7.8 +- 0.3 over 5 runs" (mean, sample
#: standard deviation, runs), as load generators and hyperfine print them
_SPREAD = re.compile(r"^\s*([0-9][0-9.eE+-]*)\s*(?:±|\+-|\+/-)\s*([0-9][0-9.eE+-]*)\s*"
                     r"(?:,\s*)?(?:n\s*=\s*|over\s+|x\s*)(\d+)(?:\s*runs?)?\s*$", re.I)


def parse_measurements(text) -> tuple[float, ...]:
    """"7.5, 7.9, 8.1", "7.5 7.9 8.1", 53556 or [7.5, 7.9] -> the measurements; a comma
    always separates measurements (53556, not 53,556). A rate with its spread, "7.8±0.3
    n=5" (mean ± standard deviation over 5 runs), becomes 5 equivalent measurements:
    values with that mean and that standard deviation, which is all a comparison reads
    of them (rates.throughput_change). ValueError with a sentence."""
    if isinstance(text, str) and _SPREAD.match(text):
        return _equivalent(*_SPREAD.match(text).groups())
    if isinstance(text, (int, float)):
        parts = [text]
    elif isinstance(text, (list, tuple)):
        parts = list(text)
    else:
        parts = [p for p in re.split(r"[\s,;]+", str(text).strip().replace("_", "")) if p]
    if len(parts) > MAX_MEASUREMENTS:
        raise ValueError(f"at most {MAX_MEASUREMENTS} measurements of a rate")
    try:
        values = tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a number, or numbers separated by commas") \
            from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError("a rate must be a positive number")
    return values


def _equivalent(mean: str, sd: str, runs: str) -> tuple[float, ...]:
    """n values of mean `mean` and sample standard deviation `sd`: pairs at mean ± d
    (and the mean itself when n is odd), d chosen so the deviation is exact."""
    try:
        m, d, n = float(mean), float(sd), int(runs)
    except ValueError:
        raise ValueError(f"{mean}±{sd} is not a rate with its spread") from None
    if not 2 <= n <= MAX_MEASUREMENTS:
        raise ValueError(f"a spread needs 2 to {MAX_MEASUREMENTS} runs (n={n})")
    if not (math.isfinite(m) and math.isfinite(d) and m > 0 and d >= 0):
        raise ValueError("a rate must be a positive number, its spread not negative")
    pairs = n // 2
    step = d * math.sqrt((n - 1) / (2 * pairs))
    values = [m + step, m - step] * pairs + ([m] if n % 2 else [])
    if min(values) <= 0:
        raise ValueError(f"a spread of {d:g} around {m:g} over {n} runs reaches zero: "
                         f"give the measurements themselves")
    return tuple(values)


def throughput_change(a: Rate, b: Rate) -> dict | None:
    """{"change": b/a - 1, "half": half-width of its 95% interval, "measured": (n_a,
    n_b)} when at least one side was measured several times, else None. With one side
    measured once, the other side's relative spread stands for both (the machine's noise
    is the same for both builds)."""
    na, nb = len(a.values) or 1, len(b.values) or 1
    if na < 2 and nb < 2:
        return None
    ra = statistics.stdev(a.values) / a.value if na >= 2 else None
    rb = statistics.stdev(b.values) / b.value if nb >= 2 else None
    ra = ra if ra is not None else rb
    rb = rb if rb is not None else ra
    va, vb = ra ** 2 / na, rb ** 2 / nb  # relative variances of the means
    var = va + vb
    # Welch-Satterthwaite degrees of freedom (a side measured once lends the other's)
    df = var ** 2 / ((va ** 2 / max(na - 1, 1)) + (vb ** 2 / max(nb - 1, 1))) if var else 1
    t = _T95[min(int(df), len(_T95)) - 1] if df < len(_T95) + 1 else 1.96
    ratio = b.value / a.value
    return {"change": ratio - 1, "half": ratio * t * math.sqrt(var),
            "measured": (na, nb)}
