"""Every input the fuzzer ever crashed on (crashes/<target>-<hash>.bin, or .edits.json:
the edits of a seed file), replayed against its target: now a result or our own typed
error, within the fuzzer's time and memory bounds."""
from pathlib import Path

import pytest

from .mutate import CRASHES, check, crash_input
from .targets import TARGETS

FOUND = sorted([*CRASHES.glob("*.bin"), *CRASHES.glob("*.edits.json")]) \
    if CRASHES.is_dir() else []


@pytest.mark.parametrize("path", FOUND, ids=[p.name.split(".")[0] for p in FOUND])
def test_crash_stays_fixed(path: Path):
    target = next(t for t in sorted(TARGETS, key=len, reverse=True)
                  if path.name.startswith(t + "-"))
    check(target, TARGETS[target], crash_input(path))
