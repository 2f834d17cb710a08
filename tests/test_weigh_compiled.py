"""The compiled per-stack sums (analysis/aggregate/_weigh.c) give what the Python loops
they replace give, dict order included (rows with equal counts keep it): on real captures
of every input format, with inline frames (DWARF debug info) and without, and on stacks
written to make set order and recursion matter."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.aggregate import _weigh
from analysis.aggregate.functions import StackFunctions, stack_functions
from analysis.aggregate.selection import stack_weights
from analysis.importers import load
from analysis.profile import Profile

FIX = Path(__file__).parent / "fixtures"
CAPTURES = [
    "realworld/cpython-gil-server/fixed.perf.data",  # kernel and interpreter stacks
    "realworld-holdout/postgres-sync-commit/bad-sync-on.perf.data",
    "perfdata/two-events.perf.data",
    "dwarf/cpython/dwarf8k.perf.data.script.txt.gz",  # perf script text, DWARF-unwound
]


def _python_function_sums(profile: Profile, weights: dict[int, int]):
    """functions.top_functions' loop as it was in Python."""
    self_w: dict[int, int] = {}
    total_w: dict[int, int] = {}
    locs = profile.locations
    for sid, w in weights.items():
        stack = profile.stacks[sid]
        funcs = stack_functions(profile, stack)
        if not funcs:
            continue
        owner = locs[stack[0]].functions[-1]
        self_w[owner] = self_w.get(owner, 0) + w
        for f in set(funcs):
            total_w[f] = total_w.get(f, 0) + w
    return self_w, total_w


def _python_mapping_sums(profile: Profile, weights: dict[int, int]):
    """functions.top_dsos' loop as it was in Python."""
    self_w: dict[int, int] = {}
    total_w: dict[int, int] = {}
    locs = profile.locations
    for sid, w in weights.items():
        stack = profile.stacks[sid]
        if not stack:
            continue
        leaf = locs[stack[0]].mapping_id
        self_w[leaf] = self_w.get(leaf, 0) + w
        for m in {locs[l].mapping_id for l in stack}:
            total_w[m] = total_w.get(m, 0) + w
    return self_w, total_w


def _check(profile: Profile, weights: dict[int, int]) -> None:
    table = StackFunctions(profile)
    table.fill(weights)
    for sid in weights:
        assert table.of(sid) == stack_functions(profile, profile.stacks[sid])
        assert table.distinct(sid) == tuple(set(table.of(sid)))
    got = _weigh.function_sums(weights, profile.stacks,
                               [loc.functions for loc in profile.locations], table._distinct)
    want = _python_function_sums(profile, weights)
    assert [list(d.items()) for d in got] == [list(d.items()) for d in want]
    got = _weigh.mapping_sums(weights, profile.stacks,
                              [loc.mapping_id for loc in profile.locations])
    want = _python_mapping_sums(profile, weights)
    assert [list(d.items()) for d in got] == [list(d.items()) for d in want]


@pytest.mark.parametrize("name", CAPTURES)
def test_sums_equal_the_python_loops_on_captures(name):
    path = FIX / name
    assert path.is_file(), path
    profile = load(str(path))
    weights = stack_weights(profile)
    assert len(weights) >= 20
    _check(profile, weights)


def test_sums_on_made_up_stacks():
    """Recursion (a function twice on a stack counts once), inline frames (a location of
    three functions), an empty stack, functions whose ids collide in a set's table."""
    p = Profile()
    m1, m2 = p.mapping("/usr/bin/a"), p.mapping("/usr/lib/libb.so")
    fs = [p.function(f"f{i}", m1 if i % 2 else m2) for i in range(40)]
    locs = [p.add_location(m1 if i % 3 else m2, 0x1000 + i, (fs[i % 40],)) for i in range(60)]
    inline = p.add_location(m2, 0x9000, (fs[3], fs[35], fs[3]))
    stacks = [p.stack((locs[0], locs[8], locs[0], locs[40])), p.stack((inline, locs[1])),
              p.stack(()), p.stack(tuple(locs[i] for i in range(0, 60, 7))),
              p.stack((locs[32], locs[0], locs[64 % 60]))]
    weights = {s: w for s, w in zip(stacks, (5, 3, 2, 7, 1))}
    _check(p, weights)
    with pytest.raises(IndexError):
        _weigh.mapping_sums({len(p.stacks): 1}, p.stacks, [0] * len(p.locations))
