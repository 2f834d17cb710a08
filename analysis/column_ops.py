"""Reductions over the profile's columns (array-module arrays, bytes, bytearrays) as
numpy operations on views of their buffers: no Python object per row.

What comes out is Python ints and dicts, in the order the Python code these replace
gave (Counter's: keys first met first), so callers and reports see no difference.
"""
from __future__ import annotations

import numpy as np

from .profile_columns import WeightDict, index_type


def view(column, dtype) -> np.ndarray:
    """The column's buffer as a numpy array (no copy; writable when the column is)."""
    return np.frombuffer(column, dtype=dtype)


def value_counts(column, n: int) -> list[int]:
    """Counter(column) of an int32 column as a list by value 0..n-1; a value outside
    that range is an IndexError."""
    v = view(column, np.int32)
    if v.size and (v.min() < 0 or v.max() >= n):
        raise IndexError("value_counts: a value out of range")
    return np.bincount(v, minlength=n).tolist()


def int_max(column) -> int | None:
    """max() of an int64 column; None when it is empty."""
    v = view(column, np.int64)
    return int(v.max()) if v.size else None


def all_equal(column, value: int) -> bool:
    """Every item of a column of 8-byte ints is `value` (modulo 2^64): a count or period
    column the profile need not keep."""
    return bool(np.all(view(column, np.uint64) == np.uint64(value & (2**64 - 1))))


def time_span(times, events=None, event: int = 0) -> tuple[float, float] | None:
    """(min, max) of a float64 column, NaN (no timestamp) left out, of the rows whose
    events[row] is `event` when events is given; None when no row has a time."""
    t = view(times, np.float64)
    if events is not None:
        e = view(events, np.int32)
        if len(e) != len(t):
            raise ValueError("time_span: columns of different lengths")
        t = t[e == event]
    t = t[~np.isnan(t)]
    return (float(t.min()), float(t.max())) if t.size else None


def _packed(columns, n: int) -> tuple[np.ndarray, int] | None:
    """The rows of int columns as one key 0..size-1 (mixed radix over each column's
    range), when size is at most a few times the rows: then tables by key replace a
    sort (a stack id column's keys are below its stacks). None otherwise."""
    key, size, limit = None, 1, max(4 * n, 1 << 16)
    ix = index_type(limit)  # (4 bytes a row, not 8, below 2^31 keys)
    for c in columns:
        lo, hi = int(c.min()), int(c.max())
        span = hi - lo + 1
        if span > limit:
            return None
        part = (c - np.asarray(lo, dtype=c.dtype)).astype(ix, copy=False)
        present = np.zeros(span, dtype=bool)
        present[part] = True
        held = int(np.count_nonzero(present))
        if held < span:  # (the values present only: thread or comm ids are few)
            part = (np.cumsum(present, dtype=ix) - 1)[part]
            span = held
        size *= span
        if size > limit:
            return None
        key = part if key is None else key * ix.type(span) + part
    return key, size


def _first_rows(key: np.ndarray, size: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(the keys present, by their first row; each one's first row)."""
    ix = index_type(n + 1)
    first = np.full(size, n, dtype=ix)
    np.minimum.at(first, key, np.arange(n, dtype=ix))
    present = np.flatnonzero(first < n)
    order = present[np.argsort(first[present])]
    return order, first[order]


def first_met(*columns: np.ndarray, weights: np.ndarray | None = None
              ) -> tuple[list[np.ndarray], np.ndarray]:
    """(the distinct rows of the columns in the order first met, as one array per
    column; how many times each occurs, or its `weights` summed): dense_ids, then a
    count or sum by id."""
    ids, distinct = dense_ids(*columns)
    if weights is None:
        return distinct, np.bincount(ids, minlength=len(distinct[0]))
    sums = np.zeros(len(distinct[0]), dtype=weights.dtype)
    np.add.at(sums, ids, weights)
    return distinct, sums


#: rows first_met_in_chunks reads at a time: a sort of (stack, thread) pairs costs about
#: 40 bytes a row in temporaries, 150 MiB of a 4M-sample report's peak at once
CHUNK = 1 << 20


def first_met_in_chunks(*columns: np.ndarray, weights: np.ndarray | None = None,
                        chunk: int | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """first_met, a chunk of rows at a time: each chunk's distinct rows (in the order
    first met in it) and their counts or sums, then those merged the same way. The
    distinct rows of the chunks, one chunk after another, first meet each row where the
    whole column first meets it, so the order is first_met's; the temporaries are a
    chunk's, not the column's."""
    n = len(columns[0])
    step = chunk or CHUNK
    if n <= step:
        return first_met(*columns, weights=weights)
    parts, sums = [], []
    for a in range(0, n, step):
        distinct, got = first_met(*(c[a:a + step] for c in columns),
                                  weights=None if weights is None else weights[a:a + step])
        parts.append(distinct)
        sums.append(got)
    merged = [np.concatenate(c) for c in zip(*parts)]
    ids, distinct = dense_ids(*merged)
    got = np.concatenate(sums)
    out = np.zeros(len(distinct[0]), dtype=got.dtype)
    np.add.at(out, ids, got)
    return distinct, out


def dense_ids(*columns: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """(each row's id, 0.. in the order each distinct row of the columns is first met;
    the distinct rows in that order, one array per column). Rows whose values pack into
    a small key are numbered by tables by key (each key's first row by np.minimum.at);
    others by a stable sort (np.unique was 25x slower than sort and mask in the issue's
    prototype)."""
    n = len(columns[0])
    if not n:
        return np.zeros(0, dtype=np.int64), [c[:0] for c in columns]
    packed = _packed(columns, n)
    if packed is not None:
        key, size = packed
        order, rows = _first_rows(key, size, n)
        rank = np.empty(size, dtype=key.dtype)
        rank[order] = np.arange(len(order), dtype=key.dtype)
        return rank[key], [c[rows] for c in columns]
    order = np.argsort(columns[0], kind="stable") if len(columns) == 1 else \
        np.lexsort(columns[::-1])
    start = np.zeros(n, dtype=bool)
    start[0] = True
    for c in columns:
        s = c[order]
        start[1:] |= s[1:] != s[:-1]
    group = np.cumsum(start) - 1  # per sorted row, its group in sorted order
    firsts = order[start]  # (stable: each group's first row)
    rank = np.empty(len(firsts), dtype=np.int64)
    rank[np.argsort(firsts)] = np.arange(len(firsts))
    ids = np.empty(n, dtype=np.int64)
    ids[order] = rank[group]
    by_first = np.sort(firsts)
    return ids, [c[by_first] for c in columns]


def distinct(column: np.ndarray) -> np.ndarray:
    """np.unique(column): the sorted distinct values by a sort and a mask (np.unique
    imports numpy.ma on its first call, 35 ms of a report's 0.6 s)."""
    ranked = np.sort(column)
    return ranked[_starts(ranked)]


def first_rows(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(column, return_index=True): the sorted distinct values and the row
    where each is first met."""
    order = np.argsort(column, kind="stable")
    starts = _starts(column[order])
    return column[order][starts], order[starts]


def _starts(ranked: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted column starts."""
    new = np.ones(len(ranked), dtype=bool)
    np.not_equal(ranked[1:], ranked[:-1], out=new[1:])
    return new


def unique_inverse(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(column, return_inverse=True): the sorted distinct values and each row's
    index into them; by tables when the values pack into a small key (thread ids: a sort
    of 4M rows was a third of a second), else by one argsort."""
    if not len(column) or _packed((column,), len(column)) is None:
        order = np.argsort(column)
        ranked = column[order]
        new = _starts(ranked)
        inverse = np.empty(len(column), dtype=np.int64)
        inverse[order] = np.cumsum(new) - 1
        return ranked[new], inverse
    ids, (values,) = dense_ids(column)
    order = np.argsort(values)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return values[order], rank[ids]


def counts_first_met(column) -> dict[int, int]:
    """dict(Counter(column)) of an int32 column: rows per value, first met first (a
    WeightDict: the passes over stacks read it back as these columns)."""
    (values,), counts = first_met(view(column, np.int32))
    return WeightDict(values, counts)


def count_keys(*columns) -> dict[tuple[int, ...], int]:
    """Counter(zip(*columns)) of int32 columns of one length: rows per combination of
    values, keys first met first, without a tuple per row."""
    cols = [view(c, np.int32) for c in columns]
    if not cols:
        return {}
    if len({len(c) for c in cols}) > 1:
        raise ValueError("count_keys: columns of different lengths")
    values, counts = first_met(*cols)
    return dict(zip(zip(*(v.tolist() for v in values)), counts.tolist()))


def fill(out, ids, value: int) -> None:
    """out[i] = value for each i of ids (int32): out a writable buffer of 1-, 4- or
    8-byte items, value stored modulo the item's size; an id outside out is an
    IndexError (before anything is written)."""
    o = _items(out)
    ix = view(ids, np.int32)
    if ix.size and (ix.min() < 0 or ix.max() >= len(o)):
        raise IndexError("fill: an id out of range")
    o[ix] = _modulo(value, o.dtype)


def keep_where(out, flags, value: int) -> None:
    """out[i] = value wherever flags[i] (a byte per item) is 0."""
    o = _items(out)
    f = view(flags, np.uint8)
    if len(f) != len(o):
        raise ValueError("keep_where: one flag an item")
    o[f == 0] = _modulo(value, o.dtype)


def lookup_bytes(table, ids) -> bytearray:
    """bytearray(table[i] for i in ids): table bytes (a flag per mapping, say), ids
    int32; an id outside the table is an IndexError."""
    t = view(table, np.uint8)
    ix = view(ids, np.int32)
    if ix.size and (ix.min() < 0 or ix.max() >= len(t)):
        raise IndexError("lookup_bytes: an id out of range")
    return bytearray(t[ix].tobytes())


def _items(out) -> np.ndarray:
    size = memoryview(out).itemsize
    if size not in (1, 4, 8):
        raise TypeError("a buffer of 1-, 4- or 8-byte items")
    return view(out, {1: np.uint8, 4: np.uint32, 8: np.uint64}[size])


def _modulo(value: int, dtype) -> np.integer:
    return dtype.type(value % (1 << (8 * dtype.itemsize)))
