"""The weighted stacks of one capture as numpy columns, for the passes that ask questions
of every frame (where the time goes, who called it): one array of function ids, leaf
first, with each stack's rows delimited by offsets (CSR, as pprof and Firefox's profiler
keep their stack tables), so that a question over all frames is a handful of array
operations instead of a Python walk per stack. Inline frames are expanded (a location's
functions, leaf-most first)."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..profile import Profile


@dataclass(frozen=True)
class StackColumns:
    sid: np.ndarray  # (S,) the stack id of each row
    weight: np.ndarray  # (S,) its samples (float64: sums and shares)
    start: np.ndarray  # (S + 1,) offsets into fn: row r's frames are fn[start[r]:start[r+1]]
    fn: np.ndarray  # (F,) function ids, each row's leaf first
    row: np.ndarray  # (F,) the row each frame belongs to
    n_functions: int

    @classmethod
    def of(cls, profile: Profile, weights: dict[int, int],
           loc_functions: list[tuple[int, ...]]) -> StackColumns:
        """The stacks of `weights` (stack id -> samples, in its order) that have frames."""
        # (a sample without a stack has no frame to be charged to: left out)
        stacks = profile.stacks
        framed = {sid: w for sid, w in weights.items() if stacks[sid]}
        sids = np.fromiter(framed.keys(), dtype=np.int64, count=len(framed))
        w = np.fromiter(framed.values(), dtype=np.float64, count=len(framed))
        nf = len(profile.functions)
        if not len(sids):
            z = np.zeros(0, dtype=np.int64)
            return cls(z, np.zeros(0), np.zeros(1, dtype=np.int64), z, z, nf)
        # locations -> their functions (CSR)
        loc_len = np.fromiter((len(f) for f in loc_functions), dtype=np.int64,
                              count=len(loc_functions))
        loc_start = np.zeros(len(loc_functions) + 1, dtype=np.int64)
        np.cumsum(loc_len, out=loc_start[1:])
        loc_fn = np.fromiter(chain.from_iterable(loc_functions), dtype=np.int64,
                             count=int(loc_start[-1]))
        # stacks -> their locations, then each location expanded to its functions
        chosen = [stacks[s] for s in sids.tolist()]
        n_locs = np.fromiter((len(s) for s in chosen), dtype=np.int64, count=len(chosen))
        locs = np.fromiter(chain.from_iterable(chosen), dtype=np.int64,
                           count=int(n_locs.sum()))
        per_loc = loc_len[locs]
        first = np.repeat(loc_start[locs], per_loc)
        within = np.arange(len(first), dtype=np.int64) - np.repeat(
            np.cumsum(per_loc) - per_loc, per_loc)
        fn = loc_fn[first + within]
        loc_row = np.repeat(np.arange(len(chosen), dtype=np.int64), n_locs)
        row = np.repeat(loc_row, per_loc)
        counts = np.bincount(row, minlength=len(chosen))
        start = np.zeros(len(chosen) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        return cls(sids, w, start, fn, row, nf)

    @property
    def total(self) -> float:
        return float(self.weight.sum())

    def first_where(self, flags: np.ndarray) -> np.ndarray:
        """Per row, the position in `fn` of its first frame (from the leaf) whose function
        is flagged (flags: bool by function id), or -1."""
        return self.first_marked(flags[self.fn])

    def first_marked(self, frames: np.ndarray) -> np.ndarray:
        """Per row, the position of its first frame (from the leaf) marked in `frames`
        (bool by position in `fn`), or -1."""
        pos = np.flatnonzero(frames)
        out = np.full(len(self.sid), -1, dtype=np.int64)
        if len(pos):
            rows = self.row[pos]
            keep = np.ones(len(pos), dtype=bool)
            keep[1:] = rows[1:] != rows[:-1]  # (frames are in row order, leaf first)
            out[rows[keep]] = pos[keep]
        return out

    def leaf_positions(self) -> np.ndarray:
        """Per row, the position of its leaf frame (-1 for a stack without frames)."""
        has = self.start[1:] > self.start[:-1]
        return np.where(has, self.start[:-1], -1)

    def inclusive(self) -> np.ndarray:
        """Samples per function id, each function counted once per stack however often
        it recurses in it."""
        key = self.row * self.n_functions + self.fn
        key = np.sort(key)
        keep = np.ones(len(key), dtype=bool)
        keep[1:] = key[1:] != key[:-1]
        key = key[keep]
        return np.bincount(key % self.n_functions, weights=self.weight[key // self.n_functions],
                           minlength=self.n_functions)

    def sums_by(self, values: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
        """Samples per value of `values[fn[at[r]]]` over the rows with at[r] >= 0."""
        ok = at >= 0
        return np.bincount(values[self.fn[at[ok]]], weights=self.weight[ok], minlength=size)
