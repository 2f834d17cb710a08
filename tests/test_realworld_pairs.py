"""Comparisons on captures of real software nobody here wrote (tests/fixtures/realworld:
PostgreSQL, MariaDB, Redis, nginx, SQLite, gzip, ...), each a known-bad configuration and
its fix recorded under load with the throughput the load generator printed.

With the rates (all fixes raised the throughput 1.8x to 159x), the verdict must call the
fix an improvement and the other direction a regression; without them it may be unsure, but it must never call the fix a
regression (the wave-1 engine did so in 10 of 12 pairs, reading more CPU as worse)."""
from functools import lru_cache

import pytest
import yaml

from analysis.compare import Rate, compare_reports
from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES

HERE = FIXTURES / "realworld"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())


def test_the_table_names_real_files():
    assert len(PAIRS) >= 6
    for kind, pair in PAIRS.items():
        for side in ("bad", "fixed"):
            assert (HERE / kind / pair[side]).is_file(), (kind, side)
        assert pair["rate_fixed"] > 0 and pair["rate_bad"] > 0


@lru_cache(maxsize=None)
def _report(kind: str, side: str) -> dict:
    return build_report(load(HERE / kind / PAIRS[kind][side]), label="load")


def _rates(kind):
    p = PAIRS[kind]
    return Rate(p["rate_bad"], p["unit"]), Rate(p["rate_fixed"], p["unit"])


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_with_rates_the_fix_is_an_improvement_and_the_reverse_a_regression(kind):
    bad, fixed = _report(kind, "bad"), _report(kind, "fixed")
    rate_bad, rate_fixed = _rates(kind)
    forward = compare_reports(bad, fixed, rate_bad, rate_fixed)
    assert forward["verdict"] == "improvement", forward["reason"]
    assert forward["reason"].startswith("Throughput +")
    assert forward["regression"] is None
    back = compare_reports(fixed, bad, rate_fixed, rate_bad)
    assert back["verdict"] == "regression", back["reason"]
    assert back["regression"]["rule"] == "regression"


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_without_rates_the_fix_is_never_a_regression(kind):
    forward = compare_reports(_report(kind, "bad"), _report(kind, "fixed"))
    assert forward["verdict"] in ("improvement", "inconclusive"), forward["reason"]
    assert forward["regression"] is None
    if forward["verdict"] == "inconclusive":
        assert "give the throughput of both captures" in forward["reason"]
