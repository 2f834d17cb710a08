"""The weighted stacks of one capture as numpy columns, for the passes that ask questions
of every frame (where the time goes, who called it): one array of function ids, leaf
first, with each stack's rows delimited by offsets (CSR, as pprof and Firefox's profiler
keep their stack tables), so that a question over all frames is a handful of array
operations instead of a Python walk per stack. Inline frames are expanded (a location's
functions, leaf-most first)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..aggregate import stack_walks
from ..aggregate.stack_sums import StackSets, distinct_by_row
from ..aggregate.stack_walks import first_of_csr_rows
from ..profile_columns import weight_columns


@dataclass(frozen=True)
class StackColumns:
    sid: np.ndarray  # (S,) the stack id of each row
    weight: np.ndarray  # (S,) its samples (float64: sums and shares)
    start: np.ndarray  # (S + 1,) offsets into fn: row r's frames are fn[start[r]:start[r+1]]
    fn: np.ndarray  # (F,) function ids (int32), each row's leaf first
    n_functions: int

    @classmethod
    def of(cls, sets: StackSets, weights: dict[int, int]) -> StackColumns:
        """The stacks of `weights` (stack id -> samples, in its order) that have frames,
        their paths taken from the pass's columns (sets.paths)."""
        # (a sample without a stack has no frame to be charged to: left out)
        sids, w = weight_columns(weights, sets.n_stacks)
        framed = sets.stacks.lengths(sids) > 0
        sids, w = sids[framed], w[framed].astype(np.float64)
        paths = sets.paths()
        start = np.zeros(len(sids) + 1, dtype=np.int64)
        np.cumsum(paths.lengths(sids), out=start[1:])
        # (function ids as the paths hold them, int32, and no row column: rows are read
        # from `start` where asked; the columns live as long as the diagnosis. Gathered
        # STACK_CHUNK stacks at a time: the gather's indexes per chunk, not per frame)
        fn = np.empty(int(start[-1]), dtype=paths.values.dtype)
        for a in range(0, len(sids), stack_walks.STACK_CHUNK):
            pos, _ = paths.gather(sids[a:a + stack_walks.STACK_CHUNK])
            fn[start[a]:start[a] + len(pos)] = paths.values[pos]
        return cls(sids, w, start, fn, sets.n_functions)

    def rows_of(self, lo: int, hi: int) -> np.ndarray:
        """The row of each frame at positions lo:hi of `fn`."""
        return np.searchsorted(self.start, np.arange(lo, hi), side="right") - 1

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
        return first_of_csr_rows(self.start, frames)

    def leaf_positions(self) -> np.ndarray:
        """Per row, the position of its leaf frame (-1 for a stack without frames)."""
        has = self.start[1:] > self.start[:-1]
        return np.where(has, self.start[:-1], -1)

    def inclusive(self) -> np.ndarray:
        """Samples per function id, each function counted once per stack however often
        it recurses in it."""
        once = distinct_by_row(self.start, lambda lo, hi: self.fn[lo:hi], self.n_functions)
        return np.bincount(once.values, weights=self.weight[once.row_of_items()],
                           minlength=self.n_functions)

    def sums_by(self, values: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
        """Samples per value of `values[fn[at[r]]]` over the rows with at[r] >= 0."""
        ok = at >= 0
        return np.bincount(values[self.fn[at[ok]]], weights=self.weight[ok], minlength=size)
