"""Context.thread_of (analysis/diagnosis/stack_threads.py) reads as the dict per stack it
replaced: the same threads and samples for every stack, in the same order, on real
captures with stacks of one thread and of several, of two events and of one."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.aggregate.selection import stack_thread_weights
from analysis.diagnosis import Context
from analysis.diagnosis import stack_threads
from analysis.diagnosis.stack_threads import StackThreads
from analysis.importers import load
from analysis.profile import is_scheduler_event

FIX = Path(__file__).parent / "fixtures"
CAPTURES = [
    "realworld/cpython-gil-server/fixed.perf.data",  # kernel and interpreter stacks
    "realworld-holdout/postgres-sync-commit/bad-sync-on.perf.data",
    "perfdata/two-events.perf.data",
    "offcpu/cpp-server-mutex/1.1.perf.data",  # on-CPU samples and switches
    "realworld/openblas-oversubscribed/bad.perf.data",  # a pool: stacks of many threads
]


def _dict_per_stack(profile, event_id) -> dict[int, dict[int, int]]:
    """What Context.thread_of was."""
    per: dict[int, dict[int, int]] = {}
    for (sid, tid), w in stack_thread_weights(profile, event_id).items():
        per.setdefault(sid, {})[tid] = w
    return per


@pytest.mark.parametrize("pair_chunk", [stack_threads.PAIR_CHUNK, 5])
@pytest.mark.parametrize("name", CAPTURES)
def test_reads_as_the_dict_per_stack(name, pair_chunk, monkeypatch):
    """(Its pairs summed a chunk of rows at a time: 5 rows a chunk, many chunks.)"""
    monkeypatch.setattr(stack_threads, "PAIR_CHUNK", pair_chunk)
    profile = load(FIX / name)
    events = [i for i, e in enumerate(profile.events) if not is_scheduler_event(e.name)]
    assert events  # (the scheduler's events have no on-CPU context)
    for event_id in events:
        ctx = Context.build(profile, event_id)
        want = _dict_per_stack(profile, event_id)
        got = ctx.thread_of
        assert isinstance(got, StackThreads)
        assert [(s, list(d.items())) for s, d in got.items()] == \
            [(s, list(d.items())) for s, d in want.items()]
        assert len(got) == len(want)
        for sid in range(len(profile.stacks)):
            assert got.get(sid) == want.get(sid)
            assert (sid in got) == (sid in want)
        tids = sorted({t for d in want.values() for t in d})
        some = set(tids[::2])
        for sid in range(-1, len(profile.stacks)):
            d = want.get(sid, {})
            assert got.on_any(sid, some) == (not some.isdisjoint(d))
            for tid in tids[:3] + [0]:
                assert got.only_on(sid, tid) == (list(d) == [tid])
        marked = 0
        for tid in tids[:3] + [0]:  # the compiled pass: each stack's only_on
            flags = bytearray(len(profile.stacks))
            got.mark_only_on(list(range(-1, len(profile.stacks))), tid, flags)
            assert [sid for sid, f in enumerate(flags) if f] == \
                sorted(sid for sid, d in want.items() if list(d) == [tid])
            marked += sum(flags)
        assert marked
        sids = list(want)[::3]
        out: dict[int, int] = {}
        got.sum_into(out, sids + [-1])
        expect: dict[int, int] = {}
        for sid in sids:
            for tid, n in want[sid].items():
                expect[tid] = expect.get(tid, 0) + n
        assert list(out.items()) == list(expect.items()) and len(expect) >= 1
        assert got.get(-1, "none") == "none"
        with pytest.raises(KeyError):
            got[-1]


def test_the_captures_have_stacks_of_several_threads():
    profile = load(FIX / CAPTURES[4])
    per = _dict_per_stack(profile, profile.default_event())
    assert sum(len(d) > 1 for d in per.values()) == 275
    assert sum(len(d) == 1 for d in per.values()) == 909 - 275


def test_a_stack_whose_samples_are_not_its_weight_keeps_them():
    """(the weights are another selection's: each thread's own count is kept)"""
    pairs = [((0, 5), 3), ((1, 6), 2), ((1, 7), 4), ((2, 5), 1)]
    got = StackThreads(pairs, {0: 3, 1: 6, 2: 9})
    assert list(got.items()) == [(0, {5: 3}), (1, {6: 2, 7: 4}), (2, {5: 1})]


def test_thousands_of_threads_over_shared_stacks():
    """More distinct threads than the compiled pass's first table holds (it grows), the
    threads of each stack met in a shuffled order, some stacks on one thread: as the
    dict per stack, threads in first-seen order with their samples."""
    import random

    from analysis.profile import Profile
    rng = random.Random(7)
    p = Profile()
    p.event("cpu-clock")
    m = p.mapping("/usr/bin/a")
    stacks = [p.stack((p.add_location(m, 0x100 + 16 * i, (p.function(f"f{i}", m),)),))
              for i in range(40)]
    rows = [(stacks[rng.randrange(30)], 1000 + rng.randrange(3000)) for _ in range(20000)]
    rows += [(stacks[30 + k % 10], 7) for k in range(50)]  # one thread only
    rng.shuffle(rows)
    for sid, tid in rows:
        p.add_sample(sid, tid=tid, pid=1)
    want = _dict_per_stack(p, 0)
    got = Context.build(p, 0).thread_of
    assert sum(len(d) > 1 for d in want.values()) == 30
    assert len({t for d in want.values() for t in d}) > 2500
    assert [(s, list(d.items())) for s, d in got.items()] == \
        [(s, list(d.items())) for s, d in want.items()]
