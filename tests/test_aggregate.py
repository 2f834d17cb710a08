"""Views computed from the model on the spinpool capture, checked against perf's output."""
import pytest

from analysis.aggregate import Selection, stack_weights
from analysis.aggregate.functions import top_dsos, top_functions
from analysis.aggregate.threads import by_process, by_thread
from analysis.aggregate.timeline import samples_over_time
from analysis.aggregate.tree import bottom_up, sandwich, to_dict, top_down
from analysis.importers import load
from conftest import SPINPOOL


@pytest.fixture(scope="module")
def idle():
    return load(SPINPOOL / "1.0.0-idle.truth-script.txt")


def _fid(p, name):
    return next(f.id for f in p.functions if f.name == name)


def test_top_down_tree_totals(idle):
    root = top_down(idle, stack_weights(idle))
    assert root.total == 975
    assert sum(c.total for c in root.children.values()) == 975
    d = to_dict(idle, root)
    assert d["total"] == 975 and d["name"] == "root"


def test_merging_small_frames(idle):
    d = to_dict(idle, top_down(idle, stack_weights(idle)), min_weight=100)
    (libstdcxx,) = d["children"]  # every chain starts in the unsymbolized libstdc++ frame
    names = [c["name"] for c in libstdcxx["children"]]
    assert "[other]" in names
    assert sum(c["total"] for c in libstdcxx["children"]) == 975


def test_bottom_up_roots_are_self_time(idle):
    root = bottom_up(idle, stack_weights(idle))
    lock = root.children[_fid(idle, "pthread_mutex_lock@@GLIBC_2.2.5")]
    assert lock.total == 179


def test_sandwich_callers_and_callees(idle):
    fid = _fid(idle, "__GI___lll_lock_wait")
    callers, callees = sandwich(idle, stack_weights(idle), fid)
    assert callers.total == callees.total == 283
    assert callees.self == 55
    child_names = {idle.functions[c].name for c in callees.children}
    assert "entry_SYSCALL_64_after_hwframe" in child_names


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
