"""Repeated captures of a build (issue 38): tests/fixtures/inlining/runs holds three runs of
build 1.0 and three of 1.2 (1.0 stirring each hash 4,500 times instead of 3,000: more work
per request), recorded one after the other, each with the program's own requests/s over
the recorded window. A comparison uses all of them: a side's shares are the mean of its
captures', its noise the wider of the pooled samples' and the captures' own spread, its
CPU per unit of work from the mean CPUs busy over the mean of every rate measured."""
import re

import pytest

from analysis.compare import Rate, compare_reports, noise
from analysis.importers import load
from analysis.report import build_report
from analysis.symbols import symbolize
from conftest import FIXTURES

HERE = FIXTURES / "inlining"
RUNS = HERE / "runs"


def _rate(build: str, n: int) -> float:
    text = (RUNS / f"{build}-{n}.load.txt").read_text()
    return float(re.search(r"requests/s: ([\d.]+)", text).group(1))


def _perf_self(build: str, n: int, name: str) -> float:
    """The function's self share as perf report printed it on the recording host."""
    text = (RUNS / f"{build}-{n}.truth-report.txt").read_text()
    return float(re.search(rf"([\d.]+)%\s+\[\.\] {name}\s", text).group(1))


@pytest.fixture(scope="module")
def runs():
    out = {}
    for build in ("1.0", "1.2"):
        for n in (1, 2, 3):
            profile = load(RUNS / f"{build}-{n}.perf.data")
            symbolize(profile, [str(HERE / f"work-{build}")])
            out[build, n] = build_report(profile, label="load")
    return out


def test_each_run_is_what_perf_counted(runs):
    for (build, n), report in runs.items():
        for name in ("fnv1a", "mix"):
            row = next(f for f in report["functions"] if f["name"] == name)
            assert round(100 * row["self"] / report["samples"], 2) == \
                _perf_self(build, n, name), (build, n, name)


def test_three_runs_of_each_build_judge_a_regression(runs):
    rates = [Rate.of([_rate(b, n) for n in (1, 2, 3)], "req/s") for b in ("1.0", "1.2")]
    c = compare_reports(runs["1.0", 1], runs["1.2", 1], *rates,
                        repeats=([runs["1.0", 2], runs["1.0", 3]],
                                 [runs["1.2", 2], runs["1.2", 3]]))
    assert c["verdict"] == "regression"
    assert c["reason"] == (
        "Throughput -12% (79,417 -> 70,218 req/s) at +13% CPU per request (12.6 µs -> "
        "14.2 µs). The throughput's change is -12% ± 1% at 95% (3 and 3 measurements).")
    assert c["movers"]["captures"] == [3, 3]
    mix = next(m for m in c["movers"]["functions"] if m["name"] == "mix")
    # the mean of perf's own figures for the three runs of each build
    for side, build in (("before", "1.0"), ("after", "1.2")):
        perf = sum(_perf_self(build, n, "mix") for n in (1, 2, 3)) / 3
        assert mix[f"self_{side}"] == pytest.approx(perf, abs=0.006)
    # 7,474 and 7,472 samples pooled: ±3.9 points, wider than the runs' own spread
    # (Welch's t at 99% on 26.38/26.42/27.24 and 34.94/36.13/35.97: ±2.72)
    assert (mix["self_change"], mix["self_noise"]) == (9.0, 3.89)
    assert noise.spread_half([26.38, 26.42, 27.24], [34.94, 36.13, 35.97]) == \
        pytest.approx(2.7245, abs=1e-4)
    # one capture each: the same move, within ±6.7 points
    single = compare_reports(runs["1.0", 1], runs["1.2", 1])
    one = next(m for m in single["movers"]["functions"] if m["name"] == "mix")
    assert (one["self_change"], one["self_noise"]) == (8.56, 6.7)
    assert single["movers"]["captures"] == [1, 1]
    # without rates the grown function is what the comparison points at
    assert single["verdict"] == "inconclusive"
    assert "mix went from 26.4% to 34.9% of the samples (±6.7 points)" in single["reason"]


def test_runs_of_one_build_against_another_run_of_it_are_no_change(runs):
    c = compare_reports(runs["1.0", 1], runs["1.0", 3],
                        Rate.of([_rate("1.0", 1), _rate("1.0", 2)], "req/s"),
                        Rate(_rate("1.0", 3), "req/s"), repeats=([runs["1.0", 2]], []))
    assert c["verdict"] == "no significant change", c["reason"]
    assert c["movers"]["functions"] == [] and c["movers"]["captures"] == [2, 1]
    assert "± 4% at 95% (2 and 1 measurements)" in c["reason"]


def test_the_spread_of_repeated_captures_widens_an_interval():
    """Shares that vary between runs more than their samples say: the captures' spread
    is the interval (a side captured once lends the other's)."""
    assert noise.spread_half([20.0, 30.0], [40.0]) == pytest.approx(
        63.657 * (50 / 2 + 50) ** 0.5)
    assert noise.spread_half([20.0], [40.0]) is None


def test_the_history_noise_band_of_a_build():
    """Build 1.0's three runs (79,576.63, 79,274.09, 79,400.99 req/s): mean 79,417.24,
    standard deviation 151.96, so 95% of its mean within t(2) 4.303 x 151.96 / sqrt(3)
    = ±377.5; build 1.2's mean (70,217.85) is far outside it. A rate measured once has
    the shared machine's x1.3 either way."""
    from analysis.compare.rates import SHARED_NOISE, noise_band, per_unit_band
    a = Rate.of([_rate("1.0", n) for n in (1, 2, 3)], "req/s")
    low, high = noise_band(a)
    assert (round(low, 1), round(high, 1)) == (79039.8, 79794.7)
    b = Rate.of([_rate("1.2", n) for n in (1, 2, 3)], "req/s")
    assert b.value < low
    assert noise_band(Rate(400, "jobs/s")) == (400 / SHARED_NOISE, 400 * SHARED_NOISE)
    # CPU per request: 0.999 CPUs over 2,494 samples (±10.3%) over that band
    lo, hi = per_unit_band(0.999, 2494, a)
    assert (round(lo * 1e6, 3), round(hi * 1e6, 3)) == (11.228, 13.943)
