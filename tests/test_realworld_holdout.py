"""The rules on real software they were not written from (tests/fixtures/realworld-
holdout: a Node.js token endpoint deriving a PBKDF2 key per request, PostgreSQL with
synchronous_commit on, zstd -19), recorded after the rules of tests/fixtures/realworld.

First measurement, before any rule had seen these files: the cause was named at medium
or above in 0 of 3 bad captures. The Node.js capture got "Allocator churn" (the malloc
OpenSSL does inside PBKDF2) because OpenSSL linked into the node executable was taken
for application code; PostgreSQL's fdatasync was only a low note (9.1% of samples:
each sampled fdatasync stands for a much longer wait off-CPU); zstd got only "missing
symbols". The general fixes: libraries are known by their function names when linked
into another program, libc work is blamed on the library that called it, a library's
costly operations are named (password hashing), JIT-compiled code is the program's own,
commit-io under load is at least medium (each sampled fdatasync stands for a far longer
wait; whether the threads are mostly off-CPU decides high). zstd stays low: a
stripped compressor's capture cannot tell level 19 from level 3, and says so; the
comparison with rates decides that pair."""
from functools import lru_cache

import pytest
import yaml

from analysis.compare import Rate
from analysis.importers import load
from analysis.report import build_report
from conftest import FIXTURES
from realworld_pairs import assert_follows_throughput, assert_pairs_on_disk

HERE = FIXTURES / "realworld-holdout"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())

#: kind: (rule, severities allowed for the bad capture, words of title and summary)
EXPECTED = {
    "node-pbkdf2": ("hot-code", ("high",),
                    ["OpenSSL libcrypto", "password hashing", "inside node",
                     "JS:^derive /tmp/token-api/server.js:41:16"]),
    # low since issue 34: its 8 backends used 1.24 CPUs, 62% of the host's 2, which
    # its perf.data says; the text, which does not, was read as 8 CPUs (15.5%: "mostly
    # off-CPU", medium), and now proves 2 and says what perf.data says
    "postgres-sync-commit": ("commit-io", ("medium",),
                             ["fdatasync", "PostgreSQL", "XLogFlush", "off-CPU"]),
    "zstd-level": ("hot-code", ("low",), ["zstd", "compression", "symbols are missing",
                                          "upload its debug file"]),
}


def test_every_pair_is_expected_and_on_disk():
    assert_pairs_on_disk(HERE, PAIRS, EXPECTED)


@lru_cache(maxsize=None)
def _report(kind: str, side: str) -> dict:
    return build_report(load(HERE / kind / PAIRS[kind][side]), label="load")


def _findings(kind, side):
    return {f["rule"]: f for f in _report(kind, side)["findings"]}


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_bad_capture_names_the_cause(kind):
    rule, severities, words = EXPECTED[kind]
    f = _findings(kind, "bad")[rule]
    assert f["severity"] in severities, f
    text = f["title"] + " " + f["summary"]
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_fixed_capture_does_not_carry_it_above_the_bad_one(kind):
    rule, severities, _ = EXPECTED[kind]
    f = _findings(kind, "fixed").get(rule)
    rank = {"info": 0, "low": 1, "medium": 2, "high": 3}
    assert f is None or rank[f["severity"]] < rank[severities[0]] or \
        f["severity"] == "low", f


def test_pbkdf2_malloc_is_not_called_allocator_churn():
    """The malloc and free under EVP_MD_CTX_copy_ex are OpenSSL's work, named by hot-code
    with a fix for password hashing; the application has no buffer to reuse there."""
    f = _findings("node-pbkdf2", "bad")
    assert "allocator-churn" not in f or f["allocator-churn"]["severity"] == "low"
    assert "session token" in f["hot-code"]["fix"]


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_comparison_follows_the_throughput(kind):
    assert_follows_throughput(PAIRS[kind], _report(kind, "bad"), _report(kind, "fixed"))


def test_with_its_rate_each_finding_says_its_cpu_per_request():
    """25.02 requests/s at 1.006 CPUs: 40.2 ms of CPU per request in all, of which the
    password hashing takes its share."""
    report = build_report(load(HERE / "node-pbkdf2" / PAIRS["node-pbkdf2"]["bad"]),
                          label="load", rate=Rate(25.02, "req/s"))
    by = {f["rule"]: f for f in report["findings"]}
    assert by["cpu-use"]["summary"].endswith("Per request: 40.2 ms of CPU.")
    hot = by["hot-code"]
    per = hot["evidence"]["cpu_per_unit"]
    assert per["unit"] == "request"
    assert per["cpu_seconds"] == pytest.approx(1.006 * 0.797 / 25.02, rel=0.01)
    assert hot["summary"].endswith(f"Per request: {per['cpu_seconds'] * 1e3:.3g} ms of CPU.")
