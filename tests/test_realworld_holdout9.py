"""The ninth holdout (tests/fixtures/realworld-holdout9: 10 pairs recorded after holdout
8's fixes, by recorders who did not see the rules or run perfweb on their captures:
numpy's np.append per row, Lua's table.insert at the front, Java's ArrayList.remove(0)
as a queue, C writing through an unbuffered stdout, C++ s = s + piece, Node.js
deep-cloning a catalogue with JSON per request, Python catching KeyError for missing
keys, Go's one mutex locked per field update, Ruby's Hash#merge in a loop, and Perl
passing a large array by value), 2.5x to 45x apart.

First measurement, with the engine of commit 493053b (holdout 8's fixes, before anything
for these): the cause at medium or above in 5 of 10 bad captures (numpy's, C++'s and
Ruby's copies as memory copying, the unbuffered writes as many small system calls, the
JSON clone as V8's JSON parsing and serialization), and 1 of 10 fixed captures with a
medium finding (buffered stdout: stdio's copy into its buffer counted as writes).

After, written with these pairs seen: sync-io's severity from the write calls alone,
exceptions named from 10% (Subsystem.steady: rare by design), Go's sync.Mutex in the lock
tables, and tables for the JVM's generated array-copy stubs, Lua's table library moving
elements and Perl's copies on assignment: 10 of 10 named, 0 of 10 fixed alarmed.
"""
import pytest
import yaml

from conftest import FIXTURES
from realworld_pairs import (assert_names_the_cause, assert_pairs_on_disk,
                             assert_judged_without_rates, assert_rates_decide, problems,
                             reports)

HERE = FIXTURES / "realworld-holdout9"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())

EXPECTED = {
    "c-stdout-unbuffered": ("kernel-heavy", "high", "System-call overhead: many small calls",
                            ["write 66.9%", "13.7% is the cost of making calls"]),
    "cpp-string-plus-concat": ("memory-copy", "medium", "Memory copying dominates",
                               ["36.7%", "under format_line"]),
    "go-mutex-global-counter": ("lock-contention", "high", "Lock contention",
                                ["sync.(*Mutex).lockSlow", "main.workerMutex"]),
    "java-arraylist-remove0-queue": (
        "runtime-overhead", "high", "The JVM (HotSpot) spends 94.8% on generated stubs",
        ["StubRoutines (2)", "ShipmentDispatcher.main", "ArrayDeque"]),
    "lua-table-insert-front": (
        "runtime-overhead", "high", "Lua spends 78.6% on the table library moving elements",
        ["lua_seti", "t[#t + 1] = v"]),
    "node-json-deepclone-per-request": (
        "runtime-overhead", "high", "V8 (Node.js) spends 89.9% on JSON parsing and "
        "serialization", ["JsonStringifier::SerializeString", "BuildJsonObject"]),
    "numpy-append-in-loop": ("memory-copy", "high", "Memory copying dominates",
                             ["55.4%", "__memmove_evex_unaligned_erms"]),
    "perl-array-pass-by-value": (
        "runtime-overhead", "medium", "Perl spends 45.9% on copying values",
        ["Perl_pp_aassign", "by reference"]),
    "python-exceptions-control-flow": (
        "runtime-overhead", "medium", "CPython spends 35.3% on exceptions and tracebacks",
        ["PyTraceBack_Here", "Test for the expected case"]),
    "ruby-hash-merge-in-loop": ("memory-copy", "medium", "Memory copying dominates",
                                ["45.6%"]),
}


def test_every_pair_is_expected_and_on_disk():
    assert_pairs_on_disk(HERE, PAIRS, EXPECTED)


_report = reports(HERE, PAIRS)


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_bad_capture_names_the_cause(kind):
    assert_names_the_cause(_report(kind, "bad"), EXPECTED[kind])


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_fixed_capture_has_no_problem_finding(kind):
    assert problems(_report(kind, "fixed")) == [], PAIRS[kind]["fixed_expect"]


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_comparison_follows_the_throughput(kind):
    bad, fixed = _report(kind, "bad"), _report(kind, "fixed")
    assert_rates_decide(PAIRS[kind], bad, fixed)
    assert_judged_without_rates(bad, fixed, EXPECTED[kind], kind)
