"""Call trees: top-down (the flame graph), bottom-up (inverted), callers and callees of one
function (the sandwich view), as they are shown.

perf records stacks up to 655,360 frames deep, and a merged tree of such stacks would be
a node per frame: hundreds of megabytes before anything is drawn. So a tree here is grown
level by level from the stacks through each node, keeping only what is shown: children
too small to see (below `limit` samples) become one merged row, and below `max_depth`
levels (or past `max_nodes` rows) what lies deeper is one "deeper" row to zoom into. The
work is proportional to the rows shown times the stacks through them, never to the depth
of the deepest stack, and nothing recurses, so no depth overflows Python's stack.

The result is a flat list of rows, parents before children, each naming its parent's
index: JSON encoders and browsers read it at any depth, where a nested document of a few
hundred levels already passes their nesting limits.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Hashable, Sequence

from ..location_table import all_functions
from ..profile import Profile

#: keys of the rows that stand for no function
ROOT, MERGED, DEEPER = -1, -2, -3
#: levels shown below a tree's root: deeper stacks end in a DEEPER row (zoom to see more);
#: 1,000 rows of 18 px fit a canvas (32,767 px at most) up to device pixel ratio 1.8
MAX_DEPTH = 1000
#: rows per tree, whatever its shape: a browser draws some 100,000 frames smoothly
MAX_NODES = 100_000


@dataclass(slots=True)
class Row:
    key: Hashable  # a function id (a name when two profiles are compared), or ROOT, ...
    parent: int  # index of the parent row; -1 for the root
    total: list[int]  # per weight column: samples of the stacks through this frame
    self: list[int]  # ... of the stacks ending in it


def grow(paths: Sequence[Sequence], columns: Sequence[Sequence[int]], root_key: Hashable,
         keep: Callable[[list[int]], bool], order: Callable[[Hashable, list[int]], tuple],
         max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
         self_at_end: bool = True) -> list[Row]:
    """The tree of `paths` (keys from the root's child outwards), each path weighing
    `columns[c][i]` in column c. A child whose totals `keep` refuses joins its siblings'
    MERGED row; children are sorted by `order(key, totals)`. `self_at_end`: a path
    ending at a row counts as that row's self weight. Rows come breadth first."""
    ncol = len(columns)
    everyone = range(len(paths))
    rows = [Row(root_key, -1, [sum(col) for col in columns], [0] * ncol)]
    level = [(0, everyone)]
    depth = 0
    while level:
        following = []
        for ix, members in level:
            row = rows[ix]
            groups: defaultdict = defaultdict(list)
            for m in members:
                path = paths[m]
                if len(path) > depth:
                    groups[path[depth]].append(m)
                elif self_at_end:
                    for c in range(ncol):
                        row.self[c] += columns[c][m]
            if not groups:
                continue
            if depth >= max_depth or len(rows) >= max_nodes:
                below = _totals(columns, [m for ms in groups.values() for m in ms])
                rows.append(Row(DEEPER, ix, below, list(below)))
                continue
            kids = [(key, _totals(columns, ms), ms) for key, ms in groups.items()]
            kids.sort(key=lambda k: order(k[0], k[1]))
            hidden = [0] * ncol
            for key, total, ms in kids:
                if keep(total):
                    following.append((len(rows), ms))
                    rows.append(Row(key, ix, total, [0] * ncol))
                else:
                    hidden = [h + t for h, t in zip(hidden, total)]
            if any(hidden):
                rows.append(Row(MERGED, ix, hidden, list(hidden)))
        level = following
        depth += 1
    return rows


def _totals(columns: Sequence[Sequence[int]], members: list[int]) -> list[int]:
    return [sum(map(col.__getitem__, members)) for col in columns]


def location_functions(profile: Profile) -> list[tuple[int, ...]]:
    """Per location id, its function ids (leaf-most inline frame first): read once per
    tree, so a stack's functions come out of C loops (functions_of)."""
    return all_functions(profile.locations)


def functions_of(fns: list[tuple[int, ...]], stack: tuple[int, ...], leaf_first: bool,
                 limit: int | None = None) -> list[int]:
    """Function ids of a stack (inline frames expanded, `fns` from location_functions)
    from the leaf or from the root, the first `limit` of them only: a 655,360-frame
    stack costs what a view reads."""
    if limit is not None and len(stack) > limit:  # a location has one function or more
        stack = stack[:limit] if leaf_first else stack[-limit:]
    out = list(chain.from_iterable(map(fns.__getitem__, stack)))
    if not leaf_first:
        out.reverse()
    if limit is not None:
        del out[limit:]
    return out


def _paths(profile: Profile, leaf_first: bool, limit: int) -> list[list[int]]:
    """Every stack's function ids in tree order, cut at `limit`: kept on the profile for
    the unzoomed trees (every page load asks for one; a capture of 86,487 stacks spent
    0.3 s of its 0.5 s flame graph here), made afresh for the deeper limits of zooms."""
    def compute() -> list[list[int]]:
        fns = location_functions(profile)
        return [functions_of(fns, stack, leaf_first, limit) for stack in profile.stacks]
    if limit == MAX_DEPTH + 1:
        return profile.memo(("tree-paths", leaf_first), compute)
    return compute()


def _by_samples(key: Hashable, total: list[int]) -> tuple:
    return -total[0], key


@dataclass
class Tree:
    rows: list[Row]
    #: samples through each frame of the requested prefix (the zoom's breadcrumbs)
    path: list[int]


def _no_merge(total: int) -> int:
    return 0


def _tree(profile: Profile, weights: dict[int, int], leaf_first: bool,
          prefix: Sequence[int], limit_of: Callable[[int], int], max_depth: int,
          max_nodes: int) -> Tree | None:
    prefix = list(prefix)
    n = len(prefix)
    paths, ws = [], []
    path_totals = [0] * n
    of_stack = _paths(profile, leaf_first, n + max_depth + 1)
    for sid, w in weights.items():
        funcs = of_stack[sid]
        same = 0
        while same < n and same < len(funcs) and funcs[same] == prefix[same]:
            path_totals[same] += w
            same += 1
        if same == n:
            paths.append(funcs[n:])
            ws.append(w)
    if n and not paths:
        return None
    limit = limit_of(sum(ws))
    rows = grow(paths, [ws], prefix[-1] if n else ROOT, lambda t: t[0] >= limit,
                _by_samples, max_depth, max_nodes)
    return Tree(rows, path_totals)


def top_down(profile: Profile, weights: dict[int, int], prefix: Sequence[int] = (),
             limit_of: Callable[[int], int] = _no_merge, max_depth: int = MAX_DEPTH,
             max_nodes: int = MAX_NODES) -> Tree | None:
    """Root-first merged stacks (the flame graph), below the frames `prefix` names from
    the root (a zoom); None when no stack starts with `prefix`. `limit_of(total)`: the
    samples below which a child is merged, for a tree of that many samples."""
    return _tree(profile, weights, False, prefix, limit_of, max_depth, max_nodes)


def bottom_up(profile: Profile, weights: dict[int, int], prefix: Sequence[int] = (),
              limit_of: Callable[[int], int] = _no_merge, max_depth: int = MAX_DEPTH,
              max_nodes: int = MAX_NODES) -> Tree | None:
    """Leaf-first merged stacks: which callers the self time came through."""
    return _tree(profile, weights, True, prefix, limit_of, max_depth, max_nodes)


def sandwich(profile: Profile, weights: dict[int, int], function_id: int,
             limit_of: Callable[[int], int] = _no_merge, max_depth: int = MAX_DEPTH,
             max_nodes: int = MAX_NODES) -> tuple[list[Row], list[Row]]:
    """(callers tree rooted at the function, callees tree rooted at it). Each sample is
    split at the function's outermost occurrence so recursion is not counted twice."""
    up, down, ws = [], [], []
    fns = location_functions(profile)
    for sid, w in weights.items():
        funcs = functions_of(fns, profile.stacks[sid], True)
        try:
            at = len(funcs) - 1 - funcs[::-1].index(function_id)  # outermost
        except ValueError:
            continue
        up.append(funcs[at + 1:at + 2 + max_depth])  # towards the root
        down.append(funcs[:at][::-1][:max_depth + 1])  # towards the leaf
        ws.append(w)
    limit = limit_of(sum(ws))
    keep = lambda t: t[0] >= limit  # noqa: E731
    callers = grow(up, [ws], function_id, keep, _by_samples, max_depth, max_nodes,
                   self_at_end=False)
    callees = grow(down, [ws], function_id, keep, _by_samples, max_depth, max_nodes)
    return callers, callees

