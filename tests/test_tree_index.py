"""The prepared call tree (analysis.tree_index) gives aggregate.tree's rows exactly: on
real captures and on random ones, for whole and filtered selections, zooms along the
tree and zooms that do not exist, merged frames, the depth and row budgets, both
orientations; saved with the profile and read back, or built for a profile saved
without it."""
import io
import random

import pytest

from analysis import explore, profile_io, tree_index
from analysis.aggregate import tree as calltree
from analysis.aggregate.selection import Selection, stack_weights
from analysis.importers import load
from analysis.symbols import symbolize
from conftest import FIXTURES, PUBLIC, SPINPOOL

CAPTURES = [
    SPINPOOL / "1.0.0-idle.truth-script.txt",
    PUBLIC / "brendangregg__FlameGraph/example-perf-stacks.txt.gz",
    PUBLIC / "google__perf_data_converter/src/testdata/with-callchain.perf.data",
    FIXTURES / "offcpu/cpp-server-mutex/1.0.perf.data",
]


def _spinpool_symbolized():
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    symbolize(p, [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "1.0.0-idle.perf.data.tar.bz2"])
    return p  # inline frames: locations of more than one function


def _random_folded(tmp_path, seed: int, deep: int = 0):
    """Stacks over a few names (shared prefixes, recursion), weights from 0 (a member of
    its rows that weighs nothing) to 50, and `deep` stacks past the index's depth."""
    rng = random.Random(seed)
    names = [f"f{i}" for i in range(12)]
    lines = []
    for _ in range(400):
        frames = [rng.choice(names[:4])] + [rng.choice(names) for _ in range(rng.randrange(12))]
        lines.append(";".join(frames) + f" {rng.choice([0, 1, 1, 2, 3, 7, 50])}")
    for i in range(deep):
        lines.append(";".join(["f0"] + ["f1"] * (tree_index.DEPTH - 5 + 7 * i) + ["f2"]) +
                     " 4")
    path = tmp_path / f"random{seed}.folded"
    path.write_text("\n".join(lines) + "\n")
    return load(path)


def _same(a, b):
    assert (a is None) == (b is None)
    if a is not None:
        assert a.path == b.path
        assert a.rows == b.rows


def _prefixes(rows, rng, count=12):
    """Zooms the page can ask for: along rows of the tree, and some it cannot have."""
    out = [()]
    for _ in range(count):
        i, keys = rng.randrange(len(rows)), []
        while rows[i].parent >= 0:
            keys.append(rows[i].key)
            i = rows[i].parent
        if all(k >= 0 for k in keys):
            out.append(tuple(reversed(keys)))
    out += [(10**6,), (out[-1] + (out[-1][:1] or (0,)) * 2)]
    return out


def _selections(p):
    sels = [Selection()]
    tids = sorted(set(p.s_tid))
    if len(tids) > 1:
        sels.append(Selection(tids=frozenset(tids[::2])))
    times = sorted(t for t in p.s_time if t == t)
    if times:
        sels.append(Selection(start_s=times[0], end_s=times[len(times) // 2]))
    return sels


def _merge(total):
    return max(1, int(total / 50))


def _weights(p):
    """(weights, key naming them when whole): of the selections, and of a third of the
    stacks left out, as a filter of threads or time would leave them."""
    for sel in _selections(p):
        yield stack_weights(p, sel), sel if sel == Selection() else None
    yield {sid: w for sid, w in stack_weights(p).items() if sid % 3}, None


def _check(p, rng, budgets=((calltree.MAX_DEPTH, calltree.MAX_NODES), (3, 25))):
    compared = 0
    for w, whole in _weights(p):
        for leaf_first in (False, True):
            ref_grow = calltree.bottom_up if leaf_first else calltree.top_down
            got_grow = tree_index.bottom_up if leaf_first else tree_index.top_down
            for limit_of in (calltree._no_merge, _merge):
                for max_depth, max_nodes in budgets:
                    full = ref_grow(p, w, (), limit_of, max_depth, max_nodes)
                    for prefix in _prefixes(full.rows, rng):
                        _same(got_grow(p, w, prefix, limit_of, max_depth, max_nodes,
                                       whole=whole),
                              ref_grow(p, w, prefix, limit_of, max_depth, max_nodes))
                        compared += 1
    return compared


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_the_same_rows_as_the_stacks_give(path):
    assert _check(load(path), random.Random(path.name)) > 100


def test_inline_frames_of_a_symbolized_capture():
    assert _check(_spinpool_symbolized(), random.Random(7)) > 100


@pytest.mark.parametrize("seed", range(6))
def test_random_captures(tmp_path, seed):
    p = _random_folded(tmp_path, seed)
    assert any(c == 0 for c in p.s_count)
    assert _check(p, random.Random(seed)) > 100


def test_stacks_deeper_than_the_index(tmp_path):
    """Paths are cut at DEPTH frames: zooms within MAX_DEPTH of the cut are still read
    off the index, deeper ones grown from the stacks; both as aggregate.tree has them."""
    p = _random_folded(tmp_path, 11, deep=3)
    assert max(map(len, p.stacks)) > tree_index.DEPTH
    w = stack_weights(p)
    f0, f1 = (next(f.id for f in p.functions if f.name == n) for n in ("f0", "f1"))
    for n in (0, 1, 500, calltree.MAX_DEPTH, calltree.MAX_DEPTH + 1, calltree.MAX_DEPTH + 2,
              tree_index.DEPTH - 4):
        prefix = (f0,) + (f1,) * n
        _same(tree_index.top_down(p, w, prefix), calltree.top_down(p, w, prefix))
        _same(tree_index.top_down(p, w, prefix, max_depth=3),
              calltree.top_down(p, w, prefix, max_depth=3))
    _check(p, random.Random(3))


@pytest.mark.parametrize("depth", [1, 2, 3, 6])
def test_an_index_cut_short(tmp_path, depth):
    """An index of a few levels answers every tree it holds: a zoom and the levels below
    it within the cut, the cut stacks counted on as members of their rows."""
    p = _random_folded(tmp_path, 20 + depth)
    w = stack_weights(p)
    rng = random.Random(depth)
    for leaf_first in (False, True):
        index = tree_index.build(p, leaf_first, depth=depth)
        s = tree_index.sums(index, w)
        ref_grow = calltree.bottom_up if leaf_first else calltree.top_down
        full = ref_grow(p, w, (), _merge, depth - 1)
        for prefix in _prefixes(full.rows, rng, 30):
            for max_depth in range(depth - len(prefix)):
                _same(tree_index.read(index, s, prefix, _merge, max_depth, 10**6),
                      ref_grow(p, w, prefix, _merge, max_depth))


def _saved(p) -> bytes:
    buf = io.BytesIO()
    profile_io.dump(p, buf)
    return buf.getvalue()


def test_the_saved_profile_holds_the_index():
    p = _spinpool_symbolized()
    built = tree_index.build(p, False)
    loaded = profile_io.load(io.BytesIO(_saved(p)))
    held = tree_index.index_of(loaded, False)
    assert (held.func, held.end, held.node_of, held.depth) == \
        (built.func, built.end, built.node_of, built.depth)
    q = explore.Query()
    assert explore.flame(loaded, q) == explore.flame(p, q)


def test_a_profile_saved_without_the_index(tmp_path):
    """Files saved before the index (and the off-CPU fixture's, whose switch columns
    come first) load, and build it when a flame graph is first asked for."""
    for p in (_spinpool_symbolized(), load(FIXTURES / "offcpu/cpp-server-mutex/1.0.perf.data")):
        data = _saved(p)
        old = profile_io.load(io.BytesIO(data[:data.index(b"TREEIDX1")]))
        assert ("tree-index", False) not in old._cache
        new = profile_io.load(io.BytesIO(data))
        assert len(old.switches) == len(new.switches) == len(p.switches)
        for q in (explore.Query(), explore.Query(invert=True)):
            assert explore.flame(old, q) == explore.flame(new, q)


def test_a_damaged_index_is_not_kept(tmp_path):
    p = _random_folded(tmp_path, 1)
    good = tree_index.build(p, False)
    looping = tree_index.TreeIndex(False, good.depth, good.func,
                                   type(good.end)("i", [0] * len(good.end)), good.node_of)
    assert not tree_index.keep(p, looping)  # a subtree ending before its node
    short = tree_index.TreeIndex(False, good.depth, good.func, good.end, good.node_of[:-1])
    assert not tree_index.keep(p, short)  # a stack without a node
    assert tree_index.keep(p, good)


def test_the_compiled_build_is_the_python_one(tmp_path):
    """tree_index.build (arrays) against build_py: the same nodes, ends and stack nodes,
    both ways, on the captures, the symbolized one (inline frames), random ones with
    stacks past the index's depth, cut at a few depths; and None past the node budget."""
    profiles = [load(path) for path in CAPTURES] + [_spinpool_symbolized()] + \
        [_random_folded(tmp_path, seed, deep=seed % 3) for seed in range(4)]
    for p in profiles:
        for leaf_first in (False, True):
            for depth in (tree_index.DEPTH, 1, 3, 0):
                got = tree_index.build(p, leaf_first, depth)
                assert got == tree_index.build_py(p, leaf_first, depth)
                assert len(got.node_of) == len(p.stacks)
    p = profiles[0]
    nodes = sum(len(calltree.functions_of(calltree.location_functions(p), s, False,
                                          tree_index.DEPTH)) for s in p.stacks)
    for budget, built in ((nodes, False), (nodes + 1, True)):
        tree_index.MAX_INDEX_NODES, saved = budget, tree_index.MAX_INDEX_NODES
        try:
            assert (tree_index.build(p, False) is not None) == built
            assert (tree_index.build_py(p, False) is not None) == built
        finally:
            tree_index.MAX_INDEX_NODES = saved
