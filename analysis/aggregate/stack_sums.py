"""Per-function and per-DSO sums over stacks, as array operations on the profile's
columns (analysis.profile_columns).

Self goes to what holds the sampled address (the owner function of the leaf location,
its mapping); total to each function or mapping on the stack once, however often it
recurses. Each stack's distinct members are computed once per pass (a sort of
(stack, member) keys), so a sum over any subset of the stacks is a gather and an
`np.add.at` (exact int64, where a float bincount would round past 2^53).

Ties keep what the Python loops these replace gave: the callers order rows by weight,
then by the place in `weights` of the first stack a member is in (`first` here), then as
a set of that stack's members iterates (functions.first_seen_sort).
"""
from __future__ import annotations

from array import array

import numpy as np

from ..column_ops import row_chunks as column_row_chunks
from ..profile_columns import Csr, LocationArrays, stack_table, take, weight_columns

#: `first` of a member no stack of the weights holds
NOT_MET = np.iinfo(np.int32).max


def distinct_rows(rows: np.ndarray, items: np.ndarray, n_rows: int, limit: int) -> Csr:
    """Each row's distinct items (ascending) as a Csr: `rows[k]` is the row of item
    `items[k]`, every item below `limit`."""
    key = rows.astype(np.int64) * max(limit, 1) + items
    key.sort()
    if key.size:
        keep = np.empty(key.size, dtype=bool)
        keep[0] = True
        np.not_equal(key[1:], key[:-1], out=keep[1:])
        key = key[keep]
    row = key // max(limit, 1)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n_rows), out=offsets[1:])
    return Csr(offsets, (key - row * max(limit, 1)).astype(np.int32))


#: rows of a Csr are taken this many items at a time by the per-row passes below: their
#: temporaries (sort keys, gathers: 20-30 bytes an item) are per chunk, not per frame of
#: the whole capture (157 and 176 MiB on a 990,000-sample capture's 6.5M frames)
CHUNK = 1 << 20


def row_chunks(offsets: np.ndarray):
    """column_ops.row_chunks of about CHUNK items (read when called: tests set it)."""
    return column_row_chunks(offsets, CHUNK)


def distinct_by_row(offsets: np.ndarray, items_of, limit: int) -> Csr:
    """distinct_rows of the rows of a Csr, a chunk of rows at a time: `items_of(lo, hi)`
    gives the items at positions lo:hi (the Csr's values, or something of them)."""
    n_rows = len(offsets) - 1
    counts = np.zeros(n_rows, dtype=np.int64)
    parts = []
    for a, b in row_chunks(offsets):
        lo, hi = int(offsets[a]), int(offsets[b])
        rows = np.repeat(np.arange(b - a, dtype=np.int32), np.diff(offsets[a:b + 1]))
        part = distinct_rows(rows, items_of(lo, hi), b - a, limit)
        counts[a:b] = part.lengths()
        parts.append(part.values)
    out = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return Csr(out, values.astype(np.int32, copy=False))


class StackSets:
    """For one pass: each stack's distinct functions and distinct mappings, and the
    owner function and mapping of its leaf (-1: none). Valid while the profile's
    locations do not change."""

    def __init__(self, profile, loc_functions: list | None = None,
                 n_functions: int | None = None) -> None:
        """loc_functions (with n_functions, the ids' bound): other functions per location
        than the profile's (functions.inline_views counts by inline pairs)."""
        self.n_functions = len(profile.functions) if n_functions is None else n_functions
        self.n_mappings = len(profile.mappings)
        self.stacks = stack_table(profile)
        self.locations = LocationArrays.of(profile.locations, self.n_functions, loc_functions)
        self._functions = self._mappings = self._with_functions = self._paths = None

    @property
    def n_stacks(self) -> int:
        return self.stacks.rows

    def functions(self) -> Csr:
        """Each stack's distinct functions (ascending)."""
        if self._functions is None:
            paths = self.paths()
            self._functions = distinct_by_row(
                paths.offsets, lambda lo, hi: paths.values[lo:hi], self.n_functions)
        return self._functions

    def paths(self) -> Csr:
        """Each stack's functions, leaf first, inline frames expanded, repeats kept."""
        if self._paths is None:  # (a chunk of stacks at a time, see CHUNK)
            st, lf = self.stacks, self.locations.functions
            counts = np.zeros(st.rows, dtype=np.int64)
            parts = []
            for a, b in row_chunks(st.offsets):
                lo, hi = int(st.offsets[a]), int(st.offsets[b])
                pos, frame = lf.gather(st.values[lo:hi])
                rows = np.repeat(np.arange(b - a, dtype=np.int32),
                                 np.diff(st.offsets[a:b + 1]))
                counts[a:b] = np.bincount(rows[frame], minlength=b - a)
                parts.append(lf.values[pos])
            offsets = np.zeros(st.rows + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            self._paths = Csr(offsets, np.concatenate(parts) if parts else
                              np.zeros(0, dtype=np.int32))
        return self._paths

    def mappings(self) -> Csr:
        """Each stack's distinct mappings (ascending)."""
        if self._mappings is None:
            st, lm = self.stacks, self.locations.mapping

            def mappings_of(lo: int, hi: int) -> np.ndarray:
                m = lm[st.values[lo:hi]]
                if m.size and (m.min() < 0 or m.max() >= self.n_mappings):
                    raise IndexError("a mapping id out of range")
                return m
            self._mappings = distinct_by_row(st.offsets, mappings_of, self.n_mappings)
        return self._mappings

    def with_functions(self) -> np.ndarray:
        """Per stack: whether any of its locations has a function."""
        if self._with_functions is None:
            self._with_functions = self.paths().lengths() > 0
        return self._with_functions

    def leaf_locations(self, sids: np.ndarray) -> np.ndarray:
        """Each stack's leaf location id, -1 for an empty stack."""
        o = self.stacks.offsets
        start = np.where(o[sids + 1] == o[sids], -1, o[sids])
        return take(self.stacks.values, start, -1).astype(np.int64)

    def owners(self, sids: np.ndarray) -> np.ndarray:
        """The function owning each stack's sampled address, -1 for a stack without a
        function; a stack whose leaf has none while a caller has is a TypeError (an
        importer's bug: check_valid)."""
        leaf = self.leaf_locations(sids)
        owner = take(self.locations.owner, leaf, -1)
        has = self.with_functions()[sids]
        if np.any(has & (owner < 0)):
            raise TypeError("a leaf location without a function")
        return np.where(has, owner, -1)


def member_sums(sets: Csr, sids: np.ndarray, w: np.ndarray, limit: int,
                places: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(total by member id, first by member id): each stack's weight added once to each
    of its members, and the place (index in sids, or `places`) of the first stack that
    holds each (NOT_MET for none)."""
    total = np.zeros(limit, dtype=np.int64)
    first = np.full(limit, NOT_MET, dtype=np.int64)
    if places is None:
        places = np.arange(len(sids))
    lengths = sets.lengths(sids)
    a = 0
    while a < len(sids):  # (stacks of about CHUNK members at a time: the gathers' temporaries)
        b = a + max(1, int(np.searchsorted(np.cumsum(lengths[a:a + CHUNK]), CHUNK)))
        pos, row = sets.gather(sids[a:b])
        members = sets.values[pos]
        np.add.at(total, members, w[a:b][row])
        np.minimum.at(first, members, places[a:b][row])
        a = b
    return total, first


def ranked(total: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The ids met (first < NOT_MET) by total, largest first, then by first, then id."""
    ids = np.flatnonzero(first < NOT_MET)
    return ids[np.lexsort((ids, first[ids], -total[ids]))]


def function_totals(stack_sets: StackSets, weights: dict[int, int],
                    only: bytes | bytearray | None = None):
    """(ids, self, total, first) of functions.ranked_arrays: arrays by function id
    (array 'i' ids ranked by total then first; 'q' self and total; 'i' first). `only`: a
    flag by stack id; the unflagged stacks of weights are passed over but keep their
    places."""
    sids, w = weight_columns(weights, stack_sets.n_stacks)
    places = None
    if only is not None:
        flags = np.frombuffer(bytes(only), dtype=np.uint8)
        if sids.size and sids.max() >= len(flags):
            raise IndexError("a stack id out of range")
        keep = flags[sids] != 0
        places = np.flatnonzero(keep)
        sids, w = sids[keep], w[keep]
    nf = stack_sets.n_functions
    total, first = member_sums(stack_sets.functions(), sids, w, nf, places)
    owner = stack_sets.owners(sids)
    has = owner >= 0
    self_w = np.zeros(nf, dtype=np.int64)
    np.add.at(self_w, owner[has], w[has])
    ids = ranked(total, first)
    first[first == NOT_MET] = 0
    return (_array("i", ids), _array("q", self_w), _array("q", total),
            _array("i", first))


def self_sums(stack_sets: StackSets, weights: dict[int, int]) -> dict[int, int]:
    """{function id: weight} of the stacks whose sampled address it owns, by id."""
    sids, w = weight_columns(weights, stack_sets.n_stacks)
    owner = stack_sets.owners(sids)
    has = owner >= 0
    self_w = np.zeros(stack_sets.n_functions, dtype=np.int64)
    np.add.at(self_w, owner[has], w[has])
    ids = np.flatnonzero(self_w)
    return dict(zip(ids.tolist(), self_w[ids].tolist()))


def total_sums(stack_sets: StackSets, weights: dict[int, int]) -> dict[int, int]:
    """{function id: weight} of the stacks each is on (once a stack), by id."""
    sids, w = weight_columns(weights, stack_sets.n_stacks)
    total, first = member_sums(stack_sets.functions(), sids, w, stack_sets.n_functions)
    ids = np.flatnonzero(first < NOT_MET)
    return dict(zip(ids.tolist(), total[ids].tolist()))


def mapping_totals(stack_sets: StackSets, weights: dict[int, int]):
    """(ids met, self, total, first) by mapping id, as function_totals: self to the leaf
    location's mapping, total once to each mapping of the stack; empty stacks count
    nowhere but keep their places."""
    sids, w = weight_columns(weights, stack_sets.n_stacks)
    nm = stack_sets.n_mappings
    total, first = member_sums(stack_sets.mappings(), sids, w, nm)
    leaf = stack_sets.leaf_locations(sids)
    has = leaf >= 0
    self_w = np.zeros(nm, dtype=np.int64)
    np.add.at(self_w, stack_sets.locations.mapping[leaf[has]], w[has])
    ids = ranked(total, first)
    first[first == NOT_MET] = 0
    return (_array("i", ids), _array("q", self_w), _array("q", total),
            _array("i", first))


def _array(code: str, values: np.ndarray) -> array:
    """A column as the array module's (its items are Python ints when read)."""
    out = array(code)
    out.frombytes(values.astype(np.int32 if code == "i" else np.int64).tobytes())
    return out


def location_weights(profile, weights: dict[int, int], distinct: bool) -> np.ndarray:
    """Per location id (int64): the weights of the stacks it is in, once for each time
    it is in a stack, or (distinct) once per stack."""
    st = stack_table(profile)
    sids, w = weight_columns(weights, st.rows)
    pos, row = st.gather(sids)
    locs = st.values[pos]
    if distinct:
        sets = distinct_rows(row, locs, len(sids), len(profile.locations))
        locs, row = sets.values, sets.row_of_items()
    out = np.zeros(len(profile.locations), dtype=np.int64)
    np.add.at(out, locs, w[row])
    return out
