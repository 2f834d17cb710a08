"""Top functions and DSOs by self and total samples."""
from __future__ import annotations

from dataclasses import dataclass

from ..profile import Profile


@dataclass
class FunctionCost:
    function_id: int
    name: str
    dso: str
    kind: str
    self: int
    total: int


def stack_functions(profile: Profile, stack: tuple[int, ...]) -> list[int]:
    """Function ids of a stack, leaf first, inline frames expanded."""
    locs = profile.locations
    out: list[int] = []
    for loc in stack:
        out.extend(locs[loc].functions)
    return out


def top_functions(profile: Profile, weights: dict[int, int]) -> list[FunctionCost]:
    """Self: the function that holds the sampled address, as `perf report` counts it (a
    function inlined there is a frame of the flame graph and a row of the hot lines, not
    the owner of the sample). Total: every function on the stack, inline frames too,
    counted once per sample even when it recurses. Sorted by self, total, name."""
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
    out = []
    for fid, total in total_w.items():
        fn = profile.functions[fid]
        m = profile.mappings[fn.mapping_id]
        out.append(FunctionCost(fid, fn.name, m.path, m.kind, self_w.get(fid, 0), total))
    out.sort(key=lambda c: (-c.self, -c.total, c.name))
    return out


def top_dsos(profile: Profile, weights: dict[int, int]) -> list[dict]:
    """Per DSO: self (leaf frame in it) and total (any frame in it)."""
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
    out = [{"dso": profile.mappings[m].path, "kind": profile.mappings[m].kind,
            "self": self_w.get(m, 0), "total": t} for m, t in total_w.items()]
    out.sort(key=lambda d: (-d["self"], -d["total"], d["dso"]))
    return out
