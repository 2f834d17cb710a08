"""Views computed from the model on the spinpool capture, checked against perf's output."""
import pytest

from analysis.aggregate import Selection, stack_weights
from analysis.aggregate.functions import top_dsos, top_functions
from analysis.aggregate.threads import by_process, by_thread
from analysis.aggregate.timeline import samples_over_time
from analysis.aggregate.tree import (DEEPER, MAX_DEPTH, MERGED, ROOT, bottom_up, sandwich,
                                     top_down)
from analysis.importers import load
from analysis.importers.deep_stacks import MAX_FRAMES
from conftest import SPINPOOL


@pytest.fixture(scope="module")
def idle():
    return load(SPINPOOL / "1.0.0-idle.truth-script.txt")


def _fid(p, name):
    return next(f.id for f in p.functions if f.name == name)


def _children(rows, ix=0):
    return [r for r in rows if r.parent == ix]


def _row(p, rows, name, parent=0):
    return next(r for r in _children(rows, parent)
                if isinstance(r.key, int) and r.key >= 0 and p.functions[r.key].name == name)


def test_top_down_tree_totals(idle):
    tree = top_down(idle, stack_weights(idle))
    rows = tree.rows
    assert rows[0].key == ROOT and rows[0].total == [975]
    assert sum(c.total[0] for c in _children(rows)) == 975
    # every row: its self plus its children's totals (nothing merged or cut here)
    for i, r in enumerate(rows):
        assert r.total[0] == r.self[0] + sum(c.total[0] for c in _children(rows, i))
    assert sum(r.self[0] for r in rows) == 975


def test_merging_small_frames(idle):
    rows = top_down(idle, stack_weights(idle), limit_of=lambda total: 100).rows
    (libstdcxx,) = _children(rows)  # every chain starts in the unsymbolized libstdc++ frame
    kids = _children(rows, rows.index(libstdcxx))
    assert MERGED in [k.key for k in kids]
    assert sum(k.total[0] for k in kids) == 975
    assert all(k.total[0] >= 100 for k in kids if k.key != MERGED)


def test_bottom_up_roots_are_self_time(idle):
    rows = bottom_up(idle, stack_weights(idle)).rows
    assert _row(idle, rows, "pthread_mutex_lock@@GLIBC_2.2.5").total == [179]


def test_sandwich_callers_and_callees(idle):
    fid = _fid(idle, "__GI___lll_lock_wait")
    callers, callees = sandwich(idle, stack_weights(idle), fid)
    assert callers[0].total == callees[0].total == [283]
    assert callees[0].self == [55]
    child_names = {idle.functions[c.key].name for c in _children(callees)}
    assert "entry_SYSCALL_64_after_hwframe" in child_names


def test_a_zoom_is_the_subtree_below_its_frames(idle):
    w = stack_weights(idle)
    whole = top_down(idle, w).rows
    (first,) = _children(whole)
    second = max(_children(whole, 1), key=lambda r: r.total[0])
    zoomed = top_down(idle, w, prefix=(first.key, second.key))
    assert zoomed.path == [first.total[0], second.total[0]]
    assert zoomed.rows[0].key == second.key and zoomed.rows[0].total == second.total
    assert top_down(idle, w, prefix=(first.key, first.key)) is None  # no such stack


def _deep(tmp_path, frames):
    """A folded capture: one sample `frames` deep (recursion), and two shallow ones."""
    path = tmp_path / f"deep{frames}.folded"
    with open(path, "w") as f:
        f.write("main;work 2\n")
        f.write("main;" + "recurse;" * frames + "leaf 5\n")
    return load(path)


def _depth(rows, i):
    d = 0
    while rows[i].parent >= 0:
        i, d = rows[i].parent, d + 1
    return d


@pytest.mark.parametrize("frames", [5000, 2_000_000])
def test_deep_stacks_make_bounded_trees(tmp_path, frames):
    """Recursing over a 5,000-frame stack passed Python's limit (RecursionError); the
    trees now stop at MAX_DEPTH levels with one DEEPER row holding the rest, whatever
    the depth (2,000,000 frames are cut to perf's 655,360 at import, root side)."""
    p = _deep(tmp_path, frames)
    w = stack_weights(p)
    rows = top_down(p, w).rows
    assert rows[0].total == [7] and len(rows) <= MAX_DEPTH + 4
    (cut,) = [i for i, r in enumerate(rows) if r.key == DEEPER]
    assert rows[cut].total == [5] and _depth(rows, cut) == MAX_DEPTH + 1
    for i, r in enumerate(rows):
        assert r.total[0] == r.self[0] + sum(c.total[0] for c in _children(rows, i))
    outermost = "main" if frames < MAX_FRAMES else \
        f"[truncated: {frames + 2 - MAX_FRAMES} frames]"
    assert _row(p, rows, outermost).total == [5 if frames > MAX_FRAMES else 7]
    leaves = bottom_up(p, w).rows
    assert _row(p, leaves, "leaf").total == [5] and _row(p, leaves, "work").total == [2]
    callers, callees = sandwich(p, w, _fid(p, "recurse"))
    assert callers[0].total == callees[0].total == [5]
    assert [p.functions[r.key].name for r in callers[1:]] == [outermost]
    assert len(callees) == MAX_DEPTH + 2 and callees[-1].key == DEEPER  # recursion below


def test_a_budget_of_rows_cuts_wide_trees(idle):
    rows = top_down(idle, stack_weights(idle), max_nodes=20).rows
    assert 20 <= len(rows) < 40
    assert rows[0].total == [975]
    assert sum(r.self[0] for r in rows if r.key != DEEPER) + \
        sum(r.total[0] for r in rows if r.key == DEEPER) == 975


def test_functions_and_dsos(idle):
    w = stack_weights(idle)
    funcs = top_functions(idle, w)
    assert sum(f.self for f in funcs) == 975
    dsos = {d["dso"]: d for d in top_dsos(idle, w)}
    assert dsos["/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"]["total"] == 975
    assert sum(d["self"] for d in dsos.values()) == 975


def test_threads_and_selection(idle):
    threads = by_thread(idle)
    assert [t["tid"] for t in threads] == [18137, 18136] or \
        [t["tid"] for t in threads] == [18136, 18137]
    assert sum(t["samples"] for t in threads) == 975
    one = threads[0]["tid"]
    w = stack_weights(idle, Selection(tids=frozenset({one})))
    assert sum(w.values()) == threads[0]["samples"]
    assert by_process(idle)[0]["threads"] == 2


def test_samples_over_time(idle):
    tl = samples_over_time(idle, bucket_s=1.0)
    assert len(tl["series"]) == 2
    assert sum(sum(s) for s in tl["series"].values()) == 975
    start = tl["start"]
    w = stack_weights(idle, Selection(start_s=start, end_s=start + 1.0))
    assert sum(w.values()) == sum(s[0] for s in tl["series"].values())
