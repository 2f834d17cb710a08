#!/usr/bin/env python3
"""Benchmark: importing `perf script` text, side by side with the tools people use today.

In one run on the same file it prints wall time, throughput and peak memory for
  1. `perf script` itself (turning perf.data into the text; only when perf.data is known),
  2. FlameGraph's `stackcollapse-perf.pl` (folding the text),
  3. perfweb: `python -m analysis report FILE --format folded` (import + fold),
  4. perfweb again on the first half of the file, to show memory does not grow with it.

Inputs, first that applies:
  --script FILE      an existing perf script text
  --perf-data FILE   a perf.data to run `perf script` on
  (neither)          record one: a busy two-thread workload (tests/fixtures/recorded/
                     worker.c) under `perf record -a -g -F 3999` for --seconds (30)

stackcollapse-perf.pl is not part of this repository: pass --stackcollapse PATH, set
STACKCOLLAPSE_PERF, or put it on PATH; without it that row is skipped with a message.
Goal (issue step 1): perfweb at least 2x faster than stackcollapse-perf.pl on a ~70 MB
script file (aim 4x), memory flat in the file size.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import OUT, ROOT, measure, record  # noqa: E402


def find_stackcollapse(given: str | None) -> str | None:
    for cand in (given, os.environ.get("STACKCOLLAPSE_PERF"),
                 str(ROOT / "benchmarks/vendor/stackcollapse-perf.pl"),
                 shutil.which("stackcollapse-perf.pl")):
        if cand and Path(cand).is_file():
            return cand
    return None


def first_half(script: Path) -> Path:
    """The first half of the samples, cut at a sample boundary."""
    half = OUT / (script.stem + ".half.txt")
    size = script.stat().st_size
    with script.open("rb") as src, half.open("wb") as dst:
        left = size // 2
        while left > 0:  # in chunks: a forked child's peak RSS counts our pages too
            chunk = src.read(min(left, 1 << 20))
            if not chunk:
                break
            dst.write(chunk)
            left -= len(chunk)
        for line in src:  # finish the sample we are in
            dst.write(line)
            if line.strip() == b"":
                break
    return half


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", type=Path)
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--stackcollapse")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    rows = []
    script = args.script
    if script is None:
        data = args.perf_data or record(args.seconds)
        script = OUT / "bench.script.txt"
        with script.open("wb") as f:
            secs, rss = measure(["perf", "script", "-i", str(data)], stdout=f)
        rows.append(("perf script (perf.data -> text)", secs, rss))
    size_mb = script.stat().st_size / 1e6

    sc = find_stackcollapse(args.stackcollapse)
    sc_secs = None
    if sc:
        secs, rss = measure(["perl", sc, str(script)])
        sc_secs = secs
        rows.append(("stackcollapse-perf.pl (fold)", secs, rss))
    else:
        print("stackcollapse-perf.pl not found: skipping its row "
              "(use --stackcollapse PATH or STACKCOLLAPSE_PERF)")

    ours = [sys.executable, "-m", "analysis", "report", str(script), "--format", "folded"]
    secs, rss = measure(ours)
    rows.append(("perfweb import + fold", secs, rss))
    half = first_half(script)
    h_secs, h_rss = measure([sys.executable, "-m", "analysis", "report", str(half),
                             "--format", "folded"])
    rows.append(("perfweb import + fold, first half", h_secs, h_rss))

    print(f"\ninput: {script} ({size_mb:.1f} MB; half: {half.stat().st_size / 1e6:.1f} MB)")
    print(f"{'tool':<36} {'seconds':>8} {'MB/s':>8} {'peak MiB':>9}")
    for name, s, r in rows:
        mb = size_mb / 2 if "half" in name else size_mb
        print(f"{name:<36} {s:>8.2f} {mb / s:>8.1f} {r:>9.1f}")
    if sc_secs:
        print(f"\nperfweb vs stackcollapse-perf.pl: {sc_secs / secs:.2f}x faster "
              f"(goal >= 2x, aim 4x)")
    print(f"peak memory, full file / half file: {rss / h_rss:.2f} "
          f"(file size ratio {size_mb / (half.stat().st_size / 1e6):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
