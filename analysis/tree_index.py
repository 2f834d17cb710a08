"""A profile's call tree prepared once, so each flame graph request reads the rows it
shows off it instead of regrouping every stack level by level (issue 16: 96,899 distinct
stacks took 0.6 s a request in aggregate.tree.grow, where the answer has 1,183 rows).

The tree of every stack's function path (root first, or leaf first for the inverted
graph), cut at `DEPTH` levels, is kept as arrays in depth-first preorder, children in
function id order: each node's function and the index one past its subtree. A subtree
is then a contiguous range of nodes, so the weight of a selection through any node is
the difference of two prefix sums of the weights of the stacks ending at each node, and
a request costs the children of the rows it shows, not the stacks through them.

`top_down` and `bottom_up` give exactly aggregate.tree's rows (tests/test_tree_index.py
compares them on corpus captures and random ones, for selections, zooms and budgets); a
zoom deeper than the index holds is left to aggregate.tree, as is the sandwich view.
The index is saved with the profile (profile_io), so a web process that loads a profile
does not build it; a profile saved without one builds it on first use.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import accumulate
from operator import gt
from typing import Callable, Sequence

import numpy as np

from .aggregate import tree as calltree
from .aggregate.stack_sums import StackSets
from .aggregate.tree import DEEPER, MAX_DEPTH, MAX_NODES, MERGED, ROOT, Row, Tree
from .column_ops import unique_inverse
from .profile import Profile

#: levels below the root the index holds: every zoom up to MAX_DEPTH + 1 frames deep
#: (the frames a flame graph shows) reads the index, deeper ones the stacks
DEPTH = 2 * (MAX_DEPTH + 1)
#: an index of more nodes is not built (memory: 8 bytes a node, 16 more in a request)
MAX_INDEX_NODES = 8_000_000


@dataclass(frozen=True)
class TreeIndex:
    leaf_first: bool  # the inverted (bottom-up) tree
    depth: int  # levels held below the root; deeper frames are cut off
    func: array  # per node, its function id (-1 for the root, node 0)
    end: array  # per node, the index one past its subtree
    node_of: array  # per stack id, the node its (cut) path ends at

    def nbytes(self) -> int:
        return sum(len(a) * a.itemsize for a in (self.func, self.end, self.node_of))


def build(profile: Profile, leaf_first: bool, depth: int = DEPTH) -> TreeIndex | None:
    """The index of `profile`'s stacks; None when it would pass MAX_INDEX_NODES. Built
    as a trie level by level (each level's children are the distinct (parent, function)
    keys of the paths that reach it, sorted), then numbered in preorder from the
    subtrees' sizes: the paths are never compared as lists."""
    paths = StackSets(profile).paths()
    n = paths.rows
    length = np.minimum(paths.lengths(), depth)
    if int(length.sum()) >= MAX_INDEX_NODES:  # an upper bound of the nodes
        return None
    span = len(profile.functions) + 1
    parents, funcs, levels = [np.zeros(1, np.int64)], [np.full(1, -1, np.int64)], []
    at = np.zeros(n, dtype=np.int64)  # per stack, the node (in order made) it reached
    alive = np.flatnonzero(length > 0)
    made, level = 1, 0
    while alive.size:
        pos = paths.offsets[alive] + level if leaf_first else \
            paths.offsets[alive + 1] - 1 - level
        # (sorted: siblings together, by function id)
        keys, child = unique_inverse(at[alive] * span + paths.values[pos])
        at[alive] = made + child
        parents.append(keys // span)
        funcs.append(keys % span)
        levels.append(made)
        made += len(keys)
        level += 1
        alive = alive[length[alive] > level]
    parent, func = np.concatenate(parents), np.concatenate(funcs)
    levels.append(made)
    size = np.ones(made, dtype=np.int64)
    for lo, hi in zip(levels[-2::-1], levels[:0:-1]):  # deepest level first
        np.add.at(size, parent[lo:hi], size[lo:hi])
    pre = np.zeros(made, dtype=np.int64)
    for lo, hi in zip(levels[:-1], levels[1:]):
        sz, par = size[lo:hi], parent[lo:hi]
        before = np.cumsum(sz) - sz  # the sizes of the level's nodes before each
        first = np.ones(hi - lo, dtype=bool)
        np.not_equal(par[1:], par[:-1], out=first[1:])
        group = np.cumsum(first) - 1
        pre[lo:hi] = pre[par] + 1 + before - before[np.flatnonzero(first)][group]
    out_func = np.empty(made, dtype=np.int32)
    out_end = np.empty(made, dtype=np.int32)
    out_func[pre], out_end[pre] = func, pre + size
    return TreeIndex(leaf_first, depth, _ints(out_func), _ints(out_end),
                     _ints(pre[at].astype(np.int32)))


def _ints(values: np.ndarray) -> array:
    out = array("i")
    out.frombytes(values.astype(np.int32).tobytes())
    return out


def build_py(profile: Profile, leaf_first: bool, depth: int = DEPTH) -> TreeIndex | None:
    """build in Python, sorting the paths as lists: the reference the array one is
    tested against."""
    fns = calltree.location_functions(profile)
    paths = [calltree.functions_of(fns, s, leaf_first, depth) for s in profile.stacks]
    if sum(map(len, paths)) >= MAX_INDEX_NODES:  # an upper bound of the nodes
        return None
    func = array("i", [-1])
    end = [0]
    node_of = array("i", bytes(4 * len(paths)))
    chain = [0]  # the nodes of the previous path, chain[k] at depth k
    prev: list[int] = []
    for sid in sorted(range(len(paths)), key=paths.__getitem__):  # preorder
        path = paths[sid]
        same, most = 0, min(len(path), len(prev))
        while same < most and path[same] == prev[same]:
            same += 1
        for node in chain[same + 1:]:
            end[node] = len(func)
        del chain[same + 1:]
        for f in path[same:]:
            chain.append(len(func))
            func.append(f)
            end.append(0)
        node_of[sid] = chain[len(path)]
        prev = path
    for node in chain:
        end[node] = len(func)
    return TreeIndex(leaf_first, depth, func, array("i", end), node_of)


def index_of(profile: Profile, leaf_first: bool) -> TreeIndex | None:
    """The profile's index, as loaded with it or built once."""
    return profile.memo(("tree-index", leaf_first), lambda: build(profile, leaf_first))


def keep(profile: Profile, index: TreeIndex) -> bool:
    """Hold an index read from a saved profile as the profile's own, if it can be one:
    every stack has a node and every subtree ends past its node and within the arrays,
    so reading it always ends, whatever the file held (else it is built when asked)."""
    size = len(index.func)
    if not (size and len(index.end) == size and len(index.node_of) == len(profile.stacks)
            and index.depth >= 1 and max(index.end) <= size
            and all(map(gt, index.end, range(size)))
            and (not index.node_of or 0 <= min(index.node_of) <= max(index.node_of) < size)):
        return False
    profile.memo(("tree-index", index.leaf_first), lambda: index)
    return True


def held_bytes(profile: Profile) -> int:
    """Memory the profile's indexes hold, with the sums of one selection each (what a
    page load adds), for the estimate that bounds the cache of profiles."""
    held = 0
    for leaf_first in (False, True):
        entry = profile._cache.get(("tree-index", leaf_first))  # memo's (stamp, value)
        if entry is not None and entry[1] is not None:
            held += entry[1].nbytes() + 16 * (len(entry[1].func) + 1)
    return held


@dataclass(frozen=True)
class Sums:
    """Prefix sums over the nodes of one selection's weights and stack counts: node v's
    subtree weighs w[end[v]] - w[v], its own stacks w[v + 1] - w[v] (counts alike: a
    stack of weight 0 is still a member of its rows, as in aggregate.tree.grow)."""
    w: Sequence[int]
    n: Sequence[int]


def sums(index: TreeIndex, weights: dict[int, int]) -> Sums:
    size = len(index.func)
    own, count = [0] * size, [0] * size
    node_of = index.node_of
    for sid, w in weights.items():
        v = node_of[sid]
        own[v] += w
        count[v] += 1
    return Sums(_packed(accumulate(own, initial=0)), _packed(accumulate(count, initial=0)))


def _packed(values) -> Sequence[int]:
    values = list(values)
    try:
        return array("q", values)  # a third of a list's memory, kept with the profile
    except OverflowError:  # weights past 2**63 (periods): a list of Python ints
        return values


def _sums_of(profile: Profile, index: TreeIndex, weights: dict[int, int],
             whole: object | None) -> Sums:
    """`whole`: a key naming the weights when they are the profile's memoised ones (an
    unfiltered selection), so their sums are made once too."""
    if whole is None:
        return sums(index, weights)
    return profile.memo(("tree-index-sums", index.leaf_first, whole),
                        lambda: sums(index, weights))


def top_down(profile: Profile, weights: dict[int, int], prefix: Sequence[int] = (),
             limit_of: Callable[[int], int] = calltree._no_merge,
             max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
             whole: object | None = None) -> Tree | None:
    """aggregate.tree.top_down's tree, read off the index where it holds the zoom."""
    return _tree(profile, weights, False, prefix, limit_of, max_depth, max_nodes, whole)


def bottom_up(profile: Profile, weights: dict[int, int], prefix: Sequence[int] = (),
              limit_of: Callable[[int], int] = calltree._no_merge,
              max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
              whole: object | None = None) -> Tree | None:
    """aggregate.tree.bottom_up's tree, read off the index where it holds the zoom."""
    return _tree(profile, weights, True, prefix, limit_of, max_depth, max_nodes, whole)


def _tree(profile: Profile, weights: dict[int, int], leaf_first: bool,
          prefix: Sequence[int], limit_of: Callable[[int], int], max_depth: int,
          max_nodes: int, whole: object | None) -> Tree | None:
    index = index_of(profile, leaf_first) if len(prefix) + max_depth < DEPTH else None
    if index is None or len(prefix) + max_depth >= index.depth:
        grow = calltree.bottom_up if leaf_first else calltree.top_down
        return grow(profile, weights, prefix, limit_of, max_depth, max_nodes)
    s = _sums_of(profile, index, weights, whole)
    return read(index, s, prefix, limit_of, max_depth, max_nodes)


def read(index: TreeIndex, s: Sums, prefix: Sequence[int], limit_of: Callable[[int], int],
         max_depth: int, max_nodes: int) -> Tree | None:
    """The rows aggregate.tree.grow makes from the stacks below `prefix`, in its order:
    breadth first, a row's kept children by weight then function id, then its MERGED
    row; DEEPER below `max_depth` levels or past `max_nodes` rows."""
    func, end, w, n = index.func, index.end, s.w, s.n
    at, path = 0, []
    for f in prefix:
        at = _child(index, at, f)
        if at < 0:
            return None
        path.append(w[end[at]] - w[at])
    if prefix and n[end[at]] == n[at]:  # no stack of the selection starts so
        return None
    total = w[end[at]] - w[at]
    limit = limit_of(total)
    rows = [Row(prefix[-1] if prefix else ROOT, -1, [total], [0])]
    level = [(0, at)]
    depth = 0
    while level:
        following = []
        for ix, v in level:
            row = rows[ix]
            stop = end[v]
            row.self[0] += w[v + 1] - w[v]
            if n[stop] - n[v + 1] == 0:  # no member goes on below this row
                continue
            if depth >= max_depth or len(rows) >= max_nodes:
                below = w[stop] - w[v + 1]
                rows.append(Row(DEEPER, ix, [below], [below]))
                continue
            kept = []  # (-total, function, node): heaviest first
            c = v + 1
            if limit > 0:  # a child heavy enough to keep has stacks of the selection
                while c < stop:
                    after = end[c]
                    if w[after] - w[c] >= limit:
                        kept.append((w[c] - w[after], func[c], c))
                    c = after
            else:  # every child the selection goes through
                while c < stop:
                    after = end[c]
                    if n[after] != n[c]:
                        kept.append((w[c] - w[after], func[c], c))
                    c = after
            kept.sort()
            hidden = w[stop] - w[v + 1]  # the children's weight, less the kept ones'
            for negative, f, c in kept:
                following.append((len(rows), c))
                rows.append(Row(f, ix, [-negative], [0]))
                hidden += negative
            if hidden:  # the children left out, together
                rows.append(Row(MERGED, ix, [hidden], [hidden]))
        level = following
        depth += 1
    return Tree(rows, path)


def _child(index: TreeIndex, v: int, f: int) -> int:
    """The child of node v for function f, or -1; children are in function id order."""
    func, end = index.func, index.end
    c, stop = v + 1, end[v]
    while c < stop:
        g = func[c]
        if g == f:
            return c
        if g > f:
            return -1
        c = end[c]
    return -1
