"""The stack chart (analysis.aggregate.stack_chart) against `perf script` of the same
capture: the spinpool 1.0.0 busy perf.data, read without symbols, and the raw text perf
printed of it on the recording host (so each frame's name is what the engine calls an
unresolved frame: the kernel address, or DSO+offset)."""
import math

import pytest

from analysis import explore
from analysis.aggregate import stack_chart
from analysis.importers import load
from analysis.profile import Profile
from conftest import SPINPOOL
from script_samples import raw_samples

CAPTURE = SPINPOOL / "1.0.0-busy.perf.data"
SCRIPT = SPINPOOL / "1.0.0-busy.script-raw.txt"


def perf_samples():
    """(tid, seconds, period, frames root first) per sample perf printed."""
    return [(tid, t, period, frames) for tid, t, period, _, frames in raw_samples(SCRIPT)]


@pytest.fixture(scope="module")
def busy():
    return load(CAPTURE)


@pytest.fixture(scope="module")
def script():
    return perf_samples()


def drawn(chart, lane, t):
    """Names of the boxes over time t in a lane of the JSON, root first."""
    b = lane["boxes"]
    hits = sorted((b["d"][i], b["f"][i]) for i in range(len(b["s"]))
                  if b["s"][i] <= t < b["e"][i])
    assert [d for d, _ in hits] == list(range(len(hits)))  # one box per depth, no hole
    return [chart["functions"][str(f)]["n"] if f >= 0 else "[merged]" for _, f in hits]


def test_every_sample_time_shows_the_stack_perf_printed(busy, script):
    t0 = min(t for _, t, _, _ in script)
    chart = explore.stacks(busy, explore.Query(px=0))
    lanes = {ln["tid"]: ln for ln in chart["lanes"]}
    assert sorted(lanes) == [18192, 18193] and chart["threads"] == 2
    assert not chart["truncated"]
    assert len(script) == 973
    for tid, t, _, frames in script:
        # perf prints microseconds, cut: the sample is within the microsecond after
        assert drawn(chart, lanes[tid], t - t0 + 1.5e-6) == frames, (tid, t)
    for tid, ln in lanes.items():
        assert ln["samples"] == sum(1 for s in script if s[0] == tid)
        assert ln["depth"] == max(len(s[3]) for s in script if s[0] == tid)


def test_boxes_sum_to_the_threads_sample_time(busy, script):
    """Each sample stands for its cpu-clock period (10,101,010 ns at 99 Hz), cut where
    the thread's next sample starts; the root boxes add up to exactly that time."""
    chart = explore.stacks(busy, explore.Query(px=0))
    for ln in chart["lanes"]:
        mine = [s for s in script if s[0] == ln["tid"]]
        expect = sum(min(p / 1e9, b[1] - a[1]) for a, b, p in
                     zip(mine, mine[1:], (s[2] for s in mine))) + mine[-1][2] / 1e9
        b = ln["boxes"]
        roots = sum(b["e"][i] - b["s"][i] for i in range(len(b["s"])) if b["d"][i] == 0)
        assert roots == pytest.approx(ln["sampled_s"], abs=1e-9)
        assert ln["sampled_s"] == pytest.approx(expect, abs=1e-6 * len(mine))
        # the thread's samples times the period, less what the next samples cut off
        periods = sum(s[2] for s in mine) / 1e9
        assert periods - 0.01 < ln["sampled_s"] <= periods + 1e-9
        # and no time is drawn twice: root boxes do not overlap
        spans = sorted((b["s"][i], b["e"][i]) for i in range(len(b["s"])) if b["d"][i] == 0)
        assert all(x[1] <= y[0] for x, y in zip(spans, spans[1:]))


def test_boxes_nest_in_their_parents(busy):
    chart = explore.stacks(busy, explore.Query(px=0))
    for ln in chart["lanes"]:
        b = ln["boxes"]
        for i in range(len(b["s"])):
            p = b["p"][i]
            assert (p == -1) == (b["d"][i] == 0)
            if p >= 0:
                assert p < i and b["d"][p] == b["d"][i] - 1
                assert b["s"][p] <= b["s"][i] < b["e"][i] <= b["e"][p]


def test_a_time_range_and_one_thread(busy, script):
    t0 = min(t for _, t, _, _ in script)
    chart = explore.stacks(busy, explore.Query(tids=frozenset({18192}), start=1.0, end=2.0,
                                               px=0))
    (ln,) = chart["lanes"]
    inside = [s for s in script if s[0] == 18192 and 1.0 <= s[1] - t0 < 2.0]
    assert ln["tid"] == 18192 and ln["samples"] == len(inside) > 50
    assert min(ln["boxes"]["s"]) == pytest.approx(inside[0][1] - t0, abs=1e-6)
    for _, t, _, frames in inside:
        assert drawn(chart, ln, t - t0 + 1.5e-6) == frames


def test_merged_below_a_pixel(busy, script):
    """At 20 ms a pixel (a 250-pixel chart of the 5 s; a sample is 10 ms), no function
    box is narrower than a pixel, fewer boxes are sent, and what is drawn at a sample's
    time is the top of its stack, down to a merged box or to the whole stack."""
    t0 = min(t for _, t, _, _ in script)
    exact = explore.stacks(busy, explore.Query(px=0))
    px = 0.02
    coarse = explore.stacks(busy, explore.Query(px=px))
    assert coarse["px"] == px
    for ln, full in zip(coarse["lanes"], exact["lanes"]):
        b = ln["boxes"]
        n = len(b["s"])
        assert n < len(full["boxes"]["s"]) / 2
        assert all(b["e"][i] - b["s"][i] >= px for i in range(n) if b["f"][i] >= 0)
        # a merged box has nothing below it
        merged = {i for i in range(n) if b["f"][i] == stack_chart.MERGED}
        assert merged and not any(b["p"][i] in merged for i in range(n))
        for tid, t, _, frames in script:
            if tid != ln["tid"]:
                continue
            shown = drawn(coarse, ln, t - t0 + 1.5e-6)
            if shown and shown[-1] == "[merged]":
                assert shown[:-1] == frames[:len(shown) - 1]
            else:
                assert shown == frames
        # gaps narrower than a pixel are bridged: the root boxes cover at least the time
        roots = sum(b["e"][i] - b["s"][i] for i in range(n) if b["d"][i] == 0)
        assert roots >= full["sampled_s"] - 1e-9


def test_the_box_budget_cuts_whole_rows(busy):
    full = stack_chart.lane(busy, 18193, 0, px=0.001)
    cut = stack_chart.lane(busy, 18193, 0, px=0.001, max_boxes=300)
    assert not full.truncated and cut.truncated and len(cut.boxes) <= 300
    depth = max(b.depth for b in cut.boxes)
    # every row kept is the whole row, none below it is
    for d in range(depth + 1):
        assert sum(b.depth == d for b in cut.boxes) == sum(b.depth == d for b in full.boxes)
    assert depth < max(b.depth for b in full.boxes)


def test_a_row_past_the_budget_is_not_made_whole(monkeypatch):
    """Exact boxes (px=0) of 5,000 samples, each a root of its own: the row is cut once
    it passes the budget, not built to its 5,000 boxes and then dropped (the memory a
    request of px=0 on a million-sample capture holds)."""
    p = _toy([i / 1000 for i in range(5000)], [(f"f{i % 2}",) for i in range(5000)])
    made = []

    class Counted(stack_chart.Box):
        __slots__ = ()

        def __init__(self, *args):
            made.append(1)
            super().__init__(*args)
    monkeypatch.setattr(stack_chart, "Box", Counted)
    cut = stack_chart.lane(p, 7, p.default_event(), px=0.0, max_boxes=100)
    assert cut.truncated and cut.boxes == [] and len(made) == 101


def _toy(times, stacks, event="cycles", frequency=1000.0, tid=7):
    """A profile of one thread: sample i at times[i] with the function path stacks[i]."""
    p = Profile("test")
    ev = p.event(event)
    p.events[ev].frequency = frequency
    m = p.mapping("/bin/toy")
    funcs = {name: p.function(name, m) for path in stacks for name in path}
    locs = {name: p.add_location(m, 0, (fid,)) for name, fid in funcs.items()}
    for t, path in zip(times, stacks):
        sid = p.stack(tuple(locs[n] for n in reversed(path)))  # leaf first
        p.add_sample(sid, tid=tid, time=t, event_id=ev)
    return p


def test_consecutive_samples_share_their_common_frames():
    """1 ms a sample (1 kHz, not a clock event): main spans the three touching samples,
    a and b split below it, and the thread's gap of 5 ms ends every box."""
    p = _toy([10.000, 10.001, 10.002, 10.008],
             [("main", "a"), ("main", "a"), ("main", "b"), ("main", "a")])
    ln = stack_chart.lane(p, 7, 0)
    name = {f.id: f.name for f in p.functions}
    got = [(round(b.start, 6), round(b.end, 6), b.depth, name[b.function]) for b in ln.boxes]
    assert sorted(got) == [(10.0, 10.002, 1, "a"), (10.0, 10.003, 0, "main"),
                           (10.002, 10.003, 1, "b"), (10.008, 10.009, 0, "main"),
                           (10.008, 10.009, 1, "a")]
    assert ln.samples == 4 and ln.sampled_s == pytest.approx(0.004)
    # at 10 ms a pixel the gap is bridged: one main, and below it one merged box
    wide = stack_chart.lane(p, 7, 0, px=0.01)
    got = sorted((round(b.start, 6), round(b.end, 6), b.depth, b.function) for b in wide.boxes)
    assert got == [(10.0, 10.009, 0, stack_chart.MERGED)]
    mid = stack_chart.lane(p, 7, 0, px=0.0025)
    got = sorted((round(b.start, 6), round(b.end, 6), b.depth,
                  name.get(b.function, "[merged]")) for b in mid.boxes)
    # at 2.5 ms the gap stays; a and b (2 ms, 1 ms) are one merged box, the lone 1 ms
    # sample after the gap is one merged box with nothing below it
    assert got == [(10.0, 10.003, 0, "main"), (10.0, 10.003, 1, "[merged]"),
                   (10.008, 10.009, 0, "[merged]")]


def test_sample_time_without_a_frequency_is_the_usual_gap():
    p = _toy([1.0, 1.004, 1.008, 1.02], [("main",)] * 4, frequency=None)
    assert stack_chart.sample_seconds(p, 0) == pytest.approx(0.004)
    ln = stack_chart.lane(p, 7, 0)
    assert [(round(b.start, 6), round(b.end, 6)) for b in ln.boxes] == \
        [(1.0, 1.012), (1.02, 1.024)]


def test_no_timestamps_no_boxes():
    p = _toy([math.nan, math.nan], [("main",), ("main",)])
    assert explore.stacks(p, explore.Query())["lanes"] == []


def _reference(times, stops, paths, px):
    """The chart by the definition, slowly: every box of consecutive touching samples
    (gaps up to a pixel bridged) sharing a frame, then narrow siblings merged and what
    lies below a narrow box dropped."""
    bridge = max(px, stack_chart.TOUCH)
    boxes, open_ = [], []  # [start, end, depth, function, parent]
    prev = -math.inf
    for t, stop, path in zip(times, stops, paths):
        same = 0
        if t - prev <= bridge:
            while same < min(len(path), len(open_)) and boxes[open_[same]][3] == path[same]:
                same += 1
        del open_[same:]
        for d in range(same, len(path)):
            boxes.append([t, t, d, path[d], open_[-1] if open_ else -1])
            open_.append(len(boxes) - 1)
        for i in open_:
            boxes[i][1] = stop
        prev = stop
    kept, out = {-1: -1}, []
    for d in range(max((b[2] for b in boxes), default=-1) + 1):
        last = {}
        for i in sorted((i for i, b in enumerate(boxes) if b[2] == d), key=lambda i: boxes[i][0]):
            a, e, _, f, parent = boxes[i]
            if parent not in kept:
                continue
            p = kept[parent]
            if e - a >= px:
                kept[i] = len(out)
                out.append([a, e, d, f, p])
                last.pop(p, None)
            elif p in last and a - out[last[p]][1] <= bridge:
                out[last[p]][1] = e
            else:
                last[p] = len(out)
                out.append([a, e, d, stack_chart.MERGED, p])
    return [tuple(b) for b in out]


@pytest.mark.parametrize("seed", range(6))
def test_the_rows_are_the_definitions_boxes(seed):
    """Random stacks over a few functions, random gaps: the chart at several
    resolutions is the reference's, box for box (parents by index too)."""
    import random
    rnd = random.Random(seed)
    t, times, paths = 100.0, [], []
    for _ in range(400):
        t += 0.001 if rnd.random() < 0.8 else rnd.choice([0.0015, 0.004, 0.02])
        times.append(round(t, 6))
        paths.append(tuple(rnd.choice("abc") for _ in range(rnd.randint(1, 6))))
    p = _toy(times, paths)
    ln0 = stack_chart.lane(p, 7, 0)
    stops = [min(a + 0.001, b) for a, b in zip(times, times[1:] + [math.inf])]
    name = {f.id: f.name for f in p.functions}
    for px in (0.0, 0.0005, 0.0011, 0.003, 0.01, 0.05):
        got = [(b.start, b.end, b.depth, name.get(b.function, b.function), b.parent)
               for b in stack_chart.lane(p, 7, 0, px=px).boxes]
        want = _reference(times, stops, paths, px)
        assert got == [(a, e, d, f, q) for a, e, d, f, q in want], px
    assert ln0.sampled_s == pytest.approx(sum(b - a for a, b in zip(times, stops)))


def test_a_chart_reads_a_bounded_number_of_samples(busy, monkeypatch):
    """A lane reads the first samples of its range, up to the budget, and is cut there
    (its boxes end where the next sample starts); a chart's lanes share the budget, so
    those after it is spent are empty and cut: every thread of a capture at the finest
    resolution read every sample (158,000 samples of 340 threads took 5 s)."""
    times, _ = stack_chart.thread_rows(busy, 0)[18193]
    whole = stack_chart.lane(busy, 18193, 0, px=0)
    cut = stack_chart.lane(busy, 18193, 0, px=0, max_samples=100)
    assert (whole.read, whole.truncated) == (len(times), False) and len(times) > 100
    assert (cut.read, cut.samples, cut.truncated) == (100, 100, True)
    assert max(b.end for b in cut.boxes) <= times[100] < max(b.end for b in whole.boxes)
    monkeypatch.setattr(stack_chart, "MAX_SAMPLES", 150)
    chart = explore.stacks(busy, explore.Query(px=0, tids=frozenset({18192, 18193})))
    first, second = chart["lanes"]
    assert chart["truncated"] and first["samples"] == 150 and second["samples"] == 0
    assert second["boxes"]["s"] == []
