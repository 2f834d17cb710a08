"""Top functions and DSOs by self and total samples."""
from __future__ import annotations

from dataclasses import dataclass

from ..profile import Profile
from . import _weigh


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


class StackFunctions:
    """Each stack's function ids and its distinct ones, computed once per stack for one
    pass of analysis: the report's function table and the diagnosis ask them of the same
    100,000 stacks of a diverse capture. Valid while the profile's locations do not
    change (symbolization comes before)."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.funcs: dict[int, list[int]] = {}
        self.distincts: dict[int, tuple[int, ...]] = {}
        self.loc_functions: list[tuple[int, ...]] | None = None

    def fill(self, sids) -> None:
        """Compute those of these stacks not known yet, in one compiled pass."""
        if self.loc_functions is None:
            self.loc_functions = [loc.functions for loc in self.profile.locations]
        _weigh.stack_functions(sids, self.profile.stacks, self.loc_functions, self.funcs,
                               self.distincts)

    def of(self, sid: int) -> list[int]:
        f = self.funcs.get(sid)
        if f is None:
            self.fill((sid,))
            f = self.funcs[sid]
        return f

    def distinct(self, sid: int) -> tuple[int, ...]:
        """The stack's functions, each once, in the order a set of them has (which
        rows with equal counts keep)."""
        d = self.distincts.get(sid)
        if d is None:
            self.fill((sid,))
            d = self.distincts[sid]
        return d


def top_functions(profile: Profile, weights: dict[int, int],
                  table: StackFunctions | None = None) -> list[FunctionCost]:
    """Self: the function that holds the sampled address, as `perf report` counts it (a
    function inlined there is a frame of the flame graph and a row of the hot lines, not
    the owner of the sample). Total: every function on the stack, inline frames too,
    counted once per sample even when it recurses. Sorted by self, total, name.
    `table`: the stacks' functions when the caller has them already."""
    table = table or StackFunctions(profile)
    table.fill(weights)
    self_w, total_w = _weigh.function_sums(weights, profile.stacks, table.loc_functions,
                                           table.distincts)
    out = []
    for fid, total in total_w.items():
        fn = profile.functions[fid]
        m = profile.mappings[fn.mapping_id]
        out.append(FunctionCost(fid, fn.name, m.path, m.kind, self_w.get(fid, 0), total))
    out.sort(key=lambda c: (-c.self, -c.total, c.name))
    return out


def top_dsos(profile: Profile, weights: dict[int, int]) -> list[dict]:
    """Per DSO: self (leaf frame in it) and total (any frame in it)."""
    self_w, total_w = _weigh.mapping_sums(weights, profile.stacks,
                                          [loc.mapping_id for loc in profile.locations])
    out = [{"dso": profile.mappings[m].path, "kind": profile.mappings[m].kind,
            "self": self_w.get(m, 0), "total": t} for m, t in total_w.items()]
    out.sort(key=lambda d: (-d["self"], -d["total"], d["dso"]))
    return out
