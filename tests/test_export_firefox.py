"""The Firefox Profiler export (analysis/export/firefox.py, the Gecko format version 24 the
profiler's own perf script importer builds) read back: per-thread sample counts equal
perf script's per-tid counts, sample times are perf's, in order and within the capture,
every stack, frame and string index resolves, the stacks are the profile's; a selection
exports the explorer's samples, which are perf script's of that thread and time range
(every frame's samples too); captures without sample times and the off-CPU view are
refused with a sentence."""
import re
from collections import Counter

import pytest

from analysis import explore
from analysis.errors import AnalysisError
from analysis.export.firefox import GECKO_VERSION, firefox_bytes, read_firefox, to_gecko
from analysis.aggregate.functions import stack_functions
from analysis.importers import load
from conftest import FIXTURES, SPINPOOL
from script_selection import script_selection

HEADER = re.compile(r"^(\S.*?)\s+(?:(\d+)/)?(\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):\s+\d+\s+(\S+):")
CAPTURES = {"spinpool-busy": (SPINPOOL / "1.0.0-busy.perf.data",
                              SPINPOOL / "1.0.0-busy.script-raw.txt"),
            "system-wide": (FIXTURES / "perfdata" / "system-wide.perf.data",
                            FIXTURES / "perfdata" / "system-wide.script.txt"),
            "events": (FIXTURES / "perfdata" / "events.perf.data",
                       FIXTURES / "perfdata" / "events.script.txt")}


def _perf_script(path, event=None):
    """tid -> (comm, [sample times in s]) of one event, from perf script's headers."""
    out = {}
    for line in path.read_text().splitlines():
        m = HEADER.match(line)
        if m and (event is None or m.group(5) == event):
            comm, _, tid, t, _ = m.groups()
            out.setdefault(int(tid), (comm, []))[1].append(float(t))
    return out


@pytest.fixture(scope="module", params=sorted(CAPTURES))
def capture(request):
    data, script = CAPTURES[request.param]
    return request.param, load(data), script


def _check_indexes(thread):
    """Every index of the thread's tables resolves; a stack's prefix comes before it."""
    frames, stacks = thread["frameTable"], thread["stackTable"]
    assert frames["schema"]["location"] == 0 and stacks["schema"] == {"prefix": 0, "frame": 1}
    strings = thread["stringTable"]
    for row in frames["data"]:
        assert 0 <= row[frames["schema"]["location"]] < len(strings)
        assert row[frames["schema"]["category"]] in (0, 1)
    for i, (prefix, frame) in enumerate(stacks["data"]):
        assert prefix is None or 0 <= prefix < i
        assert 0 <= frame < len(frames["data"])
    schema = thread["samples"]["schema"]
    for row in thread["samples"]["data"]:
        assert 0 <= row[schema["stack"]] < len(stacks["data"])


def _folded(thread):
    """root;...;leaf -> samples, the frames' names as the profiler reads them."""
    frames, stacks = thread["frameTable"]["data"], thread["stackTable"]["data"]
    strings = thread["stringTable"]
    out = Counter()
    for stack, _, _ in thread["samples"]["data"]:
        names = []
        while stack is not None:
            prefix, frame = stacks[stack]
            names.append(strings[frames[frame][0]].rsplit(" (in ", 1)[0])
            stack = prefix
        out[";".join(reversed(names))] += 1
    return out


def test_threads_samples_and_times_are_perf_scripts(capture):
    name, p, script = capture
    for ev, event in enumerate(p.events):
        gecko = read_firefox(firefox_bytes(p, explore.Query(event=ev), name=name))
        meta = gecko["meta"]
        assert meta["version"] == GECKO_VERSION == 24 and meta["product"] == name
        assert [c["name"] for c in meta["categories"]] == ["User", "Kernel"]
        perf = _perf_script(script, event.name)
        assert {t["tid"]: len(t["samples"]["data"]) for t in gecko["threads"]} == \
            {tid: len(times) for tid, (_, times) in perf.items()}
        assert {t["tid"]: t["name"] for t in gecko["threads"]} == \
            {tid: comm for tid, (comm, _) in perf.items()}
        t0 = min(t for _, times in perf.values() for t in times)
        duration_ms = (p.meta.duration_s or 0) * 1000
        # the time of the capture's first sample (of any event)
        first = min(p.s_time)
        assert meta["startTime"] == pytest.approx(first * 1000)
        for thread in gecko["threads"]:
            _check_indexes(thread)
            times = [row[1] for row in thread["samples"]["data"]]
            assert times == sorted(times)
            assert 0 <= times[0] and times[-1] <= duration_ms + 1e-6
            # perf script's times (µs printed), from the capture's first sample
            expected = sorted((t - first) * 1000 for t in perf[thread["tid"]][1])
            assert times == pytest.approx(expected, abs=1e-3)
            assert (t0 - first) * 1000 <= times[0] + 1e-3


def test_the_stacks_are_the_profiles():
    p = load(CAPTURES["spinpool-busy"][0])
    gecko = to_gecko(p)
    # each thread's stacks, root first, named as the flame graph names the frames
    want: dict[int, Counter] = {}
    for i in range(len(p)):
        names = [p.functions[f].name for f in stack_functions(p, p.stacks[p.s_stack[i]])]
        want.setdefault(p.s_tid[i], Counter())[";".join(reversed(names))] += 1
    assert {t["tid"]: _folded(t) for t in gecko["threads"]} == want
    assert sum(map(len, want.values())) > 200 and sum(sum(c.values()) for c in
                                                       want.values()) == 973
    kernel = {row[7] for t in gecko["threads"] for row in t["frameTable"]["data"]}
    assert kernel == {0, 1}  # user and kernel frames
    assert gecko["meta"]["interval"] == pytest.approx(1000 / 99)


def test_a_selection_exports_the_explorers_samples():
    p = load(CAPTURES["system-wide"][0])
    threads = explore.threads(p, explore.Query())["threads"]
    assert len(threads) == 2
    pick = frozenset(t["tid"] for t in threads[:1])
    span = explore.timeline(p)["duration"]
    q = explore.Query(tids=pick, start=span / 4, end=span * 3 / 4)
    want = {t["tid"]: t["samples"] for t in explore.threads(p, q)["threads"] if t["tid"] in pick}
    gecko = to_gecko(p, q)
    assert {t["tid"]: len(t["samples"]["data"]) for t in gecko["threads"]} == \
        {tid: n for tid, n in want.items() if n}
    assert sum(len(t["samples"]["data"]) for t in gecko["threads"]) == \
        explore.flame(p, q)["total"]
    # perf script's own samples of that tid in [t0 + span/4, t0 + 3 span/4), t0 its first
    n, perf_totals, perf_leaves = script_selection(CAPTURES["system-wide"][1], pick,
                                                   span / 4, span * 3 / 4, by="address")
    assert (sorted(pick), explore.flame(p, q)["total"]) == ([19129], n) and n == 14
    # each frame's samples (once per sample) and leaves, from the exported stacks
    totals, leaves = Counter(), Counter()
    for thread in gecko["threads"]:
        for stack, count in _folded(thread).items():
            names = stack.split(";")
            totals.update({name: count for name in set(names)})
            leaves[names[-1]] += count
    assert (totals, leaves) == (perf_totals, perf_leaves)
    assert totals["libc.so.6+0xf838f"] == 10  # __GI___libc_write's call site, in perf script
    for thread in gecko["threads"]:
        times = [row[1] for row in thread["samples"]["data"]]
        assert all(span / 4 * 1000 - 1e-6 <= t < span * 3 / 4 * 1000 for t in times)


def test_refusals():
    p = load(CAPTURES["events"][0])
    with pytest.raises(AnalysisError, match="on-CPU view"):
        to_gecko(load(FIXTURES / "offcpu" / "cpp-server-mutex" / "1.0.perf.data"),
                 explore.Query(view="off-cpu"))
    with pytest.raises(AnalysisError):
        to_gecko(p, explore.Query(event=5))
    report = load(SPINPOOL / "1.0.0-busy.report-raw.txt")  # perf report text: no times
    with pytest.raises(AnalysisError, match="time of each sample"):
        to_gecko(report)
    idle = to_gecko(load(SPINPOOL / "1.1.0-idle.perf.data"))  # no samples: no threads
    assert idle["threads"] == []
