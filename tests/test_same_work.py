"""Two captures of one unchanged program doing the same job, one after the other
(tests/fixtures/same-work: gzip, Redis, CPython, Apache's event MPM and a C sort, recorded
for issue 38 on a 2-CPU machine shared with test suites): the comparison says `no
significant change` both ways, lists no mover, and, with each rate measured once, does
not call the machine's noise a change of the program."""
import pytest
import yaml

from analysis.compare import Rate, compare_reports, noise
from analysis.compare.verdict import SWITCH_RECORDING
from analysis.compare.rates import SHARED_NOISE
from analysis.compare.verdict import SIGNIFICANT
from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES

HERE = FIXTURES / "same-work"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())
#: (samples first, samples second), as perf report counts them (each README)
SAMPLES = {"gzip-compress": (3981, 4258), "redis-setget": (2646, 2549),
           "python-cpu": (2329, 1685), "apache-static": (2492, 2697),
           "c-sort-hash": (2877, 2892)}

_reports: dict = {}


def _report(kind: str, side: str) -> dict:
    if (kind, side) not in _reports:
        _reports[kind, side] = build_report(load(HERE / kind / PAIRS[kind][side]),
                                            label="load")
    return _reports[kind, side]


def _rate(kind: str, side: str) -> Rate:
    return Rate(PAIRS[kind][f"rate_{side}"], PAIRS[kind]["unit"])


def test_five_kinds_are_read_whole():
    assert sorted(PAIRS) == sorted(SAMPLES)
    for kind, counts in SAMPLES.items():
        assert (_report(kind, "first")["samples"], _report(kind, "second")["samples"]) \
            == counts


@pytest.mark.parametrize("kind", sorted(PAIRS))
@pytest.mark.parametrize("order", [("first", "second"), ("second", "first")])
def test_the_same_work_twice_is_no_significant_change(kind, order):
    a, b = (_report(kind, side) for side in order)
    c = compare_reports(a, b)
    assert c["verdict"] == "no significant change", c["reason"]
    assert c["reason"].startswith("No function, library or kind of time moved beyond "
                                  "sampling noise at 99%")
    assert c["movers"]["functions"] == [] and c["movers"]["dsos"] == []
    assert c["regression"] is None
    top = c["movers"]["largest"]
    assert abs(top["self_change"]) <= top["self_noise"]


@pytest.mark.parametrize("kind", sorted(PAIRS))
@pytest.mark.parametrize("order", [("first", "second"), ("second", "first")])
def test_a_rate_measured_once_is_not_believed_over_the_profiles(kind, order):
    """Rates measured once each moved by up to 1.27x (CPython's job got less of the
    shared machine): a verdict from them alone is refused while the profiles show no
    change; rates within SIGNIFICANT say no change as before."""
    (a, ra), (b, rb) = ((_report(kind, s), _rate(kind, s)) for s in order)
    c = compare_reports(a, b, ra, rb)
    more = rb.value / ra.value - 1
    per_unit = c["cpu_per_unit"]["change"]
    if abs(more) < SIGNIFICANT and abs(per_unit) < SIGNIFICANT:
        assert c["verdict"] == "no significant change", c["reason"]
    else:
        assert max(1 + more, 1 / (1 + more)) < SHARED_NOISE
        assert c["verdict"] == "inconclusive", c["reason"]
        assert "each rate measured once, but nothing in the profiles moved beyond " \
               "sampling noise" in c["reason"]


def test_cpus_busy_that_differ_with_the_same_profile_are_the_machines():
    c = compare_reports(_report("python-cpu", "first"), _report("python-cpu", "second"))
    assert (c["cpus_before"], c["cpus_after"]) == (0.931, 0.675)
    assert c["verdict"] == "no significant change"
    assert "CPUs busy fell from 0.93 to 0.68: with the same profile, less load was " \
           "offered, the machine was busier, or the threads block" in c["reason"]
    assert SWITCH_RECORDING in c["reason"]  # how to tell which


def test_addresses_in_no_mapping_are_no_movers():
    """CPython's frames in no known mapping land at other addresses in each run (ASLR):
    0x7f178d6d7080 in one, 0x7f5f8369b040 in the other; they were listed as 100% -> 0%
    movers."""
    a, b = _report("python-cpu", "first"), _report("python-cpu", "second")
    assert any(f["name"].startswith("0x") and f["dso"] == "[unknown]"
               for f in a["functions"])
    c = compare_reports(a, b)
    assert not [m for m in c["movers"]["functions"] if m["name"].startswith("0x")]
    assert not (c["movers"]["largest"]["name"].startswith("0x"))


def test_intervals():
    """Agresti-Caffo: 50 of 1,000 samples against 80 of 1,000 is +3.0 points, and its
    99% half-width (widened by DISPERSION) is Z * 2 * sqrt(p(1-p)/(n+2) twice)."""
    change, half = noise.share_change(50, 1000, 80, 1000)
    qa, qb = 51 / 1002, 81 / 1002
    expected = 100 * noise.Z * noise.DISPERSION * ((qa * (1 - qa) + qb * (1 - qb)) / 1002) ** .5
    assert round(change, 6) == 3.0 and round(half, 6) == round(expected, 6)
    assert not noise.beyond(change, half)  # 5.7 points of noise at 99%, widened
    assert noise.beyond(*noise.share_change(0, 1000, 60, 1000))
    # nothing in one capture is not certainty: the interval is not zero wide
    assert noise.share_change(0, 100, 0, 100)[1] > 0


def test_rates_measured_several_times_are_judged_by_their_spread():
    """The same command's rate measured three times each: a 3% move within a ±25% spread
    is no change; the same means measured tightly are a change beyond it."""
    a, b = _report("gzip-compress", "first"), _report("gzip-compress", "second")
    c = compare_reports(a, b, Rate.of([7.5, 9.2, 8.1], "MB/s"),
                        Rate.of([7.9, 9.2, 8.4], "MB/s"))
    assert c["verdict"] == "no significant change", c["reason"]
    assert c["reason"].endswith("The throughput's change is +3% ± 25% at 95% (3 and 3 "
                                "measurements).")
    assert c["rates"]["before"] == {"value": pytest.approx(8.2667, abs=1e-4),
                                    "unit": "MB/s", "values": [7.5, 9.2, 8.1]}
    c = compare_reports(a, b, Rate.of([7.5, 7.9, 8.1], "MB/s"),
                        Rate.of([9.0, 9.2, 9.4], "MB/s"))
    assert c["verdict"] == "improvement"
    assert c["reason"].startswith("Throughput +17% (7.83 -> 9.2 MB/s)")
    assert c["reason"].endswith("+17% ± 10% at 95% (3 and 3 measurements).")
    # one side measured once: the other side's spread stands for both
    c = compare_reports(a, b, Rate.of([7.5, 7.9, 8.1], "MB/s"), Rate(9.2, "MB/s"))
    assert c["verdict"] == "no significant change"
    assert c["throughput"]["measured"] == (3, 1)


def test_a_rate_given_with_its_spread_is_its_measurements():
    """"7.83±0.31 n=3" compares as the three runs it summarises: a comparison reads only
    the mean and the standard deviation of a rate's measurements."""
    import statistics

    from analysis.compare.rates import parse_measurements
    a, b = _report("gzip-compress", "first"), _report("gzip-compress", "second")
    runs = ([7.5, 7.9, 8.1], [9.0, 9.2, 9.4])
    spreads = [parse_measurements(f"{statistics.fmean(v)}±{statistics.stdev(v)} n=3")
               for v in runs]
    assert [round(statistics.stdev(v), 9) for v in spreads] == [0.305505046, 0.2]
    by_runs = compare_reports(a, b, *(Rate.of(v, "MB/s") for v in runs))
    by_spread = compare_reports(a, b, *(Rate.of(v, "MB/s") for v in spreads))
    assert by_spread["verdict"] == by_runs["verdict"] == "improvement"
    assert by_spread["reason"] == by_runs["reason"]
    # four runs: two pairs at ±10 sqrt(3/4), whose sample deviation is 10
    assert parse_measurements("100 +- 10 over 4 runs") == pytest.approx(
        (100 + 10 * 0.75 ** 0.5, 100 - 10 * 0.75 ** 0.5) * 2)
    for bad in ("7.8±0.3 n=1", "7.8±9 n=200", "1±5 n=3"):
        with pytest.raises(ValueError):
            parse_measurements(bad)
