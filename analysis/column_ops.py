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
        part = (c - np.asarray(lo, dtype=c.dtype)).astype(ix, copy=False) \
            if c.dtype.kind == "u" or c.dtype.itemsize >= ix.itemsize else \
            c.astype(ix) - ix.type(lo)  # (a narrow column's range may pass its type)
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


def _radix_key(columns) -> np.ndarray | None:
    """The rows of int columns as one int64 (mixed radix over each column's range), when
    the ranges' product fits: one stable sort instead of a lexsort of every column."""
    key, size = None, 1
    for c in columns:
        lo, hi = int(c.min()), int(c.max())
        span = hi - lo + 1
        size *= span
        if size >= 1 << 62:
            return None
        part = (c - c.dtype.type(lo)).astype(np.int64) if c.dtype.kind == "u" else \
            c.astype(np.int64) - lo  # (in int64: an int8 column's range passes int8)
        key = part if key is None else key * span + part
    return key


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
    return first_met_of_chunks(
        ([c[a:a + step] for c in columns], None if weights is None else weights[a:a + step])
        for a in range(0, n, step))


def first_met_of_chunks(chunks) -> tuple[list[np.ndarray], np.ndarray]:
    """first_met of the rows of `chunks` (each (columns, weights or None), made one at a
    time by the caller: columns computed from others need not exist whole; at least one
    chunk, empty or not) as one column, merged as first_met_in_chunks merges."""
    parts, sums = [], []
    for columns, weights in chunks:
        distinct, got = first_met(*columns, weights=weights)
        parts.append(distinct)
        sums.append(got)
    if len(parts) == 1:
        return parts[0], sums[0]
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
    key = columns[0] if len(columns) == 1 else _radix_key(columns)
    order = np.argsort(key, kind="stable") if key is not None else \
        np.lexsort(columns[::-1])
    start = np.zeros(n, dtype=bool)
    start[0] = True
    for c in columns if key is None else (key,):
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


def dense_ids_in_chunks(*columns: np.ndarray, chunk: int = CHUNK
                        ) -> tuple[np.ndarray, list[np.ndarray]]:
    """dense_ids (its ids int32 where they fit), `chunk` rows at a time: each chunk's
    distinct rows, in the order first met in it, one chunk after another first meet each
    row where the whole column first meets it, so numbering those numbers the rows as
    dense_ids does; the temporaries of a sort are a chunk's (about 50 bytes a row)."""
    n = len(columns[0])
    if n <= chunk:
        ids, distinct = dense_ids(*columns)
        return ids.astype(index_type(len(distinct[0]))), distinct
    parts = []
    for a in range(0, n, chunk):
        ids, distinct = dense_ids(*(c[a:a + chunk] for c in columns))
        parts.append((ids.astype(index_type(len(distinct[0]))), distinct))
    merged = [np.concatenate(c) for c in zip(*(d for _, d in parts))]
    known, distinct = dense_ids(*merged)
    known = known.astype(index_type(len(distinct[0])))
    out = np.empty(n, dtype=known.dtype)
    at = base = 0
    for ids, local in parts:
        out[at:at + len(ids)] = known[base + ids]
        at += len(ids)
        base += len(local[0])
    return out, distinct


def dense_ids_by_lead(lead: np.ndarray, size: int, *rest: np.ndarray
                      ) -> tuple[np.ndarray, list[np.ndarray]]:
    """dense_ids(lead, *rest) when `lead` holds ids 0..size-1 that nearly decide the
    other columns (a call chain nearly always comes from one process of one generation
    of its maps): each row whose other columns are those of the first row of its lead
    takes that row's id, in tables by lead; only the rows that differ are sorted. On
    bench-size's 2M samples, 0.09-0.10 s where dense_ids of the four columns, a chunk of
    rows at a time, took 0.55 s."""
    n = len(lead)
    ix = index_type(n + 1)
    first = np.full(size, n, dtype=ix)
    np.minimum.at(first, lead, np.arange(n, dtype=ix))
    rep = first[lead]  # each row's first row of its lead, then of its whole key
    other = np.zeros(n, dtype=bool)
    for c in rest:
        other |= c != c[rep]
    odd = np.flatnonzero(other)
    if len(odd):
        ids, _ = dense_ids(lead[odd], *(c[odd] for c in rest))
        head = np.full(int(ids.max()) + 1, len(odd), dtype=np.int64)
        np.minimum.at(head, ids, np.arange(len(odd)))
        rep[odd] = odd[head[ids]]
    is_first = np.zeros(n, dtype=bool)
    is_first[rep] = True
    rank = np.cumsum(is_first, dtype=ix) - 1
    return rank[rep], [c[is_first] for c in (lead, *rest)]


def distinct_rows(offsets: np.ndarray, values: np.ndarray, chunk: int = CHUNK
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(each row's id, each distinct row's first row): rows `offsets` (int64, rows + 1,
    from 0) over `values` (ints), numbered in the order each distinct row is first met,
    as interning them one by one as tuples through a dict numbers them.

    Rows are told apart by their length and two polynomial hashes (wrapping in 64 bits,
    made with a cumulative sum each, about `chunk` items at a time), then every row is
    compared item by item with the first row of its group: rows from an upload can be
    made to collide, and then a dict of tuples numbers them. (bench-size's 2M-sample
    perf.data: 268,439 stacks of 1.16M frames in 0.22-0.26 s, and no tuple a stack.)"""
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    longest = int(lengths.max(initial=0))
    muls = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)
    powers = [np.full(longest, m, dtype=np.uint64) for m in muls]
    for pw in powers:
        pw[:1] = 1
        np.multiply.accumulate(pw, out=pw)  # (wrapping in 64 bits, as meant)
    hashes = [np.zeros(n, dtype=np.uint64) for _ in muls]
    for a, b in row_chunks(offsets, chunk):
        owner, pos = _items_of(offsets, a, b)
        mixed = values[offsets[a]:offsets[b]].astype(np.uint64) + np.uint64(1)
        ends = offsets[a + 1:b + 1] - offsets[a]
        starts = offsets[a:b] - offsets[a]
        for pw, out in zip(powers, hashes):
            sums = np.zeros(len(mixed) + 1, dtype=np.uint64)
            np.cumsum(mixed * pw[pos], out=sums[1:])
            out[a:b] = sums[ends] - sums[starts]
    row_id, _ = dense_ids(lengths, *hashes)
    del hashes
    first = np.full(int(row_id.max(initial=-1)) + 1, n, dtype=np.int64)
    np.minimum.at(first, row_id, np.arange(n, dtype=np.int64))
    same = True
    for a, b in row_chunks(offsets, chunk):
        owner, pos = _items_of(offsets, a, b)
        own = values[offsets[a]:offsets[b]]
        same = np.array_equal(own, values[offsets[first[row_id[a:b]]][owner] + pos])
        if not same:
            break
    if same:
        return row_id, first
    ix: dict[tuple, int] = {}  # (a collision: exactly, one by one)
    flat, bounds = values.tolist(), offsets.tolist()
    ids = np.array([ix.setdefault(row, len(ix)) for row in
                    map(tuple, map(flat.__getitem__, map(slice, bounds, bounds[1:])))],
                   dtype=np.int64)
    first = np.full(len(ix), n, dtype=np.int64)
    np.minimum.at(first, ids, np.arange(n, dtype=np.int64))
    return ids, first


def row_chunks(offsets: np.ndarray, items: int):
    """(first row, row past the last) of runs of whole rows of CSR `offsets` holding
    about `items` items each (a row longer than that is a chunk of its own)."""
    n = len(offsets) - 1
    a = 0
    while a < n:
        b = int(np.searchsorted(offsets, offsets[a] + items, side="right")) - 1
        b = min(max(b, a + 1), n)
        yield a, b
        a = b


def _items_of(offsets: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(each item's row, counted from a; its place in its row) of rows a..b-1."""
    lengths = np.diff(offsets[a:b + 1])
    ix = index_type(int(offsets[b] - offsets[a]) + 1)
    owner = np.repeat(np.arange(b - a, dtype=ix), lengths)
    pos = np.arange(int(offsets[b] - offsets[a]), dtype=ix) - \
        (offsets[a:b] - offsets[a]).astype(ix)[owner]
    return owner, pos


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
