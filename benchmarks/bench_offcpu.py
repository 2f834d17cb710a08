#!/usr/bin/env python3
"""Benchmark: reading context switches (off-CPU time) beside `perf sched timehist`.

In one run on the same file it prints wall time and peak memory of
  1. `perf sched timehist -s` (perf's own per-thread scheduling summary),
  2. perfweb: `python -m analysis report FILE --format json` (import every sample and
     switch, per-thread on/off-CPU intervals, the off-CPU block, the diagnosis),
and the number of switch rows perfweb read.

Input: --perf-data FILE, or (by default) a fresh recording by
tests/fixtures/offcpu/switch-heavy/record.sh: 4 s system-wide with the product's events
while `perf bench sched pipe` ping-pongs (over a million switch records). Needs perf and,
to record, root.
Goal (issue step 3): perfweb within 2x of `perf sched timehist`, memory flat in the number
of switch records (columns, no object per switch).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import ROOT, measure  # noqa: E402

RECORD = ROOT / "tests" / "fixtures" / "offcpu" / "switch-heavy" / "record.sh"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of each tool, interleaved; the fastest is shown (default 3)")
    args = ap.parse_args()
    data = args.perf_data
    if data is None:
        data = Path("/var/tmp/switch-heavy.perf.data")
        subprocess.run(["bash", str(RECORD), str(data)], check=True)
    os.environ["HOME"] = "/tmp"  # keep perf from reading or writing a build-id cache here
    theirs_cmd = ["perf", "sched", "timehist", "-s", "-i", str(data)]
    ours_cmd = [sys.executable, "-m", "analysis", "report", str(data), "--format", "json"]
    runs = [(measure(theirs_cmd), measure(ours_cmd)) for _ in range(max(1, args.runs))]
    # the fastest run of each (this machine is shared: single runs vary by 2x), the
    # highest peak memory
    th = (min(r[0][0] for r in runs), max(r[0][1] for r in runs))
    ours = (min(r[1][0] for r in runs), max(r[1][1] for r in runs))
    rows = [("perf sched timehist -s", *th), ("perfweb import + report (json)", *ours)]
    sys.path.insert(0, str(ROOT))
    from analysis.importers import load
    p = load(data)
    print(f"\ninput: {data} ({data.stat().st_size / 1e6:.1f} MB), {len(p)} samples, "
          f"{len(p.switches)} switch rows")
    print(f"{'tool':<36} {'seconds':>8} {'peak MiB':>9}")
    for name, secs, rss in rows:
        print(f"{name:<36} {secs:>8.2f} {rss:>9.1f}")
    print(f"(fastest of {len(runs)} runs each; all: timehist "
          f"{', '.join(f'{r[0][0]:.2f}' for r in runs)} s, perfweb "
          f"{', '.join(f'{r[1][0]:.2f}' for r in runs)} s)")
    print(f"\nperfweb / perf sched timehist: time {ours[0] / th[0]:.2f}x (goal <= 2x), "
          f"peak memory {ours[1] / th[1]:.2f}x ({ours[1] * 1e6 / max(1, len(p.switches)):.0f} "
          f"MiB per million switch rows, the mapped file included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
