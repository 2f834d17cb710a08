"""The compiled off-CPU loop (analysis/offcpu/_intervals.c) gives the seconds and the
intervals of its Python twin (analysis/offcpu/intervals_python.py) bit for bit: on the off-CPU
captures recorded for this product and on random switch logs that mix both sources of a
switch, wakeups, sched_stat_runtime rows, threads created and ended (FORK, EXIT, a
switch-out in the dead state) and rows out of time order."""
from __future__ import annotations

import random
from dataclasses import astuple
from pathlib import Path

import pytest

from analysis.importers import load
from analysis.offcpu import intervals_python
from analysis.offcpu.switches import EXIT, FORK, IN, OUT, RAN, RECORD, TRACEPOINT, WAKE
from analysis.offcpu.threads import off_cpu
from analysis.profile import Profile

FIX = Path(__file__).parent / "fixtures" / "offcpu"
CAPTURES = ["redis-fsync-switch/bad.perf.data", "system-wide/sys.perf.data",
            "sched-record/1.1-sched.perf.data", "cpp-server-mutex/1.1-wakeup.perf.data",
            "cpp-server-mutex/1.0.perf.data"]
COLUMNS = ("i_tid", "i_start", "i_dur", "i_state", "i_stack", "i_waker", "i_wake_stack")


def _same(profile: Profile) -> int:
    got, want = off_cpu(profile), intervals_python.compute(profile)
    assert got.window == want.window and got.timed == want.timed
    # (threads perf watched but never saw switch come after, from threads._compute)
    for tid, tt in want.threads.items():
        assert astuple(got.threads[tid]) == astuple(tt), tid
    n = len(want)
    for col in COLUMNS:
        assert getattr(got, col)[:n] == getattr(want, col), col
    return n


@pytest.mark.parametrize("name", CAPTURES)
def test_captures(name):
    path = FIX / name
    assert path.is_file(), path
    assert _same(load(path)) > 100


def _random_log(rng: random.Random) -> Profile:
    p = Profile("test")
    log = p.switches
    log.recorded = True
    t = 1.0
    for _ in range(rng.randrange(1, 400)):
        t += rng.choice((0.0, 0.0001, 0.0005, 0.002, 0.01))
        kind = rng.choice((OUT, OUT, IN, IN, RAN, WAKE) * 4 + (FORK, EXIT))
        log.add(t + rng.choice((0.0, 0.0, -0.003)), rng.choice((-1, 0, 5, 6, 7)),
                rng.choice((5, 6)), 0, kind, rng.randrange(0, 6) if rng.random() < 0.3 else
                rng.randrange(0, 5), rng.choice((-1, 0, 3)),
                rng.choice((RECORD, TRACEPOINT)),
                rng.choice((0.0, 0.0004, 0.003)) if kind == RAN else 0.0,
                rng.choice((-1, 9)) if kind == WAKE else -1)
    return p


def test_random_switch_logs():
    rng = random.Random(16)
    intervals = 0
    for _ in range(400):
        intervals += _same(_random_log(rng))
    assert intervals > 5_000
