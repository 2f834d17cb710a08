"""The off-CPU intervals grouped and summed (per waiting stack, per kind of wait), as
array operations on the interval columns (analysis.offcpu.threads.OffCpu's i_* columns).

Seconds are added in interval order (np.add.at adds its items in order, as the Python
loop it replaces did), so the sums are the same to the last bit.
"""
from __future__ import annotations

import numpy as np

from ..column_ops import dense_ids, first_met, view
from ..profile_columns import take
from .switches import DISK


def groups(stack, state, skip_state: int, split: int) -> tuple[np.ndarray, list[tuple]]:
    """(each interval's group id, -1 for those in `skip_state`; the groups' (stack, sub)
    keys by id): ids in order of first appearance of the intervals' (stack, sub) pairs.
    split 0: sub is 0; 1: the state's number (0-3, else 4, as views.state_name); 2: 1
    for the disk state, else 0."""
    st = view(stack, np.int32)
    states = view(state, np.int8)
    if len(st) != len(states):
        raise ValueError("groups: stack and state differ in length")
    keep = states != skip_state
    if split == 1:
        sub = np.where((states >= 0) & (states < 5), states, 4).astype(np.int32)
    elif split == 2:
        sub = (states == DISK).astype(np.int32)
    else:
        sub = np.zeros(len(states), dtype=np.int32)
    ids, (k_stack, k_sub) = dense_ids(st[keep], sub[keep])
    out = np.full(len(st), -1, dtype=np.int64)
    out[keep] = ids
    return out, list(zip(k_stack.tolist(), k_sub.tolist()))


def sums(keys: np.ndarray, values, n: int, tids=None, remap=None
         ) -> tuple[list[float], list[int], list[tuple[int, int]] | None]:
    """Per key 0..n-1 (rows with a negative key skipped; with `remap`, a row's key is
    remap[keys[row]]): the sum of `values` in row order, the number of rows and, given
    `tids`, the distinct (key, tid) pairs in order of first appearance (else None)."""
    k = np.asarray(keys, dtype=np.int64)
    v = view(values, np.float64)
    if len(v) != len(k) or (tids is not None and len(view(tids, np.int32)) != len(k)):
        raise ValueError("sums: columns differ in length")
    if remap is not None:
        r = np.asarray(view(remap, np.int32), dtype=np.int64)
        if k.size and k.max() >= len(r):
            raise IndexError("sums: key out of the remap's range")
        k = take(r, k, -1)
    rows = np.flatnonzero(k >= 0)
    if rows.size and k[rows].max() >= n:
        raise IndexError("sums: key out of range")
    acc = np.zeros(n, dtype=np.float64)
    np.add.at(acc, k[rows], v[rows])
    counts = np.bincount(k[rows], minlength=n)
    pairs = None
    if tids is not None:
        (pk, pt), _ = first_met(k[rows], view(tids, np.int32)[rows].astype(np.int64))
        pairs = list(zip(pk.tolist(), pt.tolist()))
    return acc.tolist(), counts.tolist(), pairs
