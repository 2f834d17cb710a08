"""analysis.malloc_tuning.bound_heap: columns grown by reallocation, with objects
allocated between the steps (what an import does), leave the process holding about their
live size, not the outgrown copies as well. Each case runs in a fresh interpreter, since
the setting is process-wide."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GROW = r"""
import sys
from array import array
from analysis.malloc_tuning import bound_heap
if sys.argv[1] == "tuned":
    assert bound_heap() and bound_heap()  # (a second call is a no-op that says so too)
big = bytearray(20 << 20)
del big  # a large mapped block freed: glibc raises its mmap threshold to 20 MiB
cols = [array("q") for _ in range(6)]
keep = []
piece = bytes(64 << 10)
for i in range(400):  # six columns grown to 25 MiB each, a live object after each step
    for c in cols:
        c.frombytes(piece)
    keep.append(bytearray(3000))
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
print(sum(len(c) * 8 for c in cols) >> 20, rss >> 10)
"""


def _grow(mode: str) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", GROW, mode], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def test_outgrown_blocks_are_given_back():
    live, tuned = _grow("tuned")
    assert live == 150
    # the interpreter itself is ~10 MiB; the 150 MiB of columns, and not much more
    assert tuned <= live + 25, tuned
    # without it glibc keeps the outgrown copies: the test tells the two apart
    _, plain = _grow("plain")
    assert plain >= tuned + 30, (plain, tuned)
