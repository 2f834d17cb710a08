#!/usr/bin/env python3
"""Benchmark: reading perf.data natively, side by side with perf itself.

In one run on the same file it prints wall time and peak memory of
  1. `perf report --stdio --no-children` (perf's own aggregation of the file),
  2. `perf script` (perf's own decoding of every sample to text),
  3. perfweb: `python -m analysis report FILE --format json` (import, resolve every frame
     against the process maps at its time, aggregate, write the result contract).

Input: --perf-data FILE, or (by default) a fresh recording: 30 s of `perf record -a -g
-F 3999` over the two-thread worker (about 240k samples, 26 MB). Needs perf for the
comparison rows and, to record, root.
Goal (issue step 2): perfweb within 1.5x of `perf report`'s wall time, peak memory within
2x of its peak.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import measure, record  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--seconds", type=int, default=30)
    args = ap.parse_args()
    data = args.perf_data or record(args.seconds)
    env_home = {"HOME": "/tmp"}  # keep perf from reading or writing a build-id cache here
    os.environ.update(env_home)
    rows = []
    rep = measure(["perf", "report", "-i", str(data), "--stdio", "--no-children"])
    rows.append(("perf report --stdio --no-children", *rep))
    rows.append(("perf script", *measure(["perf", "script", "-i", str(data)])))
    ours = measure([sys.executable, "-m", "analysis", "report", str(data), "--format",
                    "json"])
    rows.append(("perfweb import + report (json)", *ours))
    print(f"\ninput: {data} ({data.stat().st_size / 1e6:.1f} MB)")
    print(f"{'tool':<36} {'seconds':>8} {'peak MiB':>9}")
    for name, secs, rss in rows:
        print(f"{name:<36} {secs:>8.2f} {rss:>9.1f}")
    print(f"\nperfweb / perf report: time {ours[0] / rep[0]:.2f}x (goal <= 1.5x), "
          f"peak memory {ours[1] / rep[1]:.2f}x (goal <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
