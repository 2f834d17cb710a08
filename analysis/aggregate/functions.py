"""Top functions and DSOs by self and total samples."""
from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from ..location_table import all_functions, functions_by_id
from ..profile import Profile
from . import stack_sums


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
    """Each stack's function ids and its distinct ones, for one pass of analysis: the
    report's function table and the diagnosis ask them of the same stacks. No Python
    object is kept per stack (a dict of lists for the 500,000 stacks of a 2M-sample
    capture held 150 MiB): `funcs[sid]` is read from the stacks' function paths (columns
    of `sets`) when asked, and the sums are array operations on the columns of `sets`.
    Valid while the profile's locations do not change (symbolization comes before)."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.funcs = _StackFuncs(self)
        self._sets: stack_sums.StackSets | None = None

    @property
    def loc_functions(self):
        """Per location id, its function ids: a list of tuples, or for a LocationTable
        a dict filled as asked (a tuple per location is 30 MiB on a 2M-sample capture)."""
        return functions_by_id(self.profile.locations)

    @property
    def sets(self) -> stack_sums.StackSets:
        """The stacks' distinct functions and mappings as columns (made when first
        asked: a pass that only reads a few stacks never sorts them all)."""
        if self._sets is None:
            self._sets = stack_sums.StackSets(self.profile)
        return self._sets

    def fill(self, sids) -> None:
        """(Nothing to compute ahead any more; kept for callers.)"""

    def of(self, sid: int) -> list[int]:
        return self.funcs[sid]

    def distinct(self, sid: int) -> tuple[int, ...]:
        """The stack's functions, each once, in the order a set of them has (which
        rows with equal counts keep)."""
        return tuple(set(self.of(sid)))


class _StackFuncs:
    """stack id -> its function ids, leaf first (a new list each time), from the
    stacks' function paths (StackSets.paths), made when first asked."""

    __slots__ = ("_table", "_offsets", "_values")

    def __init__(self, table: StackFunctions) -> None:
        self._table = table
        self._offsets = self._values = None

    def __getitem__(self, sid: int) -> list[int]:
        if self._offsets is None:
            paths = self._table.sets.paths()
            self._offsets, self._values = paths.offsets.tolist(), paths.values
        o = self._offsets
        if not 0 <= sid < len(o) - 1:
            raise IndexError("stack id out of range")
        return self._values[o[sid]:o[sid + 1]].tolist()


def top_functions(profile: Profile, weights: dict[int, int],
                  table: StackFunctions | None = None) -> list[FunctionCost]:
    """Self: the function that holds the sampled address, as `perf report` counts it (a
    function inlined there is a frame of the flame graph and a row of the hot lines, not
    the owner of the sample). Total: every function on the stack, inline frames too,
    counted once per sample even when it recurses. Sorted by self, total, name.
    `table`: the stacks' functions when the caller has them already."""
    table = table or StackFunctions(profile)
    ids, self_a, total_a, first = ranked_arrays(profile, weights, table)
    rows = [_cost(profile, f, self_a[f], total_a[f]) for f in ids]
    return first_seen_sort(rows, _order, lambda c: c.function_id, first, weights,
                           _functions_of(profile, table))


@dataclass
class InlineViews:
    """A capture's functions counted two more ways, where it has inline frames, for
    comparisons (compare/movers.py): a change of inlining between two builds must not
    read as a change of cost.

    inline_self: the samples whose innermost function at the sampled address is this one
    (self, as perf counts it, goes to the function that holds the address); holders:
    for a function inlined somewhere, the functions holding those samples and how many
    each holds, so a comparison can take a callee out of its holder in one capture when
    the other capture calls it. physical_total: the total counting of each location only
    the holder (an inline-only function has none)."""
    inline_self: dict[int, int]
    holders: dict[int, dict[str, int]]  # by the holder's name
    physical_total: dict[int, int]


def inline_views(profile: Profile, weights: dict[int, int]) -> InlineViews | None:
    """None when no location holds inline frames (self and total say it all)."""
    loc_functions = all_functions(profile.locations)
    if not any(len(functions) > 1 for functions in loc_functions):
        return None
    pairs: dict[tuple[int, int], int] = {}  # (innermost, holder) -> id from 1
    by_pair = [(pairs.setdefault((functions[0], functions[-1]), len(pairs) + 1),)
               if len(functions) > 1 else (0,) for functions in loc_functions]
    pair_self = stack_sums.self_sums(
        stack_sums.StackSets(profile, by_pair, len(pairs) + 1), weights)
    holders: dict[int, dict[str, int]] = {}
    for (inner, holder), pid in pairs.items():
        w = pair_self.get(pid, 0)
        if w:
            row = holders.setdefault(inner, {})
            name = profile.functions[holder].name
            row[name] = row.get(name, 0) + w
    innermost_last = [functions[::-1] for functions in loc_functions]
    holder = [functions[-1:] for functions in loc_functions]
    return InlineViews(
        stack_sums.self_sums(stack_sums.StackSets(profile, innermost_last), weights),
        holders,
        stack_sums.total_sums(stack_sums.StackSets(profile, holder), weights))


def _cost(profile: Profile, fid: int, self_: int, total: int) -> FunctionCost:
    fn = profile.functions[fid]
    m = profile.mappings[fn.mapping_id]
    return FunctionCost(fid, fn.name, m.path, m.kind, self_, total)


def _order(c: FunctionCost):
    return (-c.self, -c.total, c.name)


def ranked_arrays(profile: Profile, weights: dict[int, int],
                  table: StackFunctions | None = None,
                  only: bytes | bytearray | None = None) -> tuple[array, array, array, array]:
    """(ids, self, total, first): the functions of these stacks ranked by total (largest
    first) and then by the place in `weights` of the first stack each is in (then by id),
    with their self and total weights and that place in arrays by function id
    (first_seen_sort puts ties in the order the sets of the Python loops gave). `only`
    (a flag by stack id): of these stacks the flagged ones, places still counted over
    all of `weights`."""
    table = table or StackFunctions(profile)
    return stack_sums.function_totals(table.sets, weights, only)


def first_seen_sort(items: list, key, fid, first: array, weights: dict[int, int],
                    members) -> list:
    """`items` sorted by key(item), then in the order their ids (fid(item)) were first
    met in the stacks of `weights`: by the place of the first stack each is in, and
    within one stack in the order the set of its members (members(stack id): its
    functions, or its mappings, in stack order) iterates in, which is the order a dict
    summed stack by stack over those sets had (function_sums and mapping_sums, which
    the tests keep as the reference; only the items tied in both key and first stack
    need a set)."""
    out = sorted(items, key=lambda x: (key(x), first[fid(x)]))
    ties: dict = {}
    for x in out:
        k = (key(x), first[fid(x)])
        ties[k] = ties.get(k, 0) + 1
    if any(c > 1 for c in ties.values()):
        sids, at = list(weights), {}
        for (_, place), c in ties.items():
            if c > 1:  # (an id's place in its own first stack's set, not a later one's)
                at.update((f, i) for i, f in enumerate(set(members(sids[place])))
                          if first[f] == place)
        out.sort(key=lambda x: (key(x), first[fid(x)], at.get(fid(x), 0)))
    return out


def _functions_of(profile: Profile, table: StackFunctions):
    """members for first_seen_sort: a stack's functions, leaf first."""
    return table.of


def notable_functions(profile: Profile, weights: dict[int, int], first: int,
                      min_total: float, table: StackFunctions | None = None,
                      arrays: tuple[array, array, array, array] | None = None
                      ) -> tuple[list[FunctionCost], dict | None]:
    """What top_functions(profile, weights) followed by the report's notable_functions
    give, (its first `first` rows and every other with total >= min_total, what the rest
    add up to or None), without a FunctionCost per function: the sums go into arrays by
    function id (a 2M-sample capture has 690,000 functions), and only the rows that can
    be listed are made and sorted. Rows are those that sort at or before the first-th
    row's (self, total), and those of total >= min_total; sorted as top_functions' list
    sorts them (equal rows in the order its dict had them). `arrays`: ranked_arrays of
    these weights, when the caller has them already."""
    table = table or StackFunctions(profile)
    ids, self_a, total_a, place = arrays or ranked_arrays(profile, weights, table)
    used = len(ids)
    if not used:
        return [], None
    # those at or above the first-th largest (self, total) may be among the first, and
    # those of total >= min_total are listed
    rows = [_cost(profile, f, self_a[f], total_a[f])
            for f in table_rows(ids, self_a, total_a, first, min_total)]
    rows = first_seen_sort(rows, _order, lambda c: c.function_id, place, weights,
                           _functions_of(profile, table))
    kept = [c for i, c in enumerate(rows) if i < first or c.total >= min_total]
    if len(kept) == used:
        return kept, None
    listed = {c.function_id for c in kept}
    left_self = sum(self_a) - sum(c.self for c in kept)
    max_total = max(total_a[f] for f in ids if f not in listed)
    return kept, {"functions": used - len(kept), "self": left_self, "max_total": max_total}


def table_rows(ids, self_a, total_a, first: int, min_total: float) -> list[int]:
    """The rows notable_functions can list: of `ids`, those whose (self, total) is at
    least the first-th largest such pair (all when there are no more than `first`), or
    whose total is at least min_total, in the order of ids."""
    ix = np.frombuffer(ids, dtype=np.int32) if len(ids) else np.zeros(0, dtype=np.int32)
    s = np.frombuffer(self_a, dtype=np.int64)[ix]
    t = np.frombuffer(total_a, dtype=np.int64)[ix]
    keep = t >= min_total
    if len(ix) <= first:
        keep[:] = True
    elif first > 0:
        k = np.lexsort((-t, -s))[first - 1]  # the first-th largest (self, total)
        keep |= (s > s[k]) | ((s == s[k]) & (t >= t[k]))
    return ix[keep].tolist()


def top_dsos(profile: Profile, weights: dict[int, int],
             table: StackFunctions | None = None) -> list[dict]:
    """Per DSO: self (leaf frame in it) and total (any frame in it); sorted by them and
    the path, equal rows in the order the DSOs were first met."""
    table = table or StackFunctions(profile)
    mappings = profile.mappings
    rows, self_a, total_a = ranked_mappings(
        profile, weights, table.sets, lambda m, s, t: (-s[m], -t[m], mappings[m].path))
    return [{"dso": mappings[m].path, "kind": mappings[m].kind, "self": self_a[m],
             "total": total_a[m]} for m in rows]


def ranked_mappings(profile: Profile, weights: dict[int, int],
                    sets: stack_sums.StackSets, key) -> tuple[list[int], array, array]:
    """(the mapping ids of these stacks sorted by key(id, self, total), ties in the
    order first met (first_seen_sort); self and total by mapping id)."""
    met, self_a, total_a, first = stack_sums.mapping_totals(sets, weights)
    mapping_of, stacks = sets.locations.mapping, profile.stacks
    rows = first_seen_sort(
        list(met), lambda m: key(m, self_a, total_a), int, first, weights,
        lambda sid: mapping_of[list(stacks[sid])].tolist())
    return rows, self_a, total_a


