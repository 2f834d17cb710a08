"""The stacks as CSR columns (analysis/stack_table.py) read and change like the list of
tuples they stand for: every pass written against the list works on a loaded profile."""
import io
import random

import pytest

from analysis import profile_io, transforms
from analysis.importers import load
from analysis.profile_columns import stack_table
from analysis.profile_size import approx_bytes, derived_bytes
from analysis.stack_table import StackTable, frame_count
from analysis.symbols import symbolize
from conftest import FIXTURES, SPINPOOL

STACKS = [(3, 1, 2), (), (0,), (4, 4, 4, 4), (2, 0)]


def test_reads_like_the_list():
    t = StackTable.of(STACKS)
    assert len(t) == 5 and list(t) == STACKS and t == STACKS and t == StackTable.of(STACKS)
    assert [t[i] for i in range(5)] == STACKS and t[-1] == (2, 0) and t[-5] == (3, 1, 2)
    assert t[1:4] == STACKS[1:4] and t[::-2] == STACKS[::-2]
    assert frame_count(t) == frame_count(STACKS) == 10
    for bad in (5, -6, 1 << 40):
        with pytest.raises(IndexError):
            t[bad]
    assert t != [(3, 1, 2)] and t != STACKS[:4] + [(2, 1)]


def test_changes_go_beside_the_columns_and_copies_keep_their_own():
    """An append goes after the columns, a replaced stack over them; a copy shares the
    columns (a transform's view of a loaded profile) and its changes are its own."""
    t = StackTable.of(STACKS)
    offsets, values = t.columns()
    c = t.copy()
    c[0] = (9,)
    c.append((7, 7))
    c[-1] = (8,)
    assert list(c) == [(9,)] + STACKS[1:] + [(8,)] and list(t) == STACKS
    assert t.is_plain() and not c.is_plain() and t.columns() == (offsets, values)
    assert c.own_rows(t) == [(9,), (8,)] and t.own_rows(t) == [] and c.changed_rows() == [(9,), (8,)]
    assert StackTable.of(c) == c and StackTable.of(c).is_plain()
    o2, v2 = c.columns()
    assert list(o2) == [0, 1, 1, 2, 6, 8, 9] and list(v2) == [9, 0, 4, 4, 4, 4, 2, 0, 8]
    with pytest.raises(IndexError):
        c[7] = (1,)


def test_copies_and_pickles_are_equal_and_their_own():
    import copy
    import pickle
    t = StackTable.of(STACKS)
    t[1] = (5,)
    t.append((6, 7))
    for other in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert other == t and other is not t
        other[0] = (1,)
        other.append((2,))
        assert t[0] == (3, 1, 2) and len(t) == 6


def test_random_edits_agree_with_a_list():
    rng = random.Random(7)
    stacks = [tuple(rng.randrange(50) for _ in range(rng.randrange(6))) for _ in range(40)]
    t, model = StackTable.of(stacks), list(stacks)
    for _ in range(300):
        op = rng.randrange(3)
        s = tuple(rng.randrange(50) for _ in range(rng.randrange(4)))
        if op == 0:
            t.append(s)
            model.append(s)
        else:
            i = rng.randrange(-len(model), len(model))
            t[i] = s
            model[i] = s
        if rng.randrange(20) == 0:
            t = t.copy()
        if rng.randrange(10) == 0:  # (the columns with the changes, made by arrays)
            assert list(StackTable(*t.columns())) == model
    assert list(t) == model and [t[i] for i in range(len(model))] == model
    assert list(StackTable.of(t)) == model and frame_count(t) == frame_count(model)
    assert list(StackTable(*t.columns())) == model


@pytest.fixture(scope="module")
def both():
    """A capture with its stacks a list of tuples (as the importers make them) and as
    loaded back (a StackTable)."""
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    symbolize(p, [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "1.0.0-idle.perf.data.tar.bz2"])
    assert type(p.stacks) is StackTable  # (the import's end: Profile.compact_stacks)
    out = io.BytesIO()
    profile_io.dump(p, out)
    p.stacks = list(p.stacks)
    return p, profile_io.load(io.BytesIO(out.getvalue()))


def test_a_loaded_profile_costs_less_and_its_transforms_share_its_columns(both):
    """A loaded profile's stacks cost their columns (8 bytes a stack, 4 a frame), not a
    tuple each; a transform's view keeps the columns and holds only the stacks it
    changed, and gives the same stacks as on the imported profile."""
    p, q = both
    assert type(q.stacks) is StackTable and type(p.stacks) is list
    assert approx_bytes(q) < approx_bytes(p)
    names = [f.name for f in p.functions]
    ops = [(kind, names.index(name)) for name in ("std::mutex::lock",
                                                  "pthread_mutex_lock@@GLIBC_2.2.5")
           for kind in (transforms.MERGE, transforms.DROP, transforms.COLLAPSE_LIB,
                        transforms.COLLAPSE_REC)]
    for kind, fid in ops:
        t = (transforms.Transform(kind, fid),)
        a, b = transforms.apply(p, t), transforms.apply(q, t)
        assert list(b.stacks) == list(a.stacks) and list(b.s_stack) == list(a.s_stack)
        if type(b.stacks) is StackTable and b.stacks is not q.stacks:
            assert b.stacks.columns()[1] is not None
            assert derived_bytes(q, b) <= derived_bytes(p, a) + 64
        assert stack_table(b).values.tolist() == stack_table(a).values.tolist()


def test_columns_of_a_loaded_profile_are_read_without_a_copy(both):
    _, q = both
    first, second = stack_table(q), stack_table(q)
    assert first is second and not first.values.flags.writeable
    assert first.offsets.tolist() == [0] + [sum(map(len, q.stacks[:i + 1]))
                                            for i in range(len(q.stacks))]


def test_every_fixture_saved_and_loaded_gives_its_stacks():
    """Saved and loaded, each perf.data fixture gives back its stacks and samples."""
    paths = sorted((FIXTURES / "perfdata").glob("*.perf.data"))
    assert len(paths) >= 5
    for path in paths:
        p = load(path)
        out = io.BytesIO()
        profile_io.dump(p, out)
        q = profile_io.load(io.BytesIO(out.getvalue()))
        assert q.stacks == p.stacks and list(q.s_stack) == list(p.s_stack), path.name
