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
                               [loc.functions for loc in profile.locations], table.distincts)
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


# ---- the diagnosis' per-stack questions ---------------------------------------------------
#: perf script text, named by perf on the recording host: categories to ask of
NAMED = ["realworld/cpython-gil-server/bad.script.txt.gz",
         "realworld/postgres-hot-row/bad-hot-row.script.txt.gz",
         "diagnosis/alloc.script.txt", "diagnosis/log.script.txt",
         "dwarf/cpython/dwarf8k.perf.data.script.txt.gz"]


@pytest.mark.parametrize("name", NAMED)
def test_diagnosis_stack_questions_equal_python(name):
    """Context.select, its masks, the first deciding frame, the user frames and the
    evidence totals against the Python they replace, on every stack of the capture."""
    from analysis.diagnosis import Context
    from analysis.diagnosis.stack_rules import _user_functions

    profile = load(str(FIX / name))
    ctx = Context.build(profile)
    weights = ctx.weights
    fmask = {f: ctx.bits(ctx.cats[f]) | (ctx.bit("@app") if ctx.app[f] else 0)
             for f in ctx.cats}
    masks = {}
    for sid in weights:
        m = 0
        for f in ctx.funcs[sid]:
            m |= fmask[f]
        masks[sid] = m
    assert _weigh.or_masks(weights, ctx.funcs, fmask) == masks == ctx.mask
    seen = {c for f in ctx.cats for c in ctx.cats[f]}
    assert seen, "the capture has categorised functions"
    for any_of, all_of, none_of, leaf_any, busy in [
            ((), (), (), (), False), ((), (), (), (), True), (tuple(seen)[:2], (), (), (), False),
            ((), tuple(seen)[:1], tuple(seen)[1:2], (), True), ((), (), (), tuple(seen), False),
            (("@app",), (), ("no-such-category",), (), False)]:
        a, al, no, lf = (ctx.bits(any_of), ctx.bits(all_of), ctx.bits(none_of),
                         ctx.bits(leaf_any))
        want = {sid: w for sid, w in weights.items()
                if (not a or masks[sid] & a) and masks[sid] & al == al and not masks[sid] & no
                and (not lf or ctx.leaf_mask[sid] & lf) and not (busy and sid in ctx.idle)}
        got = ctx.select(any_of, all_of, none_of, leaf_any, busy)
        assert list(got.items()) == list(want.items())
    deciding = {f: None for f in ctx.cats if not ctx.passes_through(f)}
    want = {}
    for sid in weights:
        f = next((f for f in ctx.funcs[sid] if f in deciding), None)
        if f is not None:
            want[sid] = f
    assert list(_weigh.first_marked(weights, ctx.funcs, deciding).items()) == \
        list(want.items())
    table = _user_functions(profile)
    want = {}
    for sid in weights:
        user = [table[loc] for loc in profile.stacks[sid] if table[loc] is not None]
        if user:
            want[sid] = (len(user), user[-1], user[-2] if len(user) > 1 else None)
    assert _weigh.user_frames(weights, profile.stacks, table) == want
    acc: dict[int, int] = {}
    for sid, w in weights.items():
        for f in set(ctx.funcs[sid]):
            acc[f] = acc.get(f, 0) + w
    assert list(_weigh.totals(weights, ctx.stack_funcs.distincts).items()) == list(acc.items())


def test_select_refuses_masks_wider_than_64_bits():
    with pytest.raises(OverflowError):
        _weigh.select({0: 1}, {0: 1 << 64}, {0: 0}, 1, 0, 0, 0, None)
