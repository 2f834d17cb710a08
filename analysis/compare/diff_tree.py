"""The differential tree: both captures in one tree of function identities, for the
differential flame graph."""
from __future__ import annotations

from ..aggregate import tree
from ..aggregate.selection import stack_weights
from ..identity import address_like, function_identity, library_identity
from ..location_table import all_functions
from ..profile import Profile


def diff_tree(before: Profile, after: Profile, min_share: float = 0.001) -> dict:
    """One tree with both captures, frames keyed by function identity: `a` and `b` the two
    captures' samples, `nodes` the frames (parents first): n name, a/b samples before and
    after, sa/sb shares of each capture, p the parent's index (-1: the root). Frames below
    `min_share` of both captures are merged; stacks deeper than tree.MAX_DEPTH end in a
    "[deeper frames]" node (see aggregate.tree: flat, bounded, never recursive). Inline
    frames are counted as the movers count them (movers.py): in their holder, except a
    function compiled on its own in one capture and only inlined in the other; the
    addresses no symbol names in a file only one capture has are one frame per library
    ("[no symbol in gateway]"), as in the movers."""
    paths, wa, wb = [], [], []
    changed = _inline_changes(before, after)
    shared = {m.path for m in before.mappings} & {m.path for m in after.mappings}
    for p, weights, mine, other in ((before, stack_weights(before), wa, wb),
                                    (after, stack_weights(after), wb, wa)):
        names = _names(p, shared)
        fns = _frames(p, changed)
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


def _inline_changes(before: Profile, after: Profile) -> set[str]:
    """Function identities holding addresses in one capture and only inlined in the
    other (movers.inline_changes, from the profiles)."""
    (ca, ia), (cb, ib) = _compiled(before), _compiled(after)
    return (ia - ca) & cb | (ib - cb) & ca


def _compiled(profile: Profile) -> tuple[set[str], set[str]]:
    """(identities holding an address, identities inlined at one)."""
    compiled, inlined = set(), set()
    names = profile.functions
    for functions in all_functions(profile.locations):
        compiled.add(function_identity(names[functions[-1]].name))
        inlined.update(function_identity(names[f].name) for f in functions[:-1])
    return compiled, inlined


def _frames(profile: Profile, changed: set[str]) -> list[tuple[int, ...]]:
    """Per location, the function holding the address, and before it the functions
    inlined there whose inlining changed (`changed`)."""
    out = tree.location_functions(profile)
    if not any(len(f) > 1 for f in out):
        return out
    names = profile.functions
    return [f if len(f) == 1 else tuple(
        x for x in f[:-1] if function_identity(names[x].name) in changed) + f[-1:]
        for f in out]


def _names(profile: Profile, shared: set[str]) -> list[str]:
    """Each function's frame name: its identity, or for an address no symbol names in a
    file the other capture does not have, its library's (another build places the same
    code at other addresses)."""
    out = []
    for f in profile.functions:
        path = profile.mappings[f.mapping_id].path
        out.append(f"[no symbol in {library_identity(path)}]"
                   if address_like(f.name) and path not in shared else function_identity(f.name))
    return out
