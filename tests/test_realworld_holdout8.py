"""The eighth holdout (tests/fixtures/realworld-holdout8: 10 pairs recorded after holdout
7's fixes, by recorders who did not see the rules or run perfweb on their captures:
C++ std::stol/std::stod throwing on junk fields, C opening the log file per line, Go's
reflect.DeepEqual per row, Rust's Vec::contains against 25,000 ids, Ruby's OpenStruct
per record, Node.js using an array as a queue with shift(), Java's SimpleDateFormat
built per call, Python re-sorting a leaderboard per insert and fetching memcached keys
one by one, and bash forking cut and date per line), 3.1x to 2,206x apart.

First measurement, with the engine of commit c4e68e6 (holdout 7's fixes, before anything
for these): the cause at medium or above in 4 of 10 bad captures (the file opened per
line as kernel time in openat and close, SimpleDateFormat.compile by its name, the
array shift as memory copying, bash's forks as process and thread churn), and 2 of 10
fixed captures with a medium or high finding (a buffered log writer's formatting read
as synchronous logging, high; a sorted list's inserts at 24.3% as "memory copying
dominates").

After, written with these pairs seen: sync-io judged by the writes' own share (medium
from 15%), memory copying medium from 30%, Go's reflection and C++ exceptions (libgcc_s's
unwinder) as runtime subsystems, and a subsystem's caller is the nearest application
frame in no subsystem: 6 of 10 named, 0 of 10 fixed alarmed. Not named: Rust's contains
(inlined into main: only perf annotate shows the loop), Ruby's OpenStruct and Python's
sort (stripped interpreters without frame pointers: the -g capture holds addresses),
and memcached fetched per key (the waits are off-CPU; the plain -g capture shows the
calls, not their count per request).
"""
import pytest
import yaml

from conftest import FIXTURES
from realworld_pairs import (assert_names_the_cause, assert_pairs_on_disk,
                             assert_judged_without_rates, assert_rates_decide, problems,
                             reports)

HERE = FIXTURES / "realworld-holdout8"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())

EXPECTED = {
    "bash-fork-per-line": ("process-churn", "medium", "Processes or threads made and ended",
                           ["exit_mmap", "Keep a pool"]),
    "c-fopen-per-line": ("kernel-heavy", "high", "Most of the CPU time is spent in the kernel",
                         ["openat 16.9%", "close 4.6%", "entered under main"]),
    "cpp-exceptions-control-flow": (
        "runtime-overhead", "high", "The C++ exception runtime (libstdc++, libgcc_s) spends "
        "69.7% on throwing and catching C++ exceptions",
        ["_Unwind_Find_FDE", "std::from_chars"]),
    "go-reflect-deepequal-hot-path": (
        "runtime-overhead", "medium", "The Go runtime spends 43.2% on reflection",
        ["reflect.deepValueEqual", "under main.main.func1", "typed code"]),
    "java-simpledateformat-per-call": (
        "runtime-overhead", "medium", "The JIT-compiled code spends 14.0% on compiling at "
        "run time", ["java.text.SimpleDateFormat.compile", "AccessLogNormalizer.formatBad"]),
    "node-array-shift-queue": ("memory-copy", "high", "Memory copying dominates",
                               ["92.4%", "crawl-depth.js:42:15"]),
    "python-memcache-get-per-key": None,
    "python-sorted-per-insert": None,
    "ruby-openstruct-per-record": None,
    "rust-vec-contains-linear-search": None,
}


def test_every_pair_is_expected_and_on_disk():
    assert_pairs_on_disk(HERE, PAIRS, EXPECTED)


_report = reports(HERE, PAIRS)


@pytest.mark.parametrize("kind", sorted(k for k, v in EXPECTED.items() if v))
def test_the_bad_capture_names_the_cause(kind):
    assert_names_the_cause(_report(kind, "bad"), EXPECTED[kind])


@pytest.mark.parametrize("kind", sorted(k for k, v in EXPECTED.items() if not v))
def test_an_unnamed_cause_gets_no_problem_finding_instead(kind):
    assert problems(_report(kind, "bad")) == []


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_fixed_capture_has_no_problem_finding(kind):
    assert problems(_report(kind, "fixed")) == [], PAIRS[kind]["fixed_expect"]


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_comparison_follows_the_throughput(kind):
    bad, fixed = _report(kind, "bad"), _report(kind, "fixed")
    assert_rates_decide(PAIRS[kind], bad, fixed)
    assert_judged_without_rates(bad, fixed, EXPECTED[kind], kind)
