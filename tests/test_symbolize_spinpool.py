"""The product's first story end to end: raw captures plus the build's symbol files give
the names perf gives with full symbols (`*.truth-*.txt`). perf printed those truths
without inline frames, so they are compared with `inline=False` (perf's --no-inline);
inline frames are tested on the DWARF fixtures (test_inline_frames.py)."""
import json
import subprocess
import sys

import pytest

from analysis.export.folded import FoldOptions, fold
from analysis.importers import load
from analysis.symbols import symbolize
from conftest import ROOT, SPINPOOL


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFWEB_CACHE_DIR", str(tmp_path / "cache"))


def _folded(profile):
    # inferno's spelling drops top-level parameter lists the way perf prints C++ names
    return fold(profile, FoldOptions(convention="inferno", weight="samples"))


@pytest.mark.parametrize("case", ["1.0.0-idle", "1.0.0-busy", "1.1.0-busy"])
def test_perf_data_with_archive_and_bundle_equals_truth(case):
    version = case.split("-")[0]
    p = load(SPINPOOL / f"{case}.perf.data")
    symbolize(p, [SPINPOOL / f"{case}.perf.data.tar.bz2", SPINPOOL / f"symbols-{version}.zip"],
              inline=False)
    truth = load(SPINPOOL / f"{case}.truth-script.txt")
    assert _folded(p) == _folded(truth)


def test_coverage_names_what_is_missing():
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    cov = symbolize(p, [SPINPOOL / "1.0.0-idle.perf.data.tar.bz2",
                        SPINPOOL / "symbols-1.0.0.zip"])
    by_dso = {c["dso"]: c for c in cov}
    stdcxx = by_dso["/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"]
    assert stdcxx["status"] == "missing"
    assert stdcxx["samples"] == 975 and stdcxx["resolved"] == 0.0
    # perf stored no build-id for it: only DSOs where samples landed get one
    assert stdcxx["build_id"] is None and "no build-id" in stdcxx["reason"]
    assert "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30" in stdcxx["advice"]
    libc = by_dso["/usr/lib/x86_64-linux-gnu/libc.so.6"]
    assert libc["build_id"] == "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
    qualla = by_dso["/opt/qualla-1.0.0/bin/libqualla.so"]
    assert qualla["status"] == "resolved" and qualla["resolved"] == 1.0
    assert qualla["source"] == "symbols-1.0.0.zip:libqualla.so.debug"
    kernel = by_dso["[kernel.kallsyms]"]
    assert kernel["status"] == "resolved"
    assert kernel["source"].endswith("/kallsyms")


def test_wrong_bundle_is_a_mismatch_not_wrong_names():
    p = load(SPINPOOL / "1.0.0-idle.perf.data")
    cov = symbolize(p, [SPINPOOL / "symbols-1.1.0.zip"])
    qualla = {c["dso"]: c for c in cov}["/opt/qualla-1.0.0/bin/libqualla.so"]
    assert qualla["status"] == "build-id mismatch"
    assert "libqualla.so.debug has build-id" in qualla["reason"]
    assert qualla["resolved"] == 0.0
    names = {f.name for f in p.functions if f.resolved}
    assert not any("qualla::" in n for n in names)


def test_raw_report_text_with_maps_and_bundles_through_the_cli(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "analysis", "report", SPINPOOL / "1.0.0-idle.report-raw.txt",
         "--symbols", SPINPOOL / "1.0.0-idle.maps", "--symbols", SPINPOOL / "symbols-1.0.0.zip",
         "--symbols", SPINPOOL / "kernel-symbols.zip", "--format", "json", "--no-inline"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PERFWEB_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    funcs = {(f["name"], f["dso"]): f for f in doc["functions"]}
    # the raw entries 0x2458 (1.85%), 0x2474, 0x251c ... all fall in it and merge: the
    # 5.33% of 975 that perf reports with full symbols
    assert funcs[("qualla::ThreadPool::loop", "libqualla.so")]["self"] == 52
    names = {f["name"] for f in doc["functions"]}
    assert {"do_syscall_64", "futex_wake", "entry_SYSCALL_64_after_hwframe"} <= names
    assert not any(n.startswith("0xffffffff") for n in names)


@pytest.mark.parametrize("case", ["1.0.0-idle", "1.0.0-busy", "1.1.0-busy"])
def test_raw_script_text_with_bundles_equals_truth(case):
    version = case.split("-")[0]
    p = load(SPINPOOL / f"{case}.script-raw.txt")
    symbolize(p, [SPINPOOL / f"{case}.perf.data.tar.bz2", SPINPOOL / f"symbols-{version}.zip",
                  SPINPOOL / "kernel-symbols.zip"], inline=False)
    truth = load(SPINPOOL / f"{case}.truth-script.txt")
    assert _folded(p) == _folded(truth)


def test_perf_data_folded_through_the_cli(tmp_path):
    """What a user types: the capture, its perf archive and the build's bundle."""
    args = [sys.executable, "-m", "analysis", "report", SPINPOOL / "1.0.0-busy.perf.data",
            "--symbols", SPINPOOL / "1.0.0-busy.perf.data.tar.bz2",
            "--symbols", SPINPOOL / "symbols-1.0.0.zip",
            "--format", "folded", "--convention", "inferno", "--weight", "samples",
            "--no-inline"]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    truth = _folded(load(SPINPOOL / "1.0.0-busy.truth-script.txt"))
    assert r.stdout == "".join(f"{k} {truth[k]}\n" for k in sorted(truth))
