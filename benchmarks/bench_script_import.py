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
Each tool runs --runs times (3), interleaved, and its fastest run is shown: this machine
is shared and single runs vary by up to 2x.
Goal (issue 16, step 5: 4x): perfweb at least 4x faster than stackcollapse-perf.pl on a
~70 MB script file of a diverse capture (benchmarks/record_diverse.sh), memory flat in the
file size (it grows with the samples).
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
    ap.add_argument("--runs", type=int, default=3,
                    help="runs of each tool, interleaved; the fastest is shown (default 3)")
    args = ap.parse_args()
    runs = max(1, args.runs)
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
    if not sc:
        print("stackcollapse-perf.pl not found: skipping its row "
              "(use --stackcollapse PATH or STACKCOLLAPSE_PERF)")
    half = first_half(script)
    tools = [("perfweb import + fold", [sys.executable, "-m", "analysis", "report",
                                        str(script), "--format", "folded"]),
             ("perfweb import + fold, first half", [sys.executable, "-m", "analysis",
                                                    "report", str(half), "--format",
                                                    "folded"])]
    if sc:
        tools.insert(0, ("stackcollapse-perf.pl (fold)", ["perl", sc, str(script)]))
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in tools}
    for _ in range(runs):
        for name, cmd in tools:
            times[name].append(measure(cmd))
    best = {name: (min(t for t, _ in ts), max(r for _, r in ts)) for name, ts in times.items()}
    rows += [(name, *best[name]) for name, _ in tools]
    sc_secs = best["stackcollapse-perf.pl (fold)"][0] if sc else None
    secs, rss = best["perfweb import + fold"]
    h_secs, h_rss = best["perfweb import + fold, first half"]

    print(f"\ninput: {script} ({size_mb:.1f} MB; half: {half.stat().st_size / 1e6:.1f} MB)")
    print(f"{'tool':<36} {'seconds':>8} {'MB/s':>8} {'peak MiB':>9}")
    for name, s, r in rows:
        mb = size_mb / 2 if "half" in name else size_mb
        print(f"{name:<36} {s:>8.2f} {mb / s:>8.1f} {r:>9.1f}")
    print(f"(fastest of {runs} runs each, peak memory the largest; all: " + "; ".join(
        f"{name} {', '.join(f'{t:.2f}' for t, _ in ts)} s" for name, ts in times.items()) + ")")
    if sc_secs:
        print(f"\nperfweb vs stackcollapse-perf.pl: {sc_secs / secs:.2f}x faster "
              f"(goal >= 4x, step 5)")
    print(f"peak memory, full file / half file: {rss / h_rss:.2f} "
          f"(file size ratio {size_mb / (half.stat().st_size / 1e6):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
