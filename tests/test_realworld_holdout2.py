"""The second holdout (tests/fixtures/realworld-holdout2: Redis serving KEYS per request,
PostgreSQL looking rows up by a column without an index, nginx doing a full TLS
handshake per request), recorded by someone who had not seen the rules, after the first
holdout's fixes.

First measurement, before any change for them: the cause at medium or above in 0 of 3
(Redis and PostgreSQL: only "missing symbols", their own functions dominating was no
rule's business; nginx: "81.5% in libcrypto" as a low note). The general fixes: a table
of servers' costly work (Redis KEYS, PostgreSQL sequential scans with ExecScan's work
attributed by the access method feeding it, MariaDB full scans) and its rule; a stripped
library dominating another program is at least medium whichever of its functions runs
(a program that is the library, the zstd command, stays low)."""
from functools import lru_cache

import pytest
import yaml

from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES
from realworld_pairs import (assert_follows_throughput, assert_judged_without_rates,
                             assert_pairs_on_disk)

HERE = FIXTURES / "realworld-holdout2"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())

#: kind: (rule, severity, exact title, words of the summary or fix)
EXPECTED = {
    "redis-keys": ("costly-work", "medium", "Redis spends 42.5% on the KEYS command",
                   ["keysCommand", "SMEMBERS", "SCAN"]),
    "postgres-missing-index": ("costly-work", "high",
                               "PostgreSQL spends 92.1% on sequential scans",
                               ["heap_getnextslot", "under ExecScan", "CREATE INDEX"]),
    "nginx-tls-keepalive": ("hot-code", "medium",
                            "81.5% in libcrypto.so (OpenSSL libcrypto cryptography) — "
                            "symbols missing", ["TLS handshakes", "keep-alive"]),
}


def test_every_pair_is_expected_and_on_disk():
    assert_pairs_on_disk(HERE, PAIRS, EXPECTED)


@lru_cache(maxsize=None)
def _report(kind: str, side: str) -> dict:
    return build_report(load(HERE / kind / PAIRS[kind][side]), label="load")


def _findings(kind: str, side: str) -> dict:
    return {f["rule"]: f for f in _report(kind, side)["findings"]}


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_bad_capture_names_the_cause(kind):
    rule, severity, title, words = EXPECTED[kind]
    f = _findings(kind, "bad")[rule]
    assert (f["severity"], f["title"]) == (severity, title)
    text = f["summary"] + " " + f["fix"]
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_fixed_capture_does_not_carry_it(kind):
    rule = EXPECTED[kind][0]
    assert rule not in _findings(kind, "fixed")


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_comparison_follows_the_throughput(kind):
    bad, fixed = _report(kind, "bad"), _report(kind, "fixed")
    assert_follows_throughput(PAIRS[kind], bad, fixed)
    assert_judged_without_rates(bad, fixed, EXPECTED[kind], kind)
