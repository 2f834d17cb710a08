"""The tenth holdout (tests/fixtures/realworld-holdout10: 5 pairs recorded after holdout
9's fixes, by recorders who did not see the rules or run perfweb on their captures: Go
encoding a static catalogue with json.Marshal per request, Java growing a String with +=,
Python growing bytes with +=, Node.js building new RegExp objects per field, and Ruby
rescuing a conversion error per junk field), 3.5x to 104x apart.

First measurement, with the engine of commit a10bad9 (holdout 9's fixes, before anything
for these): the cause at medium or above in 1 of 5 bad captures (Python's bytes += as
memory copying; Node.js's regexes were said at high as "regular expressions" with the
fix for backtracking, and Java's as garbage collection under the JVM's own allocation
stub), and 1 of 5 fixed captures with a medium finding (the validation job's own regex
matching, 51.6%).

After, written with these pairs seen: regex matching is a fault only when it holds most
of the CPU; V8's regex construction and compilation (new RegExp) as a steady subsystem;
HotSpot's code blobs (_new_array_Java, StubRoutines) are the runtime's, not the
program's, so the allocation is charged under the method that asked; Go's encoding/json
as a subsystem (said at low here: 26.8%, its work spread over the program's own frames):
3 of 5 named, 0 of 5 alarmed. Not named: Go's json.Marshal per request, and Ruby's
exceptions (a stripped libruby without frame pointers shows the allocator, not raise).
"""
import pytest
import yaml

from conftest import FIXTURES
from realworld_pairs import (assert_names_the_cause, assert_pairs_on_disk,
                             assert_judged_without_rates, assert_rates_decide, problems,
                             reports)

HERE = FIXTURES / "realworld-holdout10"
PAIRS = yaml.safe_load((HERE / "pairs.yaml").read_text())

EXPECTED = {
    "go-json-marshal-static-per-request": None,
    "java-string-concat-in-loop": (
        "runtime-overhead", "high", "The JVM (HotSpot) spends 73.1% on garbage collection",
        ["MemAllocator::allocate", "OrdersCsvExport.renderBad"]),
    "node-regexp-constructed-per-call": (
        "runtime-overhead", "high", "V8 (Node.js) spends 57.4% on constructing and compiling "
        "regular expressions", ["Builtins_RegExpConstructor", "module level"]),
    "python-bytes-concat-loop": ("memory-copy", "high", "Memory copying dominates",
                                 ["79.1%"]),
    "ruby-exceptions-control-flow": None,
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


def test_go_json_is_said_where_it_is_at_low():
    found = [(f["severity"], f["title"]) for f in
             _report("go-json-marshal-static-per-request", "bad")["findings"]
             if f["rule"] == "runtime-overhead"]
    assert ("low", "The Go runtime spends 26.8% on JSON encoding and decoding "
                   "(encoding/json)") in found


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_fixed_capture_has_no_problem_finding(kind):
    assert problems(_report(kind, "fixed")) == [], PAIRS[kind]["fixed_expect"]


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_the_comparison_follows_the_throughput(kind):
    bad, fixed = _report(kind, "bad"), _report(kind, "fixed")
    assert_rates_decide(PAIRS[kind], bad, fixed)
    assert_judged_without_rates(bad, fixed, EXPECTED[kind], kind)
