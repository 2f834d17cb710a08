"""The array passes over the profile's columns (analysis/aggregate/stack_sums.py,
analysis/aggregate/stack_walks.py, analysis/column_ops.py) give what the Python loops
they replace give, dict order included where the pass keeps one (rows with equal counts
keep it): checked against those loops, kept here, on real captures of every input
format, with inline frames (DWARF debug info) and without, and on stacks written to make
set order and recursion matter."""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from analysis import column_ops
from analysis.aggregate import stack_sums, stack_walks
from analysis.aggregate.functions import (StackFunctions, first_seen_sort, ranked_arrays,
                                         stack_functions)
from analysis.aggregate.selection import stack_weights
from analysis.aggregate.stack_sums import StackSets
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
    for sid in weights:
        assert table.of(sid) == stack_functions(profile, profile.stacks[sid])
        assert table.funcs[sid] == table.of(sid)
        assert table.distinct(sid) == tuple(set(table.of(sid)))
    lf = [loc.functions for loc in profile.locations]
    sets = StackSets(profile, lf, len(profile.functions))
    got = (stack_sums.self_sums(sets, weights), stack_sums.total_sums(sets, weights))
    want = _python_function_sums(profile, weights)
    assert got == want  # (as dicts: the sums come in function id order)
    # the same sums ranked into arrays by function id (no set per stack): put in first-seen
    # order (first stack, then that stack's set), the ids are the total dict's
    ids, self_a, total_a, first = ranked_arrays(profile, weights, table)
    order = first_seen_sort(list(ids), lambda f: 0, int, first, weights, table.of)
    assert order == list(want[1])
    assert [total_a[f] for f in order] == list(want[1].values())
    assert {f: self_a[f] for f in order if self_a[f]} == want[0]
    assert sum(self_a) == sum(want[0].values())
    got = _mapping_sums(profile, weights)
    want = _python_mapping_sums(profile, weights)
    assert got == want  # (as dicts; top_dsos' test checks the first-seen order)


def _mapping_sums(profile: Profile, weights: dict[int, int]):
    """stack_sums.mapping_totals as the Python loop's two dicts (self, total)."""
    ids, self_a, total_a, _ = stack_sums.mapping_totals(StackSets(profile), weights)
    return ({m: self_a[m] for m in ids if self_a[m]}, {m: total_a[m] for m in ids})


def _with_locations(profile: Profile, locations: list) -> Profile:
    """The profile's mappings, functions and stacks with other locations."""
    q = Profile()
    q.mappings, q.functions, q.stacks = profile.mappings, profile.functions, profile.stacks
    q.locations = locations
    return q


#: the per-row passes' chunk of items (stack_sums.CHUNK), as run and small enough that
#: every capture's stacks span many chunks, a stack longer than one a chunk of its own
CHUNKS = [stack_sums.CHUNK, 5, 1]


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("name", CAPTURES)
def test_sums_equal_the_python_loops_on_captures(name, chunk, monkeypatch):
    monkeypatch.setattr(stack_sums, "CHUNK", chunk)
    path = FIX / name
    assert path.is_file(), path
    profile = load(str(path))
    weights = stack_weights(profile)
    assert len(weights) >= 20
    _check(profile, weights)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_sums_on_made_up_stacks(chunk, monkeypatch):
    """Recursion (a function twice on a stack counts once), inline frames (a location of
    three functions), an empty stack, functions whose ids collide in a set's table, and
    stacks of functions and mappings only earlier stacks had (nothing new is ordered)."""
    monkeypatch.setattr(stack_sums, "CHUNK", chunk)
    p = Profile()
    m1, m2 = p.mapping("/usr/bin/a"), p.mapping("/usr/lib/libb.so")
    fs = [p.function(f"f{i}", m1 if i % 2 else m2) for i in range(40)]
    locs = [p.add_location(m1 if i % 3 else m2, 0x1000 + i, (fs[i % 40],)) for i in range(60)]
    inline = p.add_location(m2, 0x9000, (fs[3], fs[35], fs[3]))
    stacks = [p.stack((locs[0], locs[8], locs[0], locs[40])), p.stack((inline, locs[1])),
              p.stack(()), p.stack(tuple(locs[i] for i in range(0, 60, 7))),
              p.stack((locs[32], locs[0], locs[64 % 60])),
              p.stack((locs[8], locs[0], locs[8], inline)),  # nothing new, twice over
              p.stack((locs[1], locs[59], locs[8]))]  # old and new
    weights = {s: w for s, w in zip(stacks, (5, 3, 2, 7, 1, 4, 6))}
    _check(p, weights)
    with pytest.raises(IndexError):  # a mapping id is an index
        _mapping_sums(_with_locations(p, [replace(loc, mapping_id=-1)
                                          for loc in p.locations]), weights)
    with pytest.raises(IndexError):
        _mapping_sums(_with_locations(p, [replace(loc, mapping_id=0)
                                          for loc in p.locations]), {len(p.stacks): 1})


def test_a_mapping_id_past_the_mappings_allocates_nothing():
    """A damaged saved profile's mapping id of 2^31 (or 2^40) is an IndexError: arrays
    per mapping grown to the id were 20 GiB (the fuzz run's sanitized process was killed
    by the kernel)."""
    p = Profile()
    m = p.mapping("/usr/bin/a")
    loc = p.add_location(m, 0x1000, (p.function("f", m),))
    weights = {p.stack((loc,)): 1}
    for bad in (len(p.mappings), 1 << 31, 1 << 40):
        with pytest.raises(IndexError):
            _mapping_sums(_with_locations(p, [replace(p.locations[loc], mapping_id=bad)]),
                          weights)
    assert _mapping_sums(p, weights) == ({m: 1}, {m: 1})


# ---- the diagnosis' per-stack questions ---------------------------------------------------
#: perf script text, named by perf on the recording host: categories to ask of
NAMED = ["realworld/cpython-gil-server/bad.script.txt.gz",
         "realworld/postgres-hot-row/bad-hot-row.script.txt.gz",
         "diagnosis/alloc.script.txt", "diagnosis/log.script.txt",
         "dwarf/cpython/dwarf8k.perf.data.script.txt.gz"]


@pytest.mark.parametrize("stack_chunk", [stack_walks.STACK_CHUNK, 3])
@pytest.mark.parametrize("name", NAMED)
def test_diagnosis_stack_questions_equal_python(name, stack_chunk, monkeypatch):
    """Context.select, its masks, the first deciding frame, the user frames and the
    evidence totals against the Python they replace, on every stack of the capture; the
    walks a chunk of stacks at a time as run, and three stacks at a time."""
    monkeypatch.setattr(stack_walks, "STACK_CHUNK", stack_chunk)
    monkeypatch.setattr(stack_walks, "FRAME_CHUNK",
                        7 if stack_chunk == 3 else stack_walks.FRAME_CHUNK)
    from analysis.diagnosis import Context
    from analysis.diagnosis.stack_rules import _user_functions

    profile = load(str(FIX / name))
    ctx = Context.build(profile)
    weights = ctx.weights
    fmask = {f: ctx.bits(ctx.cats[f]) | (ctx.bit("@app") if ctx.app[f] else 0)
             for f in ctx.cats}
    masks, leaf_masks, kernel_leaf = {}, {}, set()
    for sid in weights:
        m = 0
        for f in ctx.funcs[sid]:
            m |= fmask[f]
        masks[sid] = m
        fids = ctx.funcs[sid]
        leaf_masks[sid] = fmask[fids[0]] if fids else 0
        stack = profile.stacks[sid]
        if stack and profile.mappings[profile.locations[stack[0]].mapping_id].kind == "kernel":
            kernel_leaf.add(sid)
    fm = array("Q", [0]) * len(profile.functions)
    for f, m in fmask.items():
        fm[f] = m
    ns = len(profile.stacks)
    got_m, got_lm, got_kl = array("Q", [0]) * ns, array("Q", [0]) * ns, bytearray(ns)
    sets = ctx.stack_funcs.sets
    stack_walks.stack_masks(sets, weights, fm,
                            bytearray(profile.mappings[loc.mapping_id].kind == "kernel"
                                      for loc in profile.locations), got_m, got_lm, got_kl,
                            bytearray(len(profile.functions)))
    assert {sid: got_m[sid] for sid in weights} == masks == \
        {sid: ctx.mask[sid] for sid in weights}
    assert {sid: got_lm[sid] for sid in weights} == leaf_masks == \
        {sid: ctx.leaf_mask[sid] for sid in weights}
    assert {sid for sid in range(ns) if got_kl[sid]} == kernel_leaf == \
        {sid for sid in range(ns) if sid in ctx.kernel_leaf_stacks}
    assert kernel_leaf, "the capture has kernel leaves"
    assert list(ctx.cats) == sorted({f for sid in weights for f in ctx.funcs[sid]})
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
    marked = bytearray(len(profile.functions))
    for f in deciding:
        marked[f] = 1
    assert list(stack_walks.first_marked(sets, weights, marked).items()) == \
        list(want.items())
    for f in list(deciding)[::2]:  # the first marked frame, kept when its mark is 2
        marked[f] = 2
    assert list(stack_walks.first_marked(sets, weights, marked, 2).items()) == \
        [(sid, f) for sid, f in want.items() if marked[f] == 2]
    # the same into a column by stack id (-1 where there is none)
    into = array("i", [-1]) * len(profile.stacks)
    assert stack_walks.first_marked(sets, weights, marked, 2, into) is into
    assert list(into) == [want[s] if s in want and marked[want[s]] == 2 else -1
                          for s in range(len(profile.stacks))]
    with pytest.raises(IndexError):  # a column too short for the stack ids
        stack_walks.first_marked(sets, weights, marked, 1, array("i"))
    table = _user_functions(ctx)
    kernel = {m.id for m in profile.mappings if m.kind == "kernel"}
    assert table.tolist() == [-1 if loc.mapping_id in kernel else loc.functions[-1]
                              for loc in profile.locations]
    want = {}
    for sid in weights:
        user = [table[loc] for loc in profile.stacks[sid] if table[loc] != -1]
        if user:
            want[sid] = (len(user), user[-1], user[-2] if len(user) > 1 else None)
    frames = stack_walks.user_frames(sets, weights, table)
    sids, ws, ns_, outers, befores = (a.tolist() for a in frames)
    assert {s: (n, o, None if b == -1 else b)
            for s, n, o, b in zip(sids, ns_, outers, befores)} == want
    assert sids == list(want)
    assert ws == [weights[s] for s in sids]
    # broken_stacks' pass over them, for three ways of marking the outer functions
    cut = 0
    for step in (1, 2, 3):
        kind = bytearray(len(profile.functions))
        for f in set(outers):
            kind[f] = (f // step) % 3
        for short in (1, 2):
            broken, origins, user, deepest = {}, {}, 0, 0
            for s, n, o, b in zip(sids, ns_, outers, befores):
                user += weights[s]
                deepest = max(deepest, n)
                if kind[o] == 1 or (kind[o] == 2 and n <= short):
                    broken[s] = weights[s]
                    origin = b if kind[o] == 1 and n > 1 else o
                    origins[origin] = origins.get(origin, 0) + weights[s]
            flags = bytearray(len(profile.stacks))
            got = stack_walks.cut_stacks(frames, kind, short, flags)
            assert (got[0], list(got[1].items()), got[2], got[3]) == \
                (sum(broken.values()), list(origins.items()), user, deepest)
            assert [s for s in range(len(flags)) if flags[s]] == sorted(broken)
            assert set(flags) <= {0, 1}
            cut += len(broken)
    assert cut
    with pytest.raises(IndexError):  # flags too short for the stack ids
        stack_walks.cut_stacks(frames, bytearray([1]) * len(kind), 9, bytearray())
    acc: dict[int, int] = {}
    for sid, w in weights.items():
        for f in set(ctx.funcs[sid]):
            acc[f] = acc.get(f, 0) + w
    assert stack_sums.total_sums(sets, weights) == acc  # (as dicts: in function id order)
    ids, _, total, first = ranked_arrays(profile, weights, ctx.stack_funcs)
    order = first_seen_sort(list(ids), lambda f: 0, int, first, weights, ctx.stack_funcs.of)
    assert [(f, total[f]) for f in order] == list(acc.items())
    # Context.top_functions: nlargest over the totals in first-seen order
    pred = [lambda f: True, lambda f: not ctx.passes_through(f), lambda f: f % 3 == 1]
    want = [[ctx.function_row(f, c) for f, c in _python_top(ctx, weights, p, 7)]
            for p in pred]
    assert want[0] and want[1]
    assert [ctx.top_functions(weights, p, 7) for p in pred] == want


def test_select_refuses_masks_wider_than_64_bits():
    """(the masks are array('Q') by stack id: a 65-bit mask cannot be stored in one, nor
    a 65-bit question asked; a stack id past the arrays is an error, not a read)"""
    with pytest.raises(OverflowError):
        array("Q", [0])[0] = 1 << 64
    with pytest.raises(OverflowError):
        stack_walks.select({0: 1}, array("Q", [1]), array("Q", [0]), 1 << 64, 0, 0, 0, None)
    with pytest.raises(IndexError):
        stack_walks.select({1: 1}, array("Q", [1]), array("Q", [0]), 1, 0, 0, 0, None)
    assert stack_walks.select({0: 4}, array("Q", [3]), array("Q", [0]), 1, 0, 0, 0,
                              bytearray(1)) == {0: 4}
    assert stack_walks.select({0: 4}, array("Q", [3]), array("Q", [0]), 1, 0, 0, 0,
                              bytearray(b"\x01")) == {}


@pytest.mark.parametrize("name", CAPTURES + NAMED[:2])
def test_notable_functions_equal_the_sorted_table(name):
    """functions.notable_functions (the report's, from arrays) gives what the whole
    sorted table cut by report.notable_functions gives: rows, order, the rest."""
    from analysis import report
    from analysis.aggregate.functions import notable_functions, top_functions

    profile = load(str(FIX / name))
    weights = stack_weights(profile)
    table = top_functions(profile, weights)
    total = sum(weights.values())
    cases = 0
    for first in (1, 3, 20, report.FUNCTIONS_MIN, len(table), len(table) + 5):
        for share in (report.FUNCTIONS_MIN_SHARE, 0.01, 0.2, 2.0):
            old_min, old_share = report.FUNCTIONS_MIN, report.FUNCTIONS_MIN_SHARE
            report.FUNCTIONS_MIN, report.FUNCTIONS_MIN_SHARE = first, share
            try:
                want = report.notable_functions(table, total)
            finally:
                report.FUNCTIONS_MIN, report.FUNCTIONS_MIN_SHARE = old_min, old_share
            got = notable_functions(profile, weights, first, share * total)
            assert got == want
            cases += want[1] is not None
    assert cases >= 8  # (most cut something)


def _python_callers_above(ctx, stacks, pred, n=3):
    """Context.callers_above's loop as it was in Python."""
    from collections import Counter
    acc: Counter = Counter()
    for sid, w in stacks.items():
        fids = ctx.funcs[sid]
        start = next((i for i, f in enumerate(fids) if pred(f)), None)
        if start is None:
            continue
        caller = next((f for f in fids[start + 1:]
                       if ctx.app.get(f, False) and not pred(f)), None)
        if caller is not None:
            acc[caller] += w
    return [ctx.function_row(f, c) for f, c in acc.most_common(n)]


#: named captures with application code (the callers callers_above names)
WITH_APP_CODE = ["realworld/postgres-hot-row/bad-hot-row.script.txt.gz",
                 "realworld-holdout2/postgres-missing-index/fixed.script.txt.gz",
                 "realworld/redis-fsync/bad.script.txt.gz", "diagnosis/alloc.script.txt"]


@pytest.mark.parametrize("stack_chunk", [stack_walks.STACK_CHUNK, 3])
@pytest.mark.parametrize("name", WITH_APP_CODE)
def test_callers_above_equal_the_python_loop(name, stack_chunk, monkeypatch):
    """The array walk (stack_walks.callers_above, marks asked once per function) names the
    callers, with their samples and in their order, that the per-frame Python loop did:
    for a library, the kernel, each of 40 functions, and a predicate nothing satisfies;
    over all the busy stacks and every third (three stacks a chunk too)."""
    monkeypatch.setattr(stack_walks, "STACK_CHUNK", stack_chunk)
    monkeypatch.setattr(stack_walks, "FRAME_CHUNK",
                        7 if stack_chunk == 3 else stack_walks.FRAME_CHUNK)
    from analysis.diagnosis.context import Context
    profile = load(str(FIX / name))
    ctx = Context.build(profile)
    busy = ctx.busy_stacks()
    libs = {ctx.library(f) for sid in busy for f in ctx.funcs[sid][:1]}
    preds = [lambda f, lib=lib: ctx.library(f) is lib for lib in libs]
    preds += [lambda f: profile.mappings[profile.functions[f].mapping_id].kind == "kernel",
              lambda f: False, lambda f: f % 3 == 0]
    # "who calls f": the functions application code calls, and as many others
    below_app, others = set(), set()
    for sid in busy:
        fids = ctx.funcs[sid]
        for i, f in enumerate(fids):
            if not ctx.app.get(f, False):
                (below_app if any(ctx.app.get(g, False) for g in fids[i + 1:]) else
                 others).add(f)
    preds += [lambda f, g=g: f == g for g in sorted(below_app)[:30] + sorted(others)[:10]]
    some = dict(list(busy.items())[::3])
    found = 0
    for pred in preds:
        for stacks in (busy, some):
            for n in (3, 50):
                want = _python_callers_above(ctx, stacks, pred, n)
                assert ctx.callers_above(stacks, pred, n) == want
                found += bool(want)
    assert found >= 4, "the capture has callers above something"


@pytest.mark.parametrize("name", CAPTURES)
def test_location_weights_equal_the_python_loops(name):
    """stack_sums.location_weights: each location's weight over the stacks, counted at each
    of its frames (symbolize.coverage) or once per stack (Symbolizer._frame_weights)."""
    profile = load(str(FIX / name))
    weights = stack_weights(profile)
    n = len(profile.locations)
    every, once = [0] * n, [0] * n
    for sid, w in weights.items():
        for loc in profile.stacks[sid]:
            every[loc] += w
        for loc in set(profile.stacks[sid]):
            once[loc] += w
    assert sum(once) > 0
    for distinct, want in ((False, every), (True, once)):
        got = stack_sums.location_weights(profile, weights, distinct)
        assert got.tolist() == want
    with pytest.raises(IndexError):  # a location id past the locations
        stack_sums.location_weights(_with_locations(profile, profile.locations[:n - 1]),
                                    weights, False)
    # a stack that recurses: its location counted twice, or once
    made = Profile()
    m = made.mapping("/usr/bin/a")
    f = made.function("f", m)
    for i in range(3):
        made.add_location(m, 0x10 + i, (f,))
    assert [made.stack((1, 2, 1)), made.stack((2,))] == [0, 1]
    assert stack_sums.location_weights(made, {0: 5, 1: 7}, False).tolist() == [0, 10, 12]
    assert stack_sums.location_weights(made, {0: 5, 1: 7}, True).tolist() == [0, 5, 12]


@pytest.mark.parametrize("name", CAPTURES)
def test_count_keys_is_counter_of_zip(name):
    """column_ops.count_keys: Counter(zip(...)) of a capture's thread columns, the same counts
    in the same first-met order (by_thread and the thread names depend on that order)."""
    from collections import Counter

    profile = load(str(FIX / name))
    cols = (profile.s_pid, profile.s_tid, profile.s_comm)
    for k in (1, 2, 3):
        want = Counter(zip(*cols[:k]))
        got = column_ops.count_keys(*cols[:k])
        assert list(got.items()) == list(want.items())
    assert len(want) >= 2, "the capture has more than one thread"


def test_count_keys_on_made_up_columns():
    """Many keys, negative values, four and five columns, and the refusal of columns of
    different lengths."""
    import random
    from collections import Counter

    rng = random.Random(7)
    for n, spread in ((0, 1), (1, 1), (5000, 3), (40000, 20000)):
        cols = [array("i", (rng.randrange(-spread, spread + 1) for _ in range(n)))
                for _ in range(5)]
        for k in (1, 2, 4, 5):
            got = column_ops.count_keys(*cols[:k])
            assert list(got.items()) == list(Counter(zip(*cols[:k])).items())
    with pytest.raises(ValueError):
        column_ops.count_keys(array("i", [1, 2]), array("i", [1]))


def _python_time_in(ctx):
    """diagnosis.time_in as it was before stack_walks.classify: one Python step per
    stack."""
    from collections import Counter

    from analysis.diagnosis import time_in as ti
    from analysis.diagnosis.context import NO_THREADS
    acc, under, busy, kernel = Counter(), {}, 0, 0
    thread_app = ti._threads_app_function(ctx)
    classes = [(name, ctx.bits(c), ctx.bits(lc)) for name, c, lc in ti.CLASSES]
    for sid, w in ctx.weights.items():
        if ctx.idle[sid]:
            continue
        busy += w
        if ctx.kernel_leaf_stacks[sid]:
            kernel += w
        m, lm = ctx.mask[sid], ctx.leaf_mask[sid]
        cls = next((name for name, b, lb in classes if m & b or lm & lb), None)
        if cls is None:
            continue
        acc[cls] += w
        frame = next((f for f in ctx.funcs[sid] if ctx.app.get(f, False)), None)
        if frame is not None:
            under.setdefault(cls, Counter())[frame] += w
            continue
        for tid, n in ctx.thread_of.get(sid, NO_THREADS).items():
            if thread_app.get(tid) is not None:
                under.setdefault(cls, Counter())[thread_app[tid]] += n
    total = busy or 1
    return {"busy": busy, "kernel": round(kernel / total, 4),
            "classes": {cls: {"samples": n, "share": round(n / total, 4),
                              "under": [{"name": ctx.name(f), "share": round(c / total, 4)}
                                        for f, c in under.get(cls, Counter()).most_common(
                                            ti.BLAME_TOP)]}
                        for cls, n in acc.most_common()}}


@pytest.mark.parametrize("name", CAPTURES + NAMED + WITH_APP_CODE)
def test_time_in_equals_the_per_stack_loop(name):
    """time_in with its stacks classed by stack_walks.classify and blamed by first_marked gives
    what the per-stack loop gave: classes in the same order, the same samples, the same
    functions blamed (application frames on the captures with application code)."""
    from analysis.diagnosis import time_in as ti
    from analysis.diagnosis.context import Context

    ctx = Context.build(load(str(FIX / name)))
    got = ti.time_in(ctx)
    assert got == _python_time_in(ctx)
    assert got["busy"] > 0
    if name in NAMED:
        assert got["classes"]
    if name in WITH_APP_CODE:
        assert any(c["under"] for c in got["classes"].values())


def test_classify_on_made_up_stacks():
    """A stack goes to the first class its mask or its leaf mask meets; idle stacks to
    none, and count neither as busy nor as kernel time."""
    weights = {3: 5, 0: 1, 2: 7, 1: 2}
    mask = array("Q", [0b01, 0b10, 0b11, 0b100])
    leaf = array("Q", [0, 0b1000, 0, 0])
    idle, kernel_leaf = bytearray([0, 0, 1, 0]), bytearray([1, 1, 1, 0])
    busy, kernel, order, per = stack_walks.classify(weights, mask, leaf, idle, kernel_leaf,
                                                    [(0b10, 0), (0b01, 0b1000)])
    assert (busy, kernel) == (8, 3)
    assert order == [1, 0] and per == [{1: 2}, {0: 1}]  # stack 3 in no class, 2 idle
    with pytest.raises(ValueError):  # an idle column shorter than the masks
        stack_walks.classify(weights, mask, leaf, bytearray(3), kernel_leaf, [])
    with pytest.raises(IndexError):
        stack_walks.classify({9: 1}, mask, leaf, idle, kernel_leaf, [])


# ---- per-function facts, read once ---------------------------------------------------------
def _python_missing_symbols_sums(profile: Profile, weights: dict[int, int]):
    """rules.missing_symbols' loop as it was in Python (None: a leaf location without
    functions, for which the rule asks each stack)."""
    per_leaf: dict[int, int] = {}
    for sid, w in weights.items():
        st = profile.stacks[sid]
        if st:
            per_leaf[st[0]] = per_leaf.get(st[0], 0) + w
    unnamed: dict[int, int] = {}
    for loc, w in per_leaf.items():
        fs = profile.locations[loc].functions
        if not fs:
            return None
        fn = profile.functions[fs[0]]
        if not fn.resolved:
            unnamed[fn.mapping_id] = unnamed.get(fn.mapping_id, 0) + w
    return unnamed


@pytest.mark.parametrize("name", CAPTURES)
def test_function_facts_equal_the_python_reads(name):
    """Context.function_columns reads each function's resolved and mapping_id;
    split_functions groups the used ones as the Python loop over them did (named in id
    order; unnamed per mapping, mappings in the order of their first function);
    unnamed_leaf_sums is missing_symbols' loop."""
    from analysis.diagnosis.context import Context
    profile = load(str(FIX / name))
    weights = stack_weights(profile)
    resolved, mapping = Context.build(profile).function_columns()
    assert list(resolved) == [int(f.resolved) for f in profile.functions]
    assert list(array("i", mapping)) == [f.mapping_id for f in profile.functions]
    sets = StackSets(profile)
    used = bytearray(len(profile.functions))
    stack_walks.used_functions(sets, weights, used)
    named, unnamed = stack_walks.split_functions(used, resolved, array("i", mapping))
    want_named, want_unnamed = [], {}
    for f, fn in enumerate(profile.functions):
        if used[f]:
            if fn.resolved:
                want_named.append(f)
            else:
                want_unnamed.setdefault(fn.mapping_id, []).append(f)
    assert named.tolist() == want_named
    assert [(m, fs.tolist()) for m, fs in unnamed.items()] == list(want_unnamed.items())
    got = stack_walks.unnamed_leaf_sums(sets, weights, resolved, array("i", mapping))
    want = _python_missing_symbols_sums(profile, weights)
    assert (got if got is None else list(got.items())) == \
        (want if want is None else list(want.items()))


def test_function_facts_on_made_up_functions():
    """A location without functions makes unnamed_leaf_sums give None; fill sets the
    items named by an id array in arrays of 1, 4 and 8 byte items (modulo their size)
    and refuses ids outside them."""
    p = Profile()
    lib, exe = p.mapping("/usr/lib/liba.so"), p.mapping("/usr/bin/b")
    named, unnamed = p.function("f", exe), p.function("liba.so+0x10", lib, resolved=False)
    a, b = p.add_location(exe, 0x10, (named,)), p.add_location(lib, 0x20, (unnamed,))
    empty = p.add_location(lib, 0x30, ())
    s1, s2, s3 = p.stack((a, b)), p.stack((b, a)), p.stack((empty, a))
    # (the columns Context.function_columns makes)
    cols = (bytes(f.resolved for f in p.functions), array("i", [f.mapping_id
                                                                for f in p.functions]))
    sets = StackSets(p)
    assert stack_walks.unnamed_leaf_sums(sets, {s1: 2, s2: 3}, *cols) == {lib: 3}
    assert stack_walks.unnamed_leaf_sums(sets, {s1: 2, s3: 1}, *cols) is None
    for typecode, value, want in (("b", -1, -1), ("i", 7, 7), ("Q", 1 << 63, 1 << 63),
                                  ("q", -2, -2)):
        out = array(typecode, [0]) * 4
        column_ops.fill(out, array("i", [1, 3]), value)
        assert list(out) == [0, want, 0, want]
    flags = bytearray(3)
    column_ops.fill(flags, array("i", [2]), 258)
    assert flags == bytearray([0, 0, 2])
    with pytest.raises(IndexError):
        column_ops.fill(flags, array("i", [3]), 1)
    with pytest.raises(IndexError):
        column_ops.fill(flags, array("i", [-1]), 1)


@pytest.mark.parametrize("name", CAPTURES)
def test_stack_counts_are_the_counter_of_the_stack_column(name):
    """counts_first_met: dict(Counter(s_stack)), stacks in the order first met."""
    profile = load(str(FIX / name))
    got = column_ops.counts_first_met(profile.s_stack)
    assert list(got.items()) == list(Counter(profile.s_stack).items())


def test_stack_counts_of_made_up_columns():
    """Ids past the locations are counted as any other; a negative id (none of the
    importers writes one) is counted too."""
    p = Profile()
    m = p.mapping("/usr/bin/a")
    f = p.function("f", m)
    locs = [p.add_location(m, 0x10 + i, (f,)) for i in range(3)]
    assert locs == [0, 1, 2]
    for column in ([2, 5, 2, 0, 5, 5], [3, -1, 3, 0], [], [7]):
        got = column_ops.counts_first_met(array("i", column))
        assert list(got.items()) == list(Counter(column).items())


def test_a_stack_id_near_2_31_allocates_nothing_of_its_size():
    """A stack id near 2^31 is counted as any other without an array of its size: the
    arrays by stack id were sized by the highest id, so a damaged saved profile's id of
    1,811,939,343 (make fuzz-native, tests/fuzz/crashes/saved-profile-171cda2d7f1a) asked
    for 13.5 + 6.75 GiB (under the sanitizers an allocation-size-too-big report; elsewhere
    a MemoryError, or that much address space), and 2^31 - 1 here for 24 GiB (tracemalloc's
    peak). counts_first_met allocates by the number of rows only."""
    import tracemalloc
    p = Profile()
    m = p.mapping("/usr/bin/a")
    p.add_location(m, 0x10, (p.function("f", m),))
    top = (1 << 31) - 1
    for column in ([0, top, 0, top], [top], [5000, 1, 5000], [8199, 2, 0]):
        tracemalloc.start()
        try:
            got = column_ops.counts_first_met(array("i", column))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert list(got.items()) == list(Counter(column).items())
        assert peak < 1 << 20, (column, peak)


@pytest.mark.parametrize("name", CAPTURES)
def test_column_reductions_equal_the_python_ones(name):
    """value_counts, int_max and time_span: the per-event counts, unit rows and time
    range the report's header reads, as Counter, max and min/max without NaN give them."""
    import math
    profile = load(str(FIX / name))
    counts = Counter(profile.s_event)
    assert column_ops.value_counts(profile.s_event, len(profile.events)) == \
        [counts.get(e, 0) for e in range(len(profile.events))]
    assert column_ops.int_max(profile.s_count) == max(profile.s_count)
    timed = [t for t in profile.s_time if not math.isnan(t)]
    assert column_ops.time_span(profile.s_time) == ((min(timed), max(timed)) if timed else None)
    for e in range(len(profile.events)):
        of = [t for t, x in zip(profile.s_time, profile.s_event) if x == e and t == t]
        assert column_ops.time_span(profile.s_time, profile.s_event, e) == \
            ((min(of), max(of)) if of else None)


def test_column_reductions_of_made_up_columns():
    nan = float("nan")
    assert column_ops.time_span(array("d", [nan, 3.5, -0.0, nan, 0.0])) == (-0.0, 3.5)
    assert column_ops.time_span(array("d", [nan])) is None
    assert column_ops.time_span(array("d")) is None
    assert column_ops.time_span(array("d", [1.0, 2.0, 3.0]), array("i", [1, 0, 1]), 1) == \
        (1.0, 3.0)
    assert column_ops.int_max(array("q")) is None
    assert column_ops.int_max(array("q", [-5, -2, -9])) == -2
    assert column_ops.value_counts(array("i", [2, 0, 2]), 4) == [1, 0, 2, 0]
    with pytest.raises(IndexError):
        column_ops.value_counts(array("i", [4]), 4)
    with pytest.raises(ValueError):
        column_ops.time_span(array("d", [1.0]), array("i", [0, 0]), 0)


def _python_interpreter_leaves(ctx):
    """Context.interpreter_leaves' loop as it was in Python."""
    out, pairs = {}, {}
    p = ctx.profile
    for sid in ctx.weights:
        st = p.stacks[sid]
        fs = p.locations[st[0]].functions if st else ()
        f = fs[0] if fs else ctx.leaf(sid)
        if f is None:
            continue
        mid = p.functions[f].mapping_id
        pair = pairs.get(mid, False)
        if pair is False:
            lib = ctx.file_library(f)
            pair = pairs[mid] = (p.mappings[mid].path, lib) \
                if lib is not None and lib.interpreter else None
        if pair is not None:
            out[sid] = pair
    return out


@pytest.mark.parametrize("name", CAPTURES + NAMED)
def test_interpreter_leaves_equal_the_python_loop(name):
    """leaf_values (the stacks whose leaf function is in an interpreter's file, each with
    its mapping's one (DSO, library) pair) gives the Python loop's dict, in its order."""
    from analysis.diagnosis.context import Context
    ctx = Context.build(load(str(FIX / name)))
    got, want = ctx.interpreter_leaves(), _python_interpreter_leaves(ctx)
    assert list(got.items()) == list(want.items())
    if "cpython" in name:  # (an interpreter capture: there is something to find)
        assert got


def test_leaf_values_of_made_up_stacks():
    """The first location with a function decides; a stack of none is left out; a mapping
    id past the list is an error."""
    p = Profile()
    a, b = p.mapping("/usr/bin/a"), p.mapping("/usr/lib/libpython3.11.so")
    fa, fb = p.function("fa", a), p.function("fb", b)
    bare, la, lb = (p.add_location(b, 0x10, ()), p.add_location(a, 0x20, (fa,)),
                    p.add_location(b, 0x30, (fb,)))
    s1, s2, s3, s4 = (p.stack((bare, lb, la)), p.stack((la, lb)), p.stack((bare,)),
                      p.stack(()))
    sets = StackSets(p)
    mapping = array("i", [f.mapping_id for f in p.functions])
    weights = {s4: 1, s3: 1, s2: 1, s1: 1}
    assert stack_walks.leaf_values(sets, weights, mapping, [None, "py"]) == {s1: "py"}
    assert list(stack_walks.leaf_values(sets, weights, mapping, ["a", "py"]).items()) \
        == [(s2, "a"), (s1, "py")]
    with pytest.raises(IndexError):
        stack_walks.leaf_values(sets, weights, mapping, ["a"])


def _python_top(ctx, stacks, pred, n):
    """Context.top_functions' large-subset path as it was: totals summed stack by stack
    over each stack's set of functions (first-seen order), then heapq.nlargest."""
    import heapq
    total: dict[int, int] = {}
    for sid, w in stacks.items():
        for f in set(ctx.stack_funcs.of(sid)):
            total[f] = total.get(f, 0) + w
    return heapq.nlargest(n, ((f, t) for f, t in total.items() if pred(f)),
                          key=lambda r: r[1])


@pytest.mark.parametrize("name", CAPTURES)
def test_top_ranked_equals_nlargest_in_first_seen_order(name):
    """Context._top_ranked (stack_sums.function_totals, no set per stack) picks and orders the top
    functions as nlargest over the functions in their first-seen order did, ties
    included, for predicates that keep all, some or few functions."""
    from analysis.diagnosis.context import Context
    ctx = Context.build(load(str(FIX / name)))
    stacks = dict(ctx.weights)
    p = ctx.profile
    preds = (lambda f: True, lambda f: f % 3 == 1, lambda f: not p.functions[f].resolved,
             lambda f: p.mappings[p.functions[f].mapping_id].kind != "kernel")
    for pred in preds:
        for n in (1, 3, 5, 40):
            assert ctx._top_ranked(stacks, pred, n) == _python_top(ctx, stacks, pred, n)
            # the weighted stacks themselves: the sums the report's table shares
            assert ctx._top_ranked(ctx.weights, pred, n, ctx.ranked_arrays()) == \
                _python_top(ctx, stacks, pred, n)
    # a subset given as flags by stack id over the weights: as the subset's own dict
    for keep in (lambda s: s % 2 == 0, lambda s: s % 7 == 3, lambda s: False):
        only = bytearray(keep(s) for s in range(len(p.stacks)))
        sub = {s: w for s, w in ctx.weights.items() if only[s]}
        for pred in preds:
            assert ctx.top_functions(ctx.weights, pred, 5, only=only) == \
                [ctx.function_row(f, c) for f, c in _python_top(ctx, sub, pred, 5)]


def test_top_ranked_breaks_ties_within_a_stack_by_its_set():
    """Functions of equal totals first met in the same stack come in the order the set of
    that stack's functions iterates in (for 12, 3, 1, 9 that is 1, 3, 12, 9: neither
    their order on the stack nor their ids')."""
    from analysis.diagnosis.context import Context
    p = Profile()
    p.event("cpu-clock")
    m = p.mapping("/usr/bin/a")
    fs = [p.function(f"f{i}", m) for i in range(20)]
    locs = [p.add_location(m, 0x1000 + 16 * i, (fs[i],)) for i in range(20)]
    a = p.stack((locs[12], locs[3], locs[1], locs[9]))
    b = p.stack((locs[5], locs[17]))
    for sid, n in ((a, 1), (b, 1)):
        for _ in range(n):
            p.add_sample(sid)
    ctx = Context.build(p)
    for pred in (lambda f: True, lambda f: f != 17):
        for n in (1, 2, 3, 4, 5):
            got = ctx._top_ranked(dict(ctx.weights), pred, n)
            assert got == _python_top(ctx, dict(ctx.weights), pred, n)
    top = [f for f, _ in ctx._top_ranked(dict(ctx.weights), lambda f: True, 6)]
    assert top == list(set([12, 3, 1, 9])) + list(set([5, 17]))
    assert top[:4] != [12, 3, 1, 9] and top[:4] != sorted(top[:4])


def _python_hot_span(profile, stacks, span):
    """code_rules._hot_span as it was in Python."""
    per_leaf: Counter = Counter()
    for sid, w in stacks.items():
        per_leaf[profile.stacks[sid][0]] += w
    at: Counter = Counter()
    for leaf, w in per_leaf.items():
        loc = profile.locations[leaf]
        at[loc.dso_offset if loc.dso_offset is not None else loc.address] += w
    addrs = sorted(at)
    best, lo, total = (0, 0, 0), 0, 0
    for a in addrs:
        total += at[a]
        while a - addrs[lo] >= span:
            total -= at[addrs[lo]]
            lo += 1
        if total > best[2]:
            best = (addrs[lo], a, total)
    return best


@pytest.mark.parametrize("name", CAPTURES)
def test_hot_library_passes_equal_the_python_loops(name):
    """The hot-library rule's array passes: hot_span (the densest LOOP_BYTES of leaf
    addresses), group_stacks (stacks by their frame's group, groups in first-met order)
    and frame_sums, against the Python they replace."""
    profile = load(str(FIX / name))
    weights = {s: w for s, w in stack_weights(profile).items() if profile.stacks[s]}
    sets = StackSets(profile)
    for span in (1, 64, 256, 1 << 20):
        assert stack_walks.hot_span(sets, profile.locations, weights, span) == \
            _python_hot_span(profile, weights, span)
    frames = {s: profile.locations[profile.stacks[s][0]].functions[0] for s in weights
              if profile.locations[profile.stacks[s][0]].functions}
    column = array("i", [-1]) * len(profile.stacks)  # (the form the rule passes)
    for s, f in frames.items():
        column[s] = f
    group = array("i", (f % 3 - 1 for f in range(len(profile.functions))))  # -1, 0, 1
    want: dict = {}
    for s, f in frames.items():
        if group[f] >= 0:
            want.setdefault(group[f], {})[s] = weights[s]
    got = stack_walks.group_stacks(column, group, weights)
    assert [(g, list(d.items())) for g, d in got.items()] == \
        [(g, list(d.items())) for g, d in want.items()]
    flags = bytes(f.resolved for f in profile.functions)
    sub = {s: weights[s] for s in frames}
    unflagged = bytearray(len(profile.stacks))
    yes_w, no_w, no_n, by_frame = stack_walks.frame_sums(sub, column, flags, unflagged)
    yes = [(s, w) for s, w in sub.items() if flags[frames[s]]]
    no = {s: w for s, w in sub.items() if not flags[frames[s]]}
    want_by: dict[int, int] = {}
    for s, w in yes:
        want_by[frames[s]] = want_by.get(frames[s], 0) + w
    assert (yes_w, no_w, no_n) == (sum(w for _, w in yes), sum(no.values()), len(no))
    assert list(by_frame.items()) == list(want_by.items())
    assert [s for s in range(len(unflagged)) if unflagged[s]] == sorted(no)
    assert len(yes) + no_n == len(sub)
    for span in (1, 256):  # the hot span of the unflagged ones, read through the flags
        assert stack_walks.hot_span(sets, profile.locations, sub, span, unflagged) == \
            _python_hot_span(profile, no, span)
    if len(sub) < len(weights):  # a stack without a frame has no side to go to
        with pytest.raises(KeyError):
            stack_walks.frame_sums(weights, column, flags, bytearray(len(profile.stacks)))


def test_hot_span_of_made_up_leaves():
    """Equal weights: the lowest window wins; a window is shorter than the span (keys
    span bytes apart are two windows); offsets beat addresses when known."""
    p = Profile()
    m = p.mapping("/usr/lib/libz.so")
    f = p.function("libz.so+0x0", m, resolved=False)
    a = p.add_location(m, 0x7000, (f,), dso_offset=0x100)
    b = p.add_location(m, 0x7100, (f,), dso_offset=0x1ff)
    c = p.add_location(m, 0x9000, (f,), dso_offset=0x200)
    d = p.add_location(m, 0x5000, (f,))  # (no offset: its address)
    s = {p.stack((x,)): w for x, w in ((a, 2), (b, 2), (c, 4), (d, 1))}
    t = {p.stack((x,)): w for x, w in ((a, 2), (b, 2), (c, 2), (d, 1))}
    sets = StackSets(p)  # (after the last stack is added)
    # 0x1ff and 0x200 are within 256 bytes; 0x100 and 0x200 are not
    assert stack_walks.hot_span(sets, p.locations, s, 256) == (0x1ff, 0x200, 6)
    assert stack_walks.hot_span(sets, p.locations, s, 0x101) == (0x100, 0x200, 8)
    # a tie: 0x100-0x1ff and 0x1ff-0x200 both hold 4, the lower is kept
    assert stack_walks.hot_span(sets, p.locations, t, 256) == (0x100, 0x1ff, 4)
    for span in (1, 2, 255, 256, 257, 1 << 16):
        for st in (s, t):
            assert stack_walks.hot_span(sets, p.locations, st, span) == \
                _python_hot_span(p, st, span)
    assert stack_walks.hot_span(sets, p.locations, {}, 256) == (0, 0, 0)


def test_table_rows_pick_what_the_tuple_comparison_picked():
    """table_rows: the ids whose (self, total) is at or above the first-th largest pair
    (ties included) or whose total reaches min_total, in order's order, as the Python
    comparison of tuples picked them."""
    import heapq
    import random

    from analysis.aggregate.functions import table_rows
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randrange(0, 40)
        self_a = array("q", (rng.randrange(0, 4) for _ in range(n)))
        total_a = array("q", (s + rng.randrange(0, 5) for s in self_a))
        order = array("i", rng.sample(range(n), n))
        first, min_total = rng.randrange(1, 8), rng.randrange(0, 9) + 0.5
        cut = heapq.nlargest(first, zip(map(self_a.__getitem__, order),
                                        map(total_a.__getitem__, order)))[-1] \
            if n > first else (-1, -1)
        want = [f for f in order if (self_a[f], total_a[f]) >= cut or total_a[f] >= min_total]
        assert table_rows(order, self_a, total_a, first, min_total) == want


def test_keep_where_and_the_used_functions_of_stack_masks():
    """keep_where sets the items whose flag is 0; stack_masks, given `used`, flags the
    functions of the stacks it reads (what used_functions flags)."""
    out = array("i", [5, 6, 7, 8])
    column_ops.keep_where(out, bytes([1, 0, 1, 0]), -1)
    assert list(out) == [5, -1, 7, -1]
    flags = bytearray(b"abc")
    column_ops.keep_where(flags, bytes([0, 1, 0]), 0)
    assert flags == bytearray(b"\0b\0")
    with pytest.raises(ValueError):
        column_ops.keep_where(array("q", [1, 2]), bytes([1]), 0)
    profile = load(str(FIX / CAPTURES[0]))
    weights = {s: w for i, (s, w) in enumerate(stack_weights(profile).items()) if i % 2}
    sets = StackSets(profile)
    nf, ns = len(profile.functions), len(profile.stacks)
    want = bytearray(nf)
    stack_walks.used_functions(sets, weights, want)
    used = bytearray(nf)
    stack_walks.stack_masks(sets, weights, array("Q", [1]) * nf,
                            bytearray(len(profile.locations)), array("Q", [0]) * ns,
                            array("Q", [0]) * ns, bytearray(ns), used)
    assert used == want and 0 < sum(used) < nf


def _python_top_dsos(profile, weights):
    """functions.top_dsos as it was: the Python loop's dicts (a set of mappings per
    stack, mappings in first-seen order)."""
    self_w, total_w = _python_mapping_sums(profile, weights)
    out = [{"dso": profile.mappings[m].path, "kind": profile.mappings[m].kind,
            "self": self_w.get(m, 0), "total": t} for m, t in total_w.items()]
    out.sort(key=lambda d: (-d["self"], -d["total"], d["dso"]))
    return out


@pytest.mark.parametrize("name", CAPTURES)
def test_top_dsos_equal_the_set_per_stack_sums(name):
    from analysis.aggregate.functions import top_dsos
    profile = load(str(FIX / name))
    weights = stack_weights(profile)
    assert top_dsos(profile, weights) == _python_top_dsos(profile, weights)
    half = {s: w for i, (s, w) in enumerate(weights.items()) if i % 2}
    assert top_dsos(profile, half) == _python_top_dsos(profile, half)


def test_top_dsos_ties_keep_the_order_of_the_stack_sets():
    """Two mappings of one path (a file replaced while mapped: "(deleted)") with equal
    weights, first met in one stack: the order of that stack's set of mapping ids."""
    from analysis.aggregate.functions import top_dsos
    p = Profile()
    p.event("cpu-clock")
    ms = [p.mapping(f"/lib/x{i}.so") for i in range(10)] + [p.mapping("/lib/x.so"),
                                                            p.mapping("/lib/x.so (deleted)")]
    assert p.mappings[ms[-1]].path == p.mappings[ms[-2]].path == "/lib/x.so"
    f = p.function("f", ms[0])
    locs = [p.add_location(m, 0x1000 + i, (f,)) for i, m in enumerate(ms)]
    for order in ((11, 2, 10, 3), (10, 11, 3, 2), (2, 3, 11, 10)):
        q = Profile()
        q.mappings, q.functions, q.locations = p.mappings, p.functions, p.locations
        q.event("cpu-clock")
        sid = q.stack(tuple(locs[i] for i in (0,) + order))
        q.add_sample(sid)
        weights = stack_weights(q)
        assert top_dsos(q, weights) == _python_top_dsos(q, weights)


def test_location_mappings_and_lookup_bytes():
    profile = load(str(FIX / CAPTURES[0]))
    assert StackSets(profile).locations.mapping.tolist() == \
        [loc.mapping_id for loc in profile.locations]
    assert column_ops.lookup_bytes(b"xyz", array("i", [2, 0, 2])) == bytearray(b"zxz")
    assert column_ops.lookup_bytes(b"xyz", array("i")) == bytearray()
    with pytest.raises(IndexError):
        column_ops.lookup_bytes(b"xyz", array("i", [3]))
    with pytest.raises(ValueError):
        column_ops.lookup_bytes(b"xyz", b"abc")


def test_top_ranked_ties_take_each_function_s_place_in_its_own_first_stack():
    """Two groups of ties: 12, 3, 1 and 9 first met in stack A, 5 and 17 in stack B, which
    has 9 too. 9's place in A's set orders it among A's functions, not its place in B's
    (which, taken, moved it first)."""
    from analysis.diagnosis.context import Context
    p = Profile()
    p.event("cpu-clock")
    m = p.mapping("/usr/bin/a")
    fs = [p.function(f"f{i}", m) for i in range(20)]
    locs = [p.add_location(m, 0x1000 + 16 * i, (fs[i],)) for i in range(20)]
    for ids in ((12, 3, 1, 9), (9, 5, 17), (12, 3, 1)):
        p.add_sample(p.stack(tuple(locs[i] for i in ids)))
    ctx = Context.build(p)
    stacks = dict(ctx.weights)
    got = ctx._top_ranked(stacks, lambda f: True, 6)
    assert got == _python_top(ctx, stacks, lambda f: True, 6)
    assert [f for f, _ in got] == list(set([12, 3, 1, 9])) + \
        [f for f in set([9, 5, 17]) if f != 9]


def test_empty_flag_and_column_arguments_are_let_go():
    """An empty `only` or `into` (a capture of no stacks or functions) is read and
    released like any other: the bytearray or array can grow after the call (a buffer
    still exported would refuse to)."""
    only, into = bytearray(), array("i")
    empty = Profile()
    sets = StackSets(empty)
    assert [list(a) for a in stack_sums.function_totals(sets, {}, only)] == [[]] * 4
    assert stack_walks.hot_span(sets, empty.locations, {}, 256, only) == (0, 0, 0)
    assert stack_walks.first_marked(sets, [], bytearray(), 1, into) is into
    only.append(1)
    into.append(1)
    assert (len(only), len(into)) == (1, 1)


def _python_whose(ctx, sid: int, category: str) -> str:
    """rules._whose_all's verdict for one stack as the Python walk gave it."""
    fids = ctx.funcs[sid]
    start = next((i for i, f in enumerate(fids) if category in ctx.cats[f]), None)
    if start is None:
        return "app"
    for f in fids[start + 1:]:
        if category in ctx.cats[f] or ctx.passes_through(f) or \
                not ctx.profile.functions[f].resolved:
            continue
        lib = ctx.library(f)
        return "library" if lib is not None and lib.fix and not lib.interpreter else "app"
    return "unknown"


def test_whose_in_one_pass_equals_the_walk_per_stack():
    """rules._whose_all (marks per function, stack_walks.decided_above) gives each stack the
    verdict the Python walk per stack gives it, for every category with hits, on the real-world
    captures' perf script texts (named by perf: libraries and the application told apart);
    all three verdicts occur."""
    import glob

    from analysis.diagnosis import Context, knowledge
    from analysis.diagnosis.rules import _whose_all
    files = sorted(glob.glob(str(FIX / "realworld*" / "*" / "*.script.txt.gz")))
    assert len(files) >= 20
    seen: dict[str, int] = {}
    for path in files:
        ctx = Context.build(load(path))
        for cat in knowledge.CATEGORIES:
            hits = dict(ctx.having(cat))
            if hits:
                got = _whose_all(ctx, hits, cat)
                assert got == {s: _python_whose(ctx, s, cat) for s in hits}, (path, cat)
                for v in got.values():
                    seen[v] = seen.get(v, 0) + 1
    assert set(seen) == {"app", "library", "unknown"}


def test_a_function_naming_a_mapping_it_has_not_is_a_damaged_profile():
    """A damaged saved profile's function with mapping id 2^31 - 1 (make fuzz-native,
    tests/fuzz/crashes/saved-profile-a40f5f05f425) sized split_functions' per-mapping
    table at 48 GiB (ASan's allocation-size-too-big); the diagnosis now refuses it first,
    with a sentence."""
    import io

    from analysis import profile_io
    from analysis.errors import AnalysisError
    from analysis.report import build_report
    data = (Path(__file__).parent / "fuzz" / "crashes" /
            "saved-profile-a40f5f05f425.bin").read_bytes()
    p = profile_io.load(io.BytesIO(data))
    with pytest.raises(AnalysisError, match="a function names mapping 2147483647 of 5"):
        build_report(p)


@pytest.mark.parametrize("name", NAMED + WITH_APP_CODE + [
    "realworld-holdout10/java-string-concat-in-loop/bad.perf.data",  # hot spots
    "realworld-holdout10/ruby-exceptions-control-flow/bad.perf.data"])
def test_the_report_is_the_same_a_few_stacks_and_frames_at_a_time(name, monkeypatch):
    """The passes that take stacks, items and frames a chunk at a time (to keep a large
    capture's per-frame temporaries small) give the whole report, findings and all, that
    they give in one chunk."""
    from analysis.report import build_report
    profile = load(str(FIX / name))
    whole = build_report(profile)
    for module, name_, size in ((stack_walks, "STACK_CHUNK", 3),
                                (stack_walks, "FRAME_CHUNK", 7),
                                (stack_sums, "CHUNK", 5)):
        monkeypatch.setattr(module, name_, size)
    profile._cache.clear()
    assert build_report(profile) == whole


@pytest.mark.parametrize("frame_chunk", [1 << 20, 3, 1])
def test_first_of_rows_by_offsets_is_by_rows(frame_chunk, monkeypatch):
    """first_of_csr_rows (rows given by offsets, empty rows among them) answers what
    first_of_rows (a row per entry) and a Python loop answer, a chunk of entries at a
    time as well."""
    import random

    import numpy as np
    monkeypatch.setattr(stack_walks, "FRAME_CHUNK", frame_chunk)
    rng = random.Random(7)
    for _ in range(200):
        lengths = [rng.choice((0, 0, 1, 2, 5)) for _ in range(rng.randint(0, 12))]
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        hit = np.array([rng.random() < 0.3 for _ in range(int(offsets[-1]))], dtype=bool)
        row = np.repeat(np.arange(len(lengths)), lengths)
        want = [next((i for i in range(a, b) if hit[i]), -1)
                for a, b in zip(offsets.tolist(), offsets[1:].tolist())]
        assert stack_walks.first_of_csr_rows(offsets, hit).tolist() == want
        assert stack_walks.first_of_rows(row, hit, len(lengths)).tolist() == want
