"""The differential tree: both captures in one tree of function identities, for the
differential flame graph."""
from __future__ import annotations

from ..aggregate import tree
from ..aggregate.selection import stack_weights
from ..identity import function_identity
from ..profile import Profile


def diff_tree(before: Profile, after: Profile, min_share: float = 0.001) -> dict:
    """One tree with both captures, frames keyed by function identity: `a` and `b` the two
    captures' samples, `nodes` the frames (parents first): n name, a/b samples before and
    after, sa/sb shares of each capture, p the parent's index (-1: the root). Frames below
    `min_share` of both captures are merged; stacks deeper than tree.MAX_DEPTH end in a
    "[deeper frames]" node (see aggregate.tree: flat, bounded, never recursive)."""
    paths, wa, wb = [], [], []
    for p, weights, mine, other in ((before, stack_weights(before), wa, wb),
                                    (after, stack_weights(after), wb, wa)):
        names = [function_identity(f.name) for f in p.functions]
        fns = tree.location_functions(p)
        for sid, w in weights.items():
            fids = tree.functions_of(fns, p.stacks[sid], False, tree.MAX_DEPTH + 1)
            paths.append([names[f] for f in fids])
            mine.append(w)
            other.append(0)
    ta, tb = sum(wa) or 1, sum(wb) or 1
    rows = tree.grow(paths, [wa, wb], tree.ROOT,
                     keep=lambda t: max(t[0] / ta, t[1] / tb) >= min_share,
                     order=lambda key, t: -max(round(t[0] / ta, 5), round(t[1] / tb, 5)))
    nodes = [{"n": _DIFF_NAMES.get(r.key, r.key), "a": r.total[0], "b": r.total[1],
              "sa": round(r.total[0] / ta, 5), "sb": round(r.total[1] / tb, 5),
              "p": r.parent} for r in rows]
    return {"a": nodes[0]["a"], "b": nodes[0]["b"], "nodes": nodes}


_DIFF_NAMES = {tree.ROOT: "all", tree.MERGED: "[merged small frames]",
               tree.DEEPER: "[deeper frames]"}
