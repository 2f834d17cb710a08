"""The compiled extensions under AddressSanitizer and UndefinedBehaviorSanitizer
(tests/fuzz/native; `make fuzz-native` is the long run): built once per test run into a
temporary folder, never over the checkout's; proven to be what a child process imports
(and the checkout's .so files not mapped at all); proven able to fail, by a canary
extension's read past a heap block and signed overflow, each reported and fatal, and
each a finding with its input kept when a fuzzing child hits it (the canary target); then
every input ever kept in crashes/ for the compiled targets, and a short run of fresh
ones, in sanitized children. Any sanitizer report, Python exception or difference from
a Python twin fails the test."""
from __future__ import annotations

import json
import os

import pytest

from .native import sanitized
from .native.build import CANARY_NAME, build, extensions
from .native.drive import CANARY_BUGS, CANARY_TARGET, NATIVE_TARGETS, kept_inputs
from .native.run import _child, campaign, prove

#: fresh inputs per test run, spread over the targets as in make fuzz-native
SHORT_RUN = 2_400


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """The sanitized build, one per test run: pytest's workers share its folder (the
    run's, above theirs). Without workers it is the run's own: the folder above that is
    every run's (/tmp/pytest-of-USER), where another checkout's build could replace the
    files while this run's children import them."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) \
        / "sanitized-extensions"
    build(folder)
    return folder


def test_the_sanitized_extensions_are_the_ones_imported(lib):
    loaded = prove(lib)
    assert len(loaded) == len(extensions()) + 1  # and the canary
    assert all(path.startswith(str(lib)) for path in loaded)


@pytest.mark.parametrize("call, report", [
    ("read_past_end(16)", "ERROR: AddressSanitizer: heap-buffer-overflow"),
    ("add_to_int_max(1)", "runtime error: signed integer overflow")])
def test_a_bug_in_compiled_code_is_reported_and_fatal(lib, call, report):
    r = _child("from tests.fuzz.native import sanitized; sanitized.install(); "
               f"import {CANARY_NAME} as c; c.{call}; print('went on')", lib)
    assert r.returncode != 0 and "went on" not in r.stdout
    assert report in r.stderr
    assert "canary.c" in r.stderr  # the report names the line


def test_a_campaign_keeps_what_a_sanitizer_aborted_on_and_goes_on(lib, tmp_path):
    """The canary target's inputs 3 and 5 abort their child with a report: both are
    findings, kept with their reports, and the other inputs still run."""
    crashes = tmp_path / "crashes"
    result = campaign(lib, 8, tmp_path, jobs=1, crashes=crashes, nice=0, chunk=8,
                      split={CANARY_TARGET: 1.0})
    assert result["inputs"] == 8
    found = {f["input"]: f for f in result["findings"]}
    assert sorted(found) == sorted(CANARY_BUGS)
    assert all(f["kind"] == "sanitizer" for f in found.values())
    assert "heap-buffer-overflow" in found[3]["summary"]
    assert "signed integer overflow" in found[5]["summary"]
    assert sorted(p.read_bytes() for p in crashes.iterdir()) == [b"3", b"5"]
    assert len(list(tmp_path.glob(f"{CANARY_TARGET}-*.report.txt"))) == 2


def test_without_the_sanitizers_loaded_nothing_runs(lib):
    env = sanitized.environment(lib)
    del env["LD_PRELOAD"]
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", "from tests.fuzz.native import sanitized; "
                        "sanitized.install()"], env=env, capture_output=True, text=True,
                       cwd=str(sanitized.ROOT))
    assert r.returncode != 0 and "libasan is not loaded" in r.stderr


def test_kept_inputs_and_a_short_run_find_nothing(lib, tmp_path):
    result = campaign(lib, SHORT_RUN, tmp_path, jobs=2, crashes=tmp_path / "crashes",
                      nice=0, chunk=SHORT_RUN, replay=True)
    assert result["findings"] == [], json.dumps(result["findings"], indent=1)
    assert sorted(result["targets"]) == sorted(NATIVE_TARGETS)
    assert result["inputs"] == SHORT_RUN
    kept = sum(len(kept_inputs(t)) for t in NATIVE_TARGETS)
    assert kept >= 8 and sum(t["replayed"] for t in result["targets"].values()) == kept
    # the run reached the importers' loops and the off-CPU intervals
    calls = result["calls"]
    for fn in ("_scan.scan", "_script.Reader", "_intervals.intervals"):
        assert calls.get(fn, 0) > 0, fn
