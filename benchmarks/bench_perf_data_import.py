#!/usr/bin/env python3
"""Benchmark: reading perf.data natively, side by side with perf itself.

In one run on the same file it prints wall time and peak memory of
  1. `perf report --stdio --no-children --sort comm,dso,sym` (perf's own aggregation),
  2. `perf script` (perf's own decoding of every sample to text),
  3. perfweb: `python -m analysis report FILE --format json` (import, resolve every frame
     against the process maps at its time, aggregate, diagnose, write the result contract),
each run --runs times (3), interleaved, the fastest shown (single runs on a shared 2-core
machine vary by up to 2x), then the capture's shape: samples, distinct addresses and
distinct address stacks (what the time grows with), from perfweb's import.

Input: --perf-data FILE, or (by default) the diverse capture of step 5 recorded by
benchmarks/record_diverse.sh into /var/tmp/diverse.perf.data (30 s system-wide at
3999 Hz of CPython and gzip with kernel stacks; root, once; reused when it exists).
With --symbols PATH (repeatable) perfweb gets the symbol inputs too (e.g. a copy of
/proc/kallsyms, which `perf report` reads from the running system).
Goal (issue step 5): perfweb within 1.0x of `perf report`'s wall time, peak memory
within 1.5x of its peak.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import ROOT, measure  # noqa: E402

DIVERSE = Path("/var/tmp/diverse.perf.data")
GOAL_TIME, GOAL_MEMORY = 1.0, 1.5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--symbols", action="append", default=[])
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of each tool, interleaved; the fastest is shown (default 3)")
    args = ap.parse_args()
    data = args.perf_data or DIVERSE
    if args.perf_data is None and not data.exists():
        subprocess.run(["bash", str(ROOT / "benchmarks" / "record_diverse.sh"), str(data)],
                       check=True)
    os.environ["HOME"] = "/tmp"  # keep perf from reading or writing a build-id cache here
    symbols = [a for s in args.symbols for a in ("--symbols", s)]
    tools = [
        ("perf report --stdio --no-children", ["perf", "report", "-i", str(data), "--stdio",
                                               "--no-children", "--sort", "comm,dso,sym"]),
        ("perf script", ["perf", "script", "-i", str(data)]),
        ("perfweb import + report (json)", [sys.executable, "-m", "analysis", "report",
                                            str(data), "--format", "json", *symbols]),
    ]
    runs = [[measure(cmd) for _, cmd in tools] for _ in range(max(1, args.runs))]
    best = [(min(r[i][0] for r in runs), max(r[i][1] for r in runs))
            for i in range(len(tools))]
    sys.path.insert(0, str(ROOT))
    from analysis.importers import load
    p = load(data)
    addresses = len({loc.address for loc in p.locations})
    print(f"\ninput: {data} ({data.stat().st_size / 1e6:.1f} MB): {len(p)} samples, "
          f"{addresses} distinct addresses, {len(p.stacks)} distinct address stacks")
    print(f"{'tool':<36} {'seconds':>8} {'peak MiB':>9}")
    for (name, _), (secs, rss) in zip(tools, best):
        print(f"{name:<36} {secs:>8.2f} {rss:>9.1f}")
    print(f"(fastest of {len(runs)} runs each; all perfweb runs: "
          f"{', '.join(f'{r[2][0]:.2f}' for r in runs)} s)")
    rep, ours = best[0], best[2]
    print(f"\nperfweb / perf report: time {ours[0] / rep[0]:.2f}x (goal <= {GOAL_TIME}x), "
          f"peak memory {ours[1] / rep[1]:.2f}x (goal <= {GOAL_MEMORY}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
