"""Every input the fuzzer ever crashed on (crashes/<target>-<hash>.bin), replayed against
its target: now a result or our own typed error."""
from pathlib import Path

import pytest

from .mutate import CRASHES, check
from .targets import TARGETS

FOUND = sorted(CRASHES.glob("*.bin")) if CRASHES.is_dir() else []


@pytest.mark.parametrize("path", FOUND, ids=[p.stem for p in FOUND])
def test_crash_stays_fixed(path: Path):
    target = next(t for t in sorted(TARGETS, key=len, reverse=True)
                  if path.stem.startswith(t + "-"))
    check(target, TARGETS[target], path.read_bytes())
