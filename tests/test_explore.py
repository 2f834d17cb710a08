"""The data behind the capture page, on the spinpool capture, and the saved profile."""
import io

from analysis import explore, profile_io
from analysis.importers import load
from analysis.symbols import symbolize
from conftest import SPINPOOL


def _idle():
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    symbolize(p, [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "1.0.0-idle.perf.data.tar.bz2"])
    return p


def test_saved_profile_gives_the_same_views():
    p = _idle()
    buf = io.BytesIO()
    profile_io.dump(p, buf)
    buf.seek(0)
    q = profile_io.load(buf)
    assert explore.flame(q, explore.Query()) == explore.flame(p, explore.Query())
    assert explore.timeline(q) == explore.timeline(p)
    assert q.coverage == p.coverage and q.meta == p.meta


def test_zoom_invert_focus_search_threads_time():
    p = _idle()
    full = explore.flame(p, explore.Query(search="futex"))
    assert full["total"] == 975
    assert full["search"]["samples"] == 386  # __x64_sys_futex's total in perf's report
    (stdcxx,) = full["tree"]["c"]
    loop = next(c for c in stdcxx["c"] if c["n"] == "qualla::ThreadPool::loop()")
    zoomed = explore.flame(p, explore.Query(root=(stdcxx["f"], loop["f"])))
    assert zoomed["tree"]["t"] == 52 and [x["n"] for x in zoomed["path"]][-1] == loop["n"]
    inverted = explore.flame(p, explore.Query(invert=True))
    leaves = {c["n"]: c["t"] for c in inverted["tree"]["c"]}
    assert leaves["pthread_mutex_lock@@GLIBC_2.2.5"] == 179
    focus = explore.flame(p, explore.Query(focus=loop["f"]))
    assert focus["callers"]["t"] == focus["callees"]["t"] == 52
    threads = explore.threads(p, explore.Query())["threads"]
    one = threads[0]["tid"]
    assert explore.flame(p, explore.Query(tids=frozenset({one})))["total"] == \
        threads[0]["samples"]
    first_second = explore.flame(p, explore.Query(start=0.0, end=1.0))["total"]
    tl = explore.timeline(p)
    assert first_second == sum(sum(s["counts"][:10]) for s in tl["series"])
    assert sum(sum(row) for row in tl["heatmap"]["cells"]) == 975


def test_small_frames_merge_relative_to_the_zoom():
    p = load(SPINPOOL / "1.0.0-idle.truth-script.txt")
    tree = explore.flame(p, explore.Query())["tree"]

    def nodes(n):
        yield n
        for c in n["c"]:
            yield from nodes(c)
    assert all(n["t"] >= 1 for n in nodes(tree))
    assert sum(c["t"] for c in tree["c"]) == tree["t"]
