"""The cyclic garbage collector paused while a capture is analysed.

An analysis builds a few million small objects (a location, a function and a stack per
distinct address and chain, the per-stack lists and sets of the diagnosis) and keeps them
all until it ends. CPython's collector runs a pass every 700 new container objects and
traverses the older generations as they grow, so on a diverse capture (100,000 stacks) it
was a third of the time: 1.0 of 2.7 s of the import and 0.8 of 2.9 s of the report, for
nothing, since those objects hold no reference cycles and are freed by reference counts
when the profile is dropped. The collector's generations are those of gc(3)
(https://docs.python.org/3/library/gc.html); resuming it does not collect at once.

Pause it around the engine's own calls only. Around a whole worker attempt (its database
calls, the heartbeat thread) a worker at its memory limit (RLIMIT_AS) hung instead of
failing the capture with MemoryError (tests/web/test_limits_and_faults.py).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused_gc(freeze: bool = False):
    """No cyclic collection inside; the collector's previous state after (nested use
    leaves it to the outermost). `freeze`: what exists at the end, the objects made
    inside among them, is moved out of the collector's generations (gc.freeze), inside
    a `frozen_until_done` whose end puts it back."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()


@contextmanager
def frozen_until_done():
    """The objects paused_gc(freeze=True) froze inside go back to the collector at the
    end (gc.unfreeze: into its oldest generation). Between a worker's engine steps the
    collector runs (its database calls and heartbeat need it), and its first pass after
    each step traversed every object the step had made: 20-40 ms of each upload of the
    diverse capture, for a profile with no reference cycles. Frozen objects are still
    freed by their reference counts; only cyclic garbage made inside waits for the end."""
    try:
        yield
    finally:
        gc.unfreeze()
