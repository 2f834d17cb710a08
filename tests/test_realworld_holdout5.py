"""The fifth holdout (tests/fixtures/realworld-holdout5: 6 pairs recorded after holdout 4's
fixes, by people who had not seen the rules: a C++ service deployed as its debug build,
SQLite statements prepared per query, SQLite lookups without an index, a PL/pgSQL loop
updating row by row, Java's String.split/matches compiling a regex per call, and Python
deep-copying a catalogue per request), 2.3x to 56x apart in throughput.

First measurement, with the engine of commit 6af93c9 (holdout 4's fixes, before anything
for these): the cause at medium or above in 0 of 6 bad captures, and one fixed capture
of 6 with a medium finding (SQLite's per-statement read transaction: newfstatat 19.6%,
said as "most of the CPU time is spent in the kernel"). The general passes name where
the time goes (libsqlite3 60%, "the SQL engine", low) but not why: the holdout shows
that a single capture of a database engine's internals, without a table of what its
functions mean, does not say "a statement compiled per query" or "a scan".

After, written with these pairs seen: an unoptimized build read from the frames of
helpers an optimizing compiler always inlines (build_rules.py), the JVM's
Pattern.compile in runtimes.py, and PostgreSQL's executor started and ended per
statement (software.COSTLY_WORK; 33% here, under 6% in every other PostgreSQL capture):
3 of 6 named. With holdouts 6 and 7's steady shares, SQLite's statement compilation
(its parser, planner and code generator, named from 5%): 4 of 6. The false alarm
stays, recorded here and in tests/test_false_alarms.py.
"""
import pytest
import yaml

from conftest import FIXTURES
from realworld_pairs import (assert_names_the_cause, assert_pairs_on_disk,
                             assert_judged_without_rates, assert_rates_decide, problems,
                             reports)

HERE = FIXTURES / "realworld-holdout5"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())

EXPECTED = {
    "cpp-debug-build-in-production": ("unoptimized-build", "medium",
                                      "An unoptimized (debug) build is running",
                                      ["29.7%", "_M_valptr", "RelWithDebInfo"]),
    "java-regex-compile-per-call": ("runtime-overhead", "medium", "The JVM (HotSpot) spends "
                                    "38.7% on compiling regular expressions",
                                    ["java.util.regex.Pattern.compile", "static final"]),
    "postgres-plpgsql-row-by-row": ("costly-work", "medium", "PostgreSQL spends 33.3% on "
                                    "starting and ending a statement's executor",
                                    ["standard_ExecutorStart", "set-based"]),
    "python-deepcopy-per-request": None,
    "sqlite-missing-index-python": None,
    "sqlite-prepare-per-query": ("runtime-overhead", "medium", "SQLite spends 13.2% on "
                                 "compiling SQL statements",
                                 ["sqlite3Parser", "sqlite3RunParser", "sqlite3_reset"]),
}
#: what the unnamed bad captures get at medium or above instead (the kernel copying the
#: pages SQLite reads with pread, a symptom of the scan, is the reads' own work, which
#: kernel-heavy says at low: no longer "memory copying dominates")
INSTEAD = {"python-deepcopy-per-request": [],
           "sqlite-missing-index-python": []}
#: fixed captures with a medium or high finding the expert does not name
FALSE_ALARMS = {"sqlite-prepare-per-query": [("kernel-heavy", "medium")]}


def test_every_pair_is_expected_and_on_disk():
    assert_pairs_on_disk(HERE, PAIRS, EXPECTED)


_report = reports(HERE, PAIRS)


def _problems(kind: str, side: str) -> list[dict]:
    return problems(_report(kind, side))


@pytest.mark.parametrize("kind", sorted(k for k, v in EXPECTED.items() if v))
def test_the_bad_capture_names_the_cause(kind):
    assert_names_the_cause(_report(kind, "bad"), EXPECTED[kind])


@pytest.mark.parametrize("kind", sorted(INSTEAD))
def test_what_the_unnamed_causes_get(kind):
    assert [(f["rule"], f["severity"]) for f in _problems(kind, "bad")] == INSTEAD[kind]


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_fixed_capture_has_no_problem_finding_but_the_known_one(kind):
    assert [(f["rule"], f["severity"]) for f in _problems(kind, "fixed")] == \
        FALSE_ALARMS.get(kind, []), PAIRS[kind]["fixed_expect"]


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_with_the_throughputs_the_fix_is_an_improvement(kind):
    bad, fixed = _report(kind, "bad"), _report(kind, "fixed")
    assert_rates_decide(PAIRS[kind], bad, fixed)
    assert_judged_without_rates(bad, fixed, EXPECTED[kind], kind)
