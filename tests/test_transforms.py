"""Call-tree transforms (analysis.transforms) against perf's own answers and FlameGraph's.

- dropping a function leaves the samples `perf report --parent F -x` does not keep, and
  collapsing a library gives its frame perf's `--sort dso` self and children, on the
  spinpool case's 1.0.0-busy capture (perf's outputs in
  tests/fixtures/transforms/, made by perf_reports.sh there; rerun when perf is here);
- merging a function, collapsing its recursion and dropping it fold to what
  stackcollapse-perf.pl's published output becomes with the same edit made to its text
  (the frame removed from each line, runs of it made one, the lines with it removed).
"""
import re
import shutil
import subprocess
from collections import Counter

import pytest

from analysis import explore, transforms
from analysis.aggregate import stack_weights
from analysis.aggregate.functions import top_functions
from analysis.errors import AnalysisError
from analysis.export.folded import FoldOptions, fold
from analysis.importers import load, perf_script
from analysis.symbols import symbolize
from conftest import PUBLIC, ROOT, SPINPOOL
from inline_profile import inline_profile

FIXTURES = ROOT / "tests" / "fixtures" / "transforms"
PERF_REPORTS = FIXTURES / "spinpool-1.0.0-busy.perf-report.txt"
FG = PUBLIC / "brendangregg__FlameGraph" / "test"
_ROW = re.compile(r"^\s+([\d.]+)%\s+(?:([\d.]+)%\s+)?(\d+)\s+(.+)$")


@pytest.fixture(scope="module")
def busy():
    p = load(SPINPOOL / "1.0.0-busy.perf.data")
    # inline=False: compared with perf's report, made without inline frames
    symbolize(p, [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "kernel-symbols.zip",
                  SPINPOOL / "1.0.0-busy.perf.data.tar.bz2"], inline=False)
    return p


def _perf_reports(text):
    """{command: [(percent, children percent or None, samples, key)]}."""
    out, rows = {}, None
    for line in text.splitlines():
        if line.startswith("$ "):
            rows = out[line[2:]] = []
            continue
        m = _ROW.match(line)
        assert m, line
        first, second, samples, key = m.groups()
        if second is None:
            rows.append((float(first), None, int(samples), key))
        else:  # --children: children %, self %, self samples
            rows.append((float(second), float(first), int(samples), key))
    return out


REPORTS = _perf_reports(PERF_REPORTS.read_text())
BASE = "perf report --stdio -n -g none"


def _fid(profile, name, dso=None):
    (fid,) = [f.id for f in profile.functions if f.name == name and
              (dso is None or profile.mappings[f.mapping_id].path.endswith(dso))]
    return fid


def _table(profile, weights=None):
    weights = stack_weights(profile) if weights is None else weights
    return {f.name: (f.self, f.total) for f in top_functions(profile, weights)}


def _parent_samples(name):
    rows = REPORTS[f"{BASE} --no-children --sort parent --parent ^{name}$ -x"]
    return sum(r[2] for r in rows)


DROPPED = ("do_syscall_64", "__x64_sys_futex", "futex_wait", "__GI___lll_lock_wait",
           "__GI___lll_lock_wake", "pthread_mutex_lock@@GLIBC_2.2.5",
           "pthread_mutex_lock@plt")


@pytest.mark.parametrize("name", DROPPED)
def test_drop_leaves_what_perfs_parent_filter_does_not_keep(busy, name):
    """973 samples; `--parent F -x` keeps those with F on the stack (leaf included)."""
    fid = _fid(busy, name)
    gone = _parent_samples(name)
    assert gone > 0
    q = explore.Query(transforms=(transforms.Transform("df", fid),))
    assert explore.flame(busy, q)["total"] == 973 - gone
    table = explore.functions(busy, q, limit=1000)
    assert table["total"] == 973 - gone
    assert fid not in {f["f"] for f in table["functions"]}
    # what stays is untouched: every function's self and total over the samples kept,
    # counted here from the stacks, not by the transform
    kept = {sid: w for sid, w in stack_weights(busy).items()
            if fid not in {g for loc in busy.stacks[sid]
                           for g in busy.locations[loc].functions}}
    assert sum(kept.values()) == 973 - gone
    assert _table(transforms.apply(busy, q.transforms)) == _table(busy, kept)


def test_drop_within_a_thread_and_time_range(busy):
    """The selection still applies to the rows a drop keeps."""
    tid = max(set(busy.s_tid), key=list(busy.s_tid).count)
    fid = _fid(busy, "do_syscall_64")
    q = explore.Query(tids=frozenset([tid]), start=1.0, end=3.0)
    t0 = explore.first_time(busy)
    expected = 0
    for i in range(len(busy)):
        if busy.s_tid[i] == tid and 1.0 <= busy.s_time[i] - t0 < 3.0:
            funcs = {g for loc in busy.stacks[busy.s_stack[i]]
                     for g in busy.locations[loc].functions}
            expected += fid not in funcs
    before = explore.flame(busy, q)["total"]
    after = explore.flame(busy, explore.Query(
        tids=q.tids, start=1.0, end=3.0, transforms=(transforms.Transform("df", fid),)))
    assert 0 < expected == after["total"] < before


def test_collapsed_library_is_perfs_dso_row(busy):
    """Each DSO collapsed: its frame's self is `--sort dso`'s, its total what
    `--children --sort dso` gives it (973 samples: 0.01% is 0.1 sample, so the
    rounded percentage is the count)."""
    flat = {r[3]: r[2] for r in REPORTS[f"{BASE} --no-children --sort dso"]}
    children = {r[3]: round(r[1] * 973 / 100)
                for r in REPORTS[f"{BASE} --children --sort dso"]}
    assert children == {"libstdc++.so.6.0.30": 973, "libc.so.6": 787,
                        "[kernel.kallsyms]": 473, "libqualla.so": 186}
    for dso, total in children.items():
        fn = next(f for f in busy.functions if busy.mappings[f.mapping_id].basename == dso)
        ts = (transforms.Transform("cr", fn.id),)
        p = transforms.apply(busy, ts)
        table = _table(p)
        assert table[dso] == (flat.get(dso, 0), total), dso
        # the DSO's frames are the new function's only, and never two in a row
        lib = len(busy.functions)
        for stack in p.stacks:
            funcs = [g for loc in stack for g in p.locations[loc].functions]
            assert all(g == lib for g in funcs if p.functions[g].mapping_id == fn.mapping_id)
            assert all(not (a == b == lib) for a, b in zip(funcs, funcs[1:]))
        # the page names the chip after the DSO; the new frame is in the flame graph
        data = explore.flame(busy, explore.Query(transforms=ts))
        assert data["transforms"] == [{"t": f"cr-{fn.id}", "kind": "cr",
                                       "verb": "collapse", "n": dso}]
        nodes = data["tree"]["nodes"]
        assert sum(n["s"] for n in nodes if n["f"] == lib) == flat.get(dso, 0)


def test_merge_gives_the_self_time_to_the_caller(busy):
    """do_syscall_64's 133 self samples go to its caller (the syscall entry, 0 self):
    every sample stays, the function is gone, its callers' totals are unchanged."""
    fid = _fid(busy, "do_syscall_64")
    before = _table(busy)
    after = _table(transforms.apply(busy, (transforms.Transform("mf", fid),)))
    assert before["do_syscall_64"] == (133, 473) and "do_syscall_64" not in after
    assert before["entry_SYSCALL_64_after_hwframe"] == (0, 473)
    assert after["entry_SYSCALL_64_after_hwframe"] == (133, 473)
    assert sum(s for s, _ in after.values()) == sum(s for s, _ in before.values()) == 973
    assert {n: v for n, v in after.items() if n != "entry_SYSCALL_64_after_hwframe"} == \
        {n: v for n, v in before.items()
         if n not in ("entry_SYSCALL_64_after_hwframe", "do_syscall_64")}


# ---- against stackcollapse-perl's published folded stacks ------------------------------

def _expected(result, edit):
    """stackcollapse-perf.pl's folded lines (weighted by period) after `edit(frames)`
    (None: the line goes), the lines that become the same added up."""
    out = Counter()
    for line in result.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        comm, *frames = stack.split(";")
        frames = edit(frames)
        if frames is not None:
            out[";".join([comm, *frames])] += int(n)
    return dict(out)


def _folded(profile):
    return fold(profile, FoldOptions.from_flag("kernel", convention="flamegraph",
                                               weight="period"))


VERTX = (FG / "perf-vertx-stacks-01.txt", FG / "results" / "perf-vertx-stacks-01-collapsed-kernel.txt")


@pytest.fixture(scope="module")
def vertx():
    source, result = VERTX
    p = perf_script.parse(source)
    assert _folded(p) == _expected(result, lambda frames: frames)  # the baseline
    return p


def _runs_of(name):
    def edit(frames):
        out = []
        for f in frames:
            if not (f == name and out and out[-1] == name):
                out.append(f)
        return out
    return edit


#: a JIT-compiled JavaScript function of the capture that calls itself, as the profile
#: names it (the folded text drops Java's L prefix)
JS = "Lorg/mozilla/javascript/gen/file__home_bgregg_testtest_vert_x_2_1_4_sys_mods_io_vertx_lang_js_1_1_0"
#: (folded spelling, the profile's name)
INTERPRETER, SCRIPT = ("Interpreter", "Interpreter"), (JS[1:], JS)


@pytest.mark.parametrize("folded,name", [INTERPRETER, SCRIPT])
def test_collapse_recursion_folds_as_the_runs_made_one(vertx, folded, name):
    ts = (transforms.Transform("rec", _fid(vertx, name)),)
    got = _folded(transforms.apply(vertx, ts))
    assert got == _expected(VERTX[1], _runs_of(folded))
    assert got != _folded(vertx)  # the function does call itself here


@pytest.mark.parametrize("folded,name", [INTERPRETER, SCRIPT, ("start_thread",) * 2])
def test_merge_folds_as_the_frame_removed(vertx, folded, name):
    ts = (transforms.Transform("mf", _fid(vertx, name)),)
    got = _folded(transforms.apply(vertx, ts))
    assert got == _expected(VERTX[1], lambda frames: [f for f in frames if f != folded])
    assert sum(got.values()) == sum(_folded(vertx).values())


@pytest.mark.parametrize("folded,name", [INTERPRETER, SCRIPT, ("sys_write_[k]", "sys_write")])
def test_drop_folds_as_the_lines_removed(vertx, folded, name):
    ts = (transforms.Transform("df", _fid(vertx, name)),)
    got = _folded(transforms.apply(vertx, ts))
    assert got == _expected(VERTX[1], lambda frames: None if folded in frames else frames)
    assert sum(got.values()) < sum(_folded(vertx).values())


def test_transforms_stack_in_order(vertx):
    """Each transform applies to what the ones before it left: dropping Interpreter after
    merging it drops nothing, merging it after dropping it merges nothing."""
    fid = _fid(vertx, "Interpreter")
    merge, drop = transforms.Transform("mf", fid), transforms.Transform("df", fid)
    assert _folded(transforms.apply(vertx, (merge, drop))) == \
        _expected(VERTX[1], lambda frames: [f for f in frames if f != "Interpreter"])
    assert _folded(transforms.apply(vertx, (drop, merge))) == \
        _expected(VERTX[1], lambda frames: None if "Interpreter" in frames else frames)


# ---- the model: inline frames, ids, the parameter, the kept results ---------------------

def test_merge_of_an_inlined_function_keeps_the_others_frame_and_line():
    p, (main, outer, helper, leaf) = inline_profile()
    t = transforms.apply(p, (transforms.Transform("mf", helper),))
    # self is the symbol's that holds the address (outer), as perf counts it
    assert _table(p) == {"main": (1, 6), "outer": (2, 5), "helper": (0, 5), "leaf": (3, 3)}
    assert _table(t) == {"main": (1, 6), "outer": (2, 5), "leaf": (3, 3)}
    (loc,) = [loc for loc in t.locations[len(p.locations):]]
    assert loc.functions == (outer,) and loc.lines == (("app.c", 12),)
    assert loc.address == 0x20
    assert len(p.locations) == 3 and p.stacks[0] != t.stacks[0]  # the original is intact


def test_parse_and_errors(busy):
    T = transforms.Transform
    assert transforms.parse("mf-12.df-40.cr-3.rec-7") == (T("mf", 12), T("df", 40),
                                                          T("cr", 3), T("rec", 7))
    assert transforms.parse("mf-1.mf-1.df-2") == (T("mf", 1), T("df", 2))
    assert transforms.unparse(transforms.parse("mf-1.rec-2")) == "mf-1.rec-2"
    assert transforms.parse("") == () and transforms.parse(None) == ()
    for bad in ("xx-1", "mf-", "mf-a", "mf-1..df-2", "mf--1", "mf-1234567890",
                ".".join(f"mf-{i}" for i in range(transforms.MAX_TRANSFORMS + 1))):
        with pytest.raises(AnalysisError):
            transforms.parse(bad)
    with pytest.raises(AnalysisError, match="no such function"):
        explore.flame(busy, explore.Query(transforms=(T("mf", len(busy.functions)),)))


def test_a_collapsed_library_is_a_function_later_transforms_name(busy):
    libc = _fid(busy, "pthread_mutex_lock@@GLIBC_2.2.5")
    lib = len(busy.functions)  # the collapsed frame's id
    ts = (transforms.Transform("cr", libc), transforms.Transform("df", lib))
    assert explore.flame(busy, explore.Query(transforms=ts))["total"] == 973 - 787
    data = explore.flame(busy, explore.Query(transforms=ts[:1], focus=lib))
    assert data["callers"]["nodes"][0]["t"] == data["callees"]["nodes"][0]["t"] == 787
    lines = explore.lines(busy, explore.Query(transforms=ts[:1]), lib)
    assert lines["n"] == "libc.so.6" and lines["lines"] == []


def test_results_are_kept_and_extended(busy, monkeypatch):
    T = transforms.Transform
    a = (T("mf", _fid(busy, "do_syscall_64")),)
    b = a + (T("rec", _fid(busy, "futex_wait")),)
    first = transforms.chain(busy, a)
    made = []  # the profiles each transform applied to
    one = transforms._one
    monkeypatch.setattr(transforms, "_one", lambda p, t: made.append(p) or one(p, t))
    longer = transforms.chain(busy, b)
    assert made == [first.profile]  # started from the kept prefix
    assert longer.names == ("do_syscall_64", "futex_wait")
    assert transforms.chain(busy, b) is longer and len(made) == 1
    for i in range(transforms.KEEP + 1):
        transforms.chain(busy, (T("df", i),))
    assert len(busy.memo(("transforms",), dict)) == transforms.KEEP


def test_functions_table_orders(busy):
    """The sandwich view's columns: by self (perf's order), total, name, library."""
    rows = {s: explore.functions(busy, explore.Query(sort=s), limit=1000)["functions"]
            for s in explore.SORTS}
    assert len({len(r) for r in rows.values()}) == 1
    assert [r["s"] for r in rows["self"]] == sorted((r["s"] for r in rows["self"]),
                                                   reverse=True)
    assert [r["t"] for r in rows["total"]] == sorted((r["t"] for r in rows["self"]),
                                                    reverse=True)
    assert rows["total"][0]["n"] == "libstdc++.so.6.0.30+0xd44a3"
    names = [r["n"].casefold() for r in rows["name"]]
    assert names == sorted(names)
    assert [r["d"] for r in rows["dso"]] == sorted(r["d"] for r in rows["self"])


@pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf")
def test_perfs_answers_are_perfs():
    """The fixture is what perf says today (perf 6.1 reads this capture)."""
    out = subprocess.run(["sh", str(FIXTURES / "perf_reports.sh")], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    assert out == PERF_REPORTS.read_text()


@pytest.fixture(scope="module")
def busy_inline():
    """The busy capture with its inline frames (28 of its locations hold several
    functions): where a merge or a recursion collapse must split a location."""
    p = load(SPINPOOL / "1.0.0-busy.perf.data")
    symbolize(p, [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "kernel-symbols.zip",
                  SPINPOOL / "1.0.0-busy.perf.data.tar.bz2"])
    assert sum(len(loc.functions) > 1 for loc in p.locations) == 28
    return p


def _function_stacks(p):
    return [tuple(f for loc in stack for f in p.locations[loc].functions)
            for stack in p.stacks]


def test_the_c_loops_take_the_frames_the_exact_walk_takes(busy_inline, vertx):
    """Merges and recursion collapses filter most stacks in C loops (the locations of
    the function hold it alone); every function of two captures, inline frames and
    recursion among them, gives the stacks the frame-by-frame walk gives."""
    exact = transforms._filter_frames
    for p in (busy_inline, vertx):
        used = {f for stack in _function_stacks(p) for f in stack}
        for fid in sorted(used):
            for kind in ("mf", "rec"):
                t = transforms.Transform(kind, fid)
                fast = transforms._one(p, t)
                try:
                    transforms._filter_frames = lambda q, f, keep, fast=None: exact(q, f, keep)
                    walked = transforms._one(p, t)
                finally:
                    transforms._filter_frames = exact
                assert _function_stacks(fast) == _function_stacks(walked), (kind, fid)


def test_merges_in_any_order_are_one_kept_result(busy):
    """A chain is kept under its normalized form: merges (drops, recursion collapses)
    next to each other in another order are the same result, not computed again; the
    chips still say them in the order asked."""
    T = transforms.Transform
    a, b = T("mf", _fid(busy, "do_syscall_64")), T("mf", _fid(busy, "futex_wait"))
    d1, d2 = T("df", _fid(busy, "__x64_sys_futex")), T("df", _fid(busy, "__GI___lll_lock_wait"))
    first = transforms.chain(busy, (a, b, d1, d2))
    again = transforms.chain(busy, (b, a, d2, d1, d2))
    assert again.profile is first.profile
    assert again.names == ("futex_wait", "do_syscall_64", "__GI___lll_lock_wait",
                           "__x64_sys_futex", "__GI___lll_lock_wait")

    def by_id(*ts):
        return tuple(sorted(ts, key=lambda t: t.function))
    assert transforms.normalized((b, a, d2, d1, d2)) == by_id(a, b) + by_id(d1, d2)
    # a collapse makes a function later transforms may name: it is never moved
    c = T("cr", _fid(busy, "do_syscall_64"))
    assert transforms.normalized((b, c, a)) == (b, c, a)


def test_a_chain_is_bounded_by_the_captures_size(busy, monkeypatch):
    """Each transform is a pass over every stack's frames: a capture whose frames are a
    third of the budget takes three at once, and a fourth is refused with a sentence,
    kept or not."""
    T = transforms.Transform
    monkeypatch.setattr(transforms, "WORK_BUDGET", 3 * transforms.frames(busy))
    assert transforms.most_transforms(busy) == 3
    three = tuple(T(k, _fid(busy, "do_syscall_64")) for k in ("mf", "df", "rec"))
    assert transforms.chain(busy, three).names == ("do_syscall_64",) * 3
    with pytest.raises(AnalysisError, match=r"^At most 3 transforms at once on this "
                       r"capture: its stacks hold [\d,]+ frames"):
        explore.flame(busy, explore.Query(transforms=three + (T("cr", 0),)))
    monkeypatch.setattr(transforms, "WORK_BUDGET", 1)
    assert transforms.most_transforms(busy) == 1  # one is always allowed
