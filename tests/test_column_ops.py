"""The column reductions the passes group with (analysis/column_ops.py), the weights a
selection keeps as columns (profile_columns.WeightDict) and the off-CPU sums
(offcpu/interval_sums.py) give what the Python they replace gives: Counter's counts in
its first-met order, np.unique's values and inverse, sums added in row order. Both ways a
grouping is made are checked: tables by key (values that pack small) and the sort (values
spread over a range many times the rows)."""
from __future__ import annotations

import random
from array import array
from collections import Counter

import numpy as np
import pytest

from analysis import column_ops
from analysis.offcpu import interval_sums
from analysis.offcpu.switches import DISK, RUNNABLE
from analysis.profile_columns import WeightDict, take, weight_columns

#: values that pack into a small key, and values spread so widely that the sort is used
SMALL = [-3, -1, 0, 2, 5]
SPREAD = [-(10 ** 9), 0, 7, 10 ** 6, 2 ** 40]


def _columns(rng: random.Random, values: list[int], dtype) -> list[np.ndarray]:
    n = rng.randint(0, 80)
    return [np.array([rng.choice(values) for _ in range(n)], dtype=dtype)
            for _ in range(rng.randint(1, 3))]


@pytest.mark.parametrize("values,dtype", [(SMALL, np.int32), (SMALL, np.int64),
                                          (SPREAD, np.int64)])
def test_grouping_is_counter_in_first_met_order(values, dtype):
    rng = random.Random(35)
    for _ in range(300):
        cols = _columns(rng, values, dtype)
        rows = list(zip(*(c.tolist() for c in cols)))
        want = Counter(rows)
        got, counts = column_ops.first_met(*cols)
        assert list(zip(*(g.tolist() for g in got))) == list(want)
        assert counts.tolist() == list(want.values())
        w = np.array([rng.randint(0, 9) for _ in rows], dtype=np.int64)
        sums: dict = {}
        for row, x in zip(rows, w.tolist()):
            sums[row] = sums.get(row, 0) + x
        got, by_weight = column_ops.first_met(*cols, weights=w)
        assert list(zip(*(g.tolist() for g in got))) == list(sums)
        assert by_weight.tolist() == list(sums.values())
        ids, distinct = column_ops.dense_ids(*cols)
        keys = list(want)
        assert ids.tolist() == [keys.index(r) for r in rows]
        assert list(zip(*(d.tolist() for d in distinct))) == keys
        values_, inverse = column_ops.unique_inverse(cols[0])
        want_values, want_inverse = np.unique(cols[0], return_inverse=True)
        assert values_.tolist() == want_values.tolist()
        assert inverse.tolist() == want_inverse.tolist()


def test_counts_and_count_keys_of_int32_columns():
    col = array("i", [4, 1, 4, 4, 0, 1])
    got = column_ops.counts_first_met(col)
    assert list(got.items()) == [(4, 3), (1, 2), (0, 1)]
    assert isinstance(got, WeightDict)  # (a selection the passes read back as columns)
    a, b = array("i", [1, 2, 1, 2, 1]), array("i", [9, 9, 9, 8, 9])
    assert list(column_ops.count_keys(a, b).items()) == list(Counter(zip(a, b)).items())
    assert column_ops.count_keys() == {}
    with pytest.raises(ValueError):
        column_ops.count_keys(a, array("i", [1]))


def test_a_weight_dict_forgets_its_columns_when_changed():
    d = WeightDict(np.array([3, 1]), np.array([5, 6]))
    sids, w = weight_columns(d, 4)
    assert sids.tolist() == [3, 1] and w.tolist() == [5, 6]
    with pytest.raises(IndexError):  # (its ids are checked against the stacks asked of)
        weight_columns(d, 3)
    for change in (lambda x: x.__setitem__(7, 1), lambda x: x.pop(3),
                   lambda x: x.update({0: 2}), lambda x: x.setdefault(9, 4),
                   lambda x: x.__delitem__(1), lambda x: x.clear(),
                   lambda x: x.popitem()):
        e = WeightDict(np.array([3, 1]), np.array([5, 6]))
        change(e)
        sids, w = weight_columns(e, 10)
        assert list(zip(sids.tolist(), w.tolist())) == list(e.items())


def test_first_met_in_chunks_equals_first_met():
    """The distinct rows in the order first met and their counts or sums, whatever the
    chunk: each chunk's distinct rows, one chunk after another, meet each row first
    where the whole column does."""
    rng = np.random.default_rng(35)
    for _ in range(200):
        n = int(rng.integers(0, 50))
        a = rng.integers(0, 6, n).astype(np.int32)
        b = rng.choice([-5, 0, 7, 1 << 30], n).astype(np.int32)
        w = rng.integers(0, 1 << 40, n)
        for chunk in (1, 2, 7, 1 << 20):
            for weights in (None, w):
                want_cols, want = column_ops.first_met(a, b, weights=weights)
                cols, got = column_ops.first_met_in_chunks(a, b, weights=weights,
                                                           chunk=chunk)
                assert [c.tolist() for c in cols] == [c.tolist() for c in want_cols]
                assert got.tolist() == want.tolist() and got.dtype == want.dtype


def test_a_weight_dict_is_filled_only_when_read_as_a_dict():
    """Its columns are read without filling the dict (a 4M-sample report held two of
    400,000 stacks); the first dict read fills it, and every way of reading it as a
    dict sees the weights."""
    import copy
    import json
    import pickle
    from analysis.profile_columns import _FilledWeightDict
    d = WeightDict(np.array([3, 1]), np.array([5, 6]))
    assert len(d) == 2 and d and dict.__len__(d) == 0  # (nothing filled yet)
    assert [x.tolist() for x in weight_columns(d, 4)] == [[3, 1], [5, 6]]
    assert not WeightDict(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert type(d) is WeightDict and dict.__len__(d) == 0
    reads = [lambda x: x[3], lambda x: list(x), lambda x: 3 in x, lambda x: x.get(1),
             lambda x: list(x.items()), lambda x: list(x.keys()), lambda x: sum(x.values()),
             lambda x: x == {3: 5, 1: 6}, lambda x: {3: 5, 1: 6} == x, lambda x: dict(x),
             lambda x: Counter(x), lambda x: {**x}, lambda x: x.copy(), lambda x: repr(x),
             lambda x: sorted(x, key=x.get)]
    for read in reads:
        e = WeightDict(np.array([3, 1]), np.array([5, 6]))
        read(e)
        assert type(e) is _FilledWeightDict and dict(e) == {3: 5, 1: 6}
        assert e._columns is not None and json.dumps(e) == '{"3": 5, "1": 6}'
    for again in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
        assert again == {3: 5, 1: 6} and list(again) == [3, 1]
    assert d[1] == 6 and d == {3: 5, 1: 6}


def test_take_reads_no_column_at_a_negative_index():
    assert take(np.zeros(0, dtype=np.int32), np.array([-1, -1]), -1).tolist() == [-1, -1]
    assert take(np.array([7, 8, 9]), np.array([2, -1, 0]), 0).tolist() == [9, 0, 7]


def test_off_cpu_groups_and_sums_equal_the_python_loops():
    rng = random.Random(14)
    for _ in range(200):
        n = rng.randint(0, 60)
        stack = array("i", [rng.choice([-1, 0, 3, 4, 10 ** 6]) for _ in range(n)])
        state = array("b", [rng.choice([0, 1, 2, 3, 5, 9]) for _ in range(n)])
        dur = array("d", [rng.random() / 7 for _ in range(n)])
        tid = array("i", [rng.choice([100, 101, 7]) for _ in range(n)])
        for split in (0, 1, 2):
            ids, keys = interval_sums.groups(stack, state, RUNNABLE, split)
            want_keys: dict = {}
            want_ids = []
            for s, st in zip(stack, state):
                if st == RUNNABLE:
                    want_ids.append(-1)
                    continue
                sub = (st if 0 <= st < 5 else 4) if split == 1 else \
                    int(st == DISK) if split == 2 else 0
                want_ids.append(want_keys.setdefault((s, sub), len(want_keys)))
            assert ids.tolist() == want_ids and keys == list(want_keys)
            secs, counts, pairs = interval_sums.sums(ids, dur, len(keys), tid)
            want_secs, want_counts, want_pairs = [0.0] * len(keys), [0] * len(keys), {}
            for k, d, t in zip(want_ids, dur, tid):
                if k >= 0:
                    want_secs[k] += d  # (in row order: the same float to the last bit)
                    want_counts[k] += 1
                    want_pairs.setdefault((k, t), None)
            assert secs == want_secs and counts == want_counts
            assert pairs == list(want_pairs)
    with pytest.raises(IndexError):  # a key past the remap
        interval_sums.sums(np.array([0, 3]), array("d", [1.0, 2.0]), 2, None,
                           array("i", [1, 0]))


def _rows_by_dict(rows: list[tuple[int, ...]]) -> tuple[list[int], list[int]]:
    """Profile.stack's numbering: a dict of tuples, in first-met order."""
    ix: dict[tuple[int, ...], int] = {}
    ids = [ix.setdefault(row, len(ix)) for row in rows]
    return ids, [ids.index(i) for i in range(len(ix))]


def _csr(rows: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    return offsets, np.array([v for r in rows for v in r], dtype=np.int64)


@pytest.mark.parametrize("chunk", [column_ops.CHUNK, 5])
@pytest.mark.parametrize("seed", range(40))
def test_distinct_rows_number_rows_as_a_dict_of_tuples_does(seed, chunk):
    """In one chunk of items, and in chunks of 5 items (a longer row is a chunk of its
    own)."""
    rng = random.Random(seed)
    pool = [tuple(rng.choice([0, 1, 2, 7, 2 ** 31 - 1]) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 12))]
    rows = [rng.choice(pool) for _ in range(rng.randint(0, 60))]
    ids, first = column_ops.distinct_rows(*_csr(rows), chunk=chunk)
    assert (ids.tolist(), first.tolist()) == _rows_by_dict(rows)


@pytest.mark.parametrize("chunk", [column_ops.CHUNK, 100])
def test_distinct_rows_are_exact_when_the_hashes_collide(chunk):
    """A Thue-Morse row and its complement (2^11 items) have the same polynomial hash
    modulo 2^64 for every odd multiplier (the classic attack on such hashes): an upload
    can make them, and the rows must still be told apart."""
    n = 2 ** 11
    morse = tuple(bin(i).count("1") % 2 for i in range(n))
    other = tuple(1 - v for v in morse)
    rows = [morse, other, morse, (5,), other]
    ids, first = column_ops.distinct_rows(*_csr(rows), chunk=chunk)
    assert ids.tolist() == [0, 1, 0, 2, 1] and first.tolist() == [0, 1, 3]


@pytest.mark.parametrize("seed", range(40))
def test_dense_ids_by_lead_are_dense_ids(seed):
    """Rows whose other columns mostly follow the lead (as a call chain's process and
    generations do), some not: the ids and distinct rows of dense_ids."""
    rng = random.Random(seed)
    n, size = rng.randint(0, 90), rng.randint(1, 12)
    owner = [(rng.choice(SMALL), rng.choice(SPREAD)) for _ in range(size)]
    lead = [rng.randrange(size) for _ in range(n)]
    rows = [owner[k] if rng.random() < 0.7 else (rng.choice(SMALL), rng.choice(SPREAD))
            for k in lead]
    columns = [np.array(lead, dtype=np.int32), np.array([a for a, _ in rows], dtype=np.int32),
               np.array([b for _, b in rows], dtype=np.int64)]
    ids, distinct = column_ops.dense_ids_by_lead(columns[0], size, *columns[1:])
    want_ids, want = column_ops.dense_ids(*columns)
    assert ids.tolist() == want_ids.tolist()
    assert [c.tolist() for c in distinct] == [c.tolist() for c in want]


@pytest.mark.parametrize("chunk", [1, 7, 1000])
@pytest.mark.parametrize("seed", range(30))
def test_dense_ids_in_chunks_are_dense_ids(seed, chunk):
    rng = random.Random(seed)
    columns = _columns(rng, rng.choice([SMALL, SPREAD]), np.int64)
    ids, distinct = column_ops.dense_ids_in_chunks(*columns, chunk=chunk)
    want_ids, want = column_ops.dense_ids(*columns)
    assert ids.tolist() == want_ids.tolist()
    assert [c.tolist() for c in distinct] == [c.tolist() for c in want]
