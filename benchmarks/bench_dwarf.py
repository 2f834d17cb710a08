#!/usr/bin/env python3
"""Benchmark: importing and unwinding a `--call-graph dwarf` capture beside `perf report`.

In one run on the same file it prints wall time (the fastest of --repeat runs, default 3: the
host may be shared) and peak memory of
  1. `perf report -i FILE --stdio --no-children --sort comm,dso,sym` (perf unwinds every
     sample's stack copy with libunwind here, then prints its call graphs),
  2. for reference, `perf script -i FILE` (perf's default output, inline frames expanded) and
     `perf script -F comm,tid,time,ip,sym,dso,symoff --no-inline` (one line per physical frame,
     the ground truth of tests/test_dwarf_unwinding.py),
  3. perfweb: `python -m analysis report FILE --symbols ... --format json` (import, unwind every
     copied user stack with the binaries' CFI, symbolize, diagnose) with a fresh empty
     PERFWEB_CACHE_DIR (cold: every unwind table and symbol index is built) and then again
     with that cache warm,
and the samples, how many user stacks perfweb unwound (its note "N of M user stacks
unwound"), the ratios perfweb / perf report and, unless --no-compare, the share of samples
whose unwound user stack equals perf script's frame for frame (`our_stacks` / `perf_stacks`
of tests/test_dwarf_unwinding.py).

Input: --perf-data FILE (with FILE.symbols.txt beside it, the binaries to give as --symbols,
one a line, or --symbols-file), or by default /var/tmp/bench-dwarf.perf.data, recorded by
benchmarks/record_dwarf.sh unless it exists: tests/fixtures/dwarf/cpp-pool (4 threads, 1.0 CPU
in all) recorded by PID, `perf record --call-graph dwarf -F 499 -p PID -- sleep 60`, about
30,000 samples of 8 KiB stack copies (~250 MB). perf runs with HOME=FILE.perfhome, the scratch
HOME perf record ran with (its build-id cache holds the vdso, which perf needs to unwind through
it; every other binary perf reads at its recorded path), or a fresh empty HOME without one.
Needs perf; to record, root.
Goal (the issue): perfweb's import + unwinding within 2x `perf report` on the same file, cold
cache.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import ROOT, measure  # noqa: E402

RECORD = ROOT / "benchmarks" / "record_dwarf.sh"
DEFAULT = Path("/var/tmp/bench-dwarf.perf.data")
_UNWOUND = re.compile(r"([\d,]+) of ([\d,]+) user stacks unwound")


def _perf_env(data: Path, scratch: Path) -> Path:
    home = Path(str(data) + ".perfhome")
    if not home.is_dir():
        home = scratch / "home"
        home.mkdir()
    os.environ["HOME"] = str(home)
    return home


def _report_depth(path: Path) -> tuple[int, int]:
    """(call-graph lines, lines naming a thread entry point) in perf report's output: perf
    unwound deep stacks when its call graphs reach clone3 / _start."""
    lines = roots = 0
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            lines += 1
            s = line.rstrip()
            roots += s.endswith(("clone3", "_start"))
    return lines, roots


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--symbols-file", type=Path, help="default: FILE.symbols.txt")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each command; the fastest is kept (default 3)")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip the frame-for-frame comparison with perf script")
    args = ap.parse_args()
    data = args.perf_data
    if data is None:
        data = DEFAULT
        if not data.exists() or not Path(str(data) + ".symbols.txt").exists():
            subprocess.run(["bash", str(RECORD), str(data)], check=True)
    symfile = args.symbols_file or Path(str(data) + ".symbols.txt")
    symbols = [s.strip() for s in symfile.read_text().splitlines() if s.strip()]
    missing = [s for s in symbols if not Path(s).exists()]
    if missing:
        raise SystemExit(f"missing symbol files: {missing}")

    scratch = Path(tempfile.mkdtemp(prefix="bench-dwarf-", dir="/var/tmp"))
    try:
        home = _perf_env(data, scratch)
        rows = []

        def best(name, cmd, out_path, before=None):
            """The fastest of --repeat runs (this host is shared), the largest peak RSS."""
            runs = []
            for _ in range(args.repeat):
                if before:
                    before()
                with open(out_path, "wb") as out:
                    runs.append(measure(cmd, stdout=out))
            result = (min(r[0] for r in runs), max(r[1] for r in runs))
            rows.append((name, *result, " ".join(f"{r[0]:.2f}" for r in runs)))
            return result

        rep_out = scratch / "report.txt"
        rep = best("perf report --stdio --no-children",
                   ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort",
                    "comm,dso,sym"], rep_out)
        best("perf script (reference)", ["perf", "script", "-i", str(data)],
             scratch / "script.txt")
        truth = scratch / "script-fields-noinline.txt"
        best("perf script -F ... --no-inline",
             ["perf", "script", "-i", str(data), "-F", "comm,tid,time,ip,sym,dso,symoff",
              "--no-inline"], truth)

        cache = scratch / "perfweb-cache"
        os.environ["PERFWEB_CACHE_DIR"] = str(cache)

        def empty_cache():
            shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir()

        cmd = [sys.executable, "-m", "analysis", "report", str(data), "--format", "json"]
        for s in symbols:
            cmd += ["--symbols", s]
        ours_out = scratch / "perfweb.json"
        cold = best("perfweb report --symbols (cold)", cmd, ours_out, before=empty_cache)
        warm = best("perfweb report --symbols (warm)", cmd, scratch / "perfweb-warm.json")
        cache_mb = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) / 1e6

        report = json.loads(ours_out.read_text())
        notes = [n for n in report.get("notes", []) if "user stacks unwound" in n]
        m = _UNWOUND.search(notes[0]) if notes else None
        unwound = f"{m.group(1)} of {m.group(2)}" if m else "? (no unwinding note)"
        rep_lines, rep_roots = _report_depth(rep_out)

        same = None
        if not args.no_compare:
            sys.path.insert(0, str(ROOT))
            sys.path.insert(0, str(ROOT / "tests"))
            from analysis.importers import load
            from analysis.symbols import symbolize
            from test_dwarf_unwinding import our_stacks, perf_stacks

            gz = scratch / "truth.txt.gz"
            with open(truth, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst)
            theirs = perf_stacks(gz)
            p = load(data)
            symbolize(p, [Path(s) for s in symbols])
            ours = our_stacks(p)
            n = len(p)
            if len(ours) == len(theirs):
                same = sum(a == b for a, b in zip(ours, theirs))
            deep = sum(len(f) > 3 for _, f in theirs)
        else:
            n = None

        size = data.stat().st_size
        print(f"\ninput: {data} ({size / 1e6:.1f} MB)" + (f", {n:,} samples" if n else ""))
        print(f"perf HOME: {home}; perfweb --symbols: {len(symbols)} files from {symfile}")
        print(f"{'tool':<36} {'seconds':>8} {'peak MiB':>9}  runs (s)")
        for name, secs, rss, runs in rows:
            print(f"{name:<36} {secs:>8.2f} {rss:>9.1f}  {runs}")
        print(f"\nperf report: {rep_lines:,} output lines; {rep_roots:,} of its call graphs "
              f"(those over its 0.5% threshold) end at clone3 / _start")
        print(f"perfweb: {unwound} user stacks unwound; unwind/symbol cache {cache_mb:.1f} MB")
        if same is not None:
            print(f"perf script: {deep:,} of {len(theirs):,} samples with > 3 user frames; "
                  f"perfweb's user stack equals perf script's frame for frame on "
                  f"{same:,} of {len(theirs):,} ({100.0 * same / max(len(theirs), 1):.2f}%)")
        elif not args.no_compare:
            print(f"perf script has {len(theirs):,} samples, perfweb {len(ours):,}: not compared")
        print(f"\nperfweb / perf report: cold {cold[0] / rep[0]:.2f}x (goal <= 2x), "
              f"warm {warm[0] / rep[0]:.2f}x; peak memory cold {cold[1] / rep[1]:.2f}x, "
              f"warm {warm[1] / rep[1]:.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
