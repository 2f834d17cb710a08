#!/usr/bin/env python3
"""Benchmark: what a Celery worker does with a large upload, on an input and its half.

Issue 16's "Size" goal: a 1 GB `perf script` text and a perf.data of 2 million samples
import in time linear in their size, with the worker's peak memory under 400 MiB, and the
JSON report stays small (the notable functions and a count of the rest; the whole table
lives in the saved profile).

The worker's path is perfweb/captures/services/analysis_run.py `_run`; it needs a claimed
Capture row, so this benchmark calls the engine functions `_run` calls, in the same order,
in a child process that first imports what a worker holds (Django set up with
perfweb.settings, perfweb.celery and the captures tasks; no database connection is made):
  1. analysis.importers.load(path)
  2. (symbolize: only when symbol files were uploaded; none are here)
  3. analysis.report.build_report(profile, label="", rate=None), compared_with None
     (the first capture of its label has nothing to be compared with)
  4-5. analysis_run.write_outputs(profile, folder): the folded text and the saved
     profile (analysis.profile_io.dump) written to files in the work folder
  6. the stored result: the report as the JSON its JSONField stores (json.dumps)
with the cyclic collector paused (analysis.gc_pause) around 1, 3 and 4-5, as there.
The child's peak RSS (wait4's ru_maxrss) is the worker's peak; its wall time includes
start-up and imports, which the worker pays once, so the per-sample rates use the time of
steps 1-6 only (printed as `analysis s`).

Inputs (benchmarks/record_size.sh makes them, into /var/tmp by default):
  --perf-data FILE --perf-data-half FILE   2M samples, and a recording of half the duration
  --script FILE --script-half FILE         ~1 GB of perf script text, and its first half
Each input is run --runs times (default 3), interleaved; the fastest run's times are
printed with the largest peak of the runs. Printed against the goals:
  linear:   seconds per million samples, full / half <= 1.2
  memory:   peak RSS < 400 MiB
  report:   the JSON report under 1 MB and not growing with the samples (full / half <= 1.2)
`--stages` adds, per run, each step's seconds and the RSS high-water mark after it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import ROOT, measure  # noqa: E402

GOAL_MIB = 400
GOAL_LINEAR = 1.2
GOAL_REPORT_BYTES = 1_000_000
VAR = Path("/var/tmp")


def _rss_mib() -> tuple[float, float]:
    """(current RSS, high-water mark) of this process in MiB."""
    got = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                got[line[:5]] = int(line.split()[1]) / 1024
    return got["VmRSS"], got["VmHWM"]


def child(path: str, work: str) -> None:
    """One worker analysis of `path`; prints one JSON line of what it measured."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfweb.settings")
    os.environ.setdefault("PERFWEB_VAR_DIR", work)  # the settings' secret key goes there
    sys.path.insert(0, str(ROOT))
    import importlib

    import django
    django.setup()
    for module in ("perfweb.celery", "perfweb.captures.tasks"):  # what a worker holds
        importlib.import_module(module)
    from analysis.gc_pause import paused_gc
    from analysis.importers import load
    from analysis.malloc_tuning import bound_heap
    from analysis.report import build_report
    from perfweb.captures.services.analysis_run import write_outputs

    stages = [("imports", 0.0, *_rss_mib())]
    t0 = last = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        stages.append((name, now - last, *_rss_mib()))
        last = now

    bound_heap()  # as _run does
    with paused_gc():
        profile = load(path)
    stage("load")
    with paused_gc():
        report = build_report(profile, label="", rate=None)
    report["compared_with"] = None
    stage("report")
    with paused_gc():
        folded, saved = write_outputs(profile, work)
    stage("outputs")
    report_json = json.dumps(report).encode()
    stage("store")
    rest = report.get("functions_rest") or {}
    print(json.dumps({
        "samples": report["samples"],
        "analysis_s": time.perf_counter() - t0,
        "stages": stages,
        "report_bytes": len(report_json),
        "report_keys": sorted(((len(json.dumps(v)), k) for k, v in report.items()),
                              reverse=True)[:4],
        "functions_listed": len(report["functions"]),
        "functions_rest": rest.get("functions", 0),
        "functions": len(profile.functions),
        "locations": len(profile.locations),
        "stacks": len(profile.stacks),
        "folded_bytes": os.path.getsize(folded),
        "profile_bytes": os.path.getsize(saved),
    }))


def run_once(path: Path) -> dict:
    with tempfile.TemporaryDirectory(dir=VAR, prefix="bench-size.") as work, \
            tempfile.TemporaryFile(dir=work) as out:
        secs, peak = measure([sys.executable, __file__, "--child", str(path), work],
                             stdout=out)
        out.seek(0)
        got = json.loads(out.read().decode().strip().splitlines()[-1])
    got.update(wall_s=secs, peak_mib=peak)
    return got


def best(runs: list[dict]) -> dict:
    """The fastest run, with the largest peak of all the runs."""
    out = dict(min(runs, key=lambda r: r["analysis_s"]))
    out["peak_mib"] = max(r["peak_mib"] for r in runs)
    return out


def per_msample(r: dict) -> float:
    return r["analysis_s"] / (r["samples"] / 1e6)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-data", type=Path, default=VAR / "size.perf.data")
    ap.add_argument("--perf-data-half", type=Path, default=VAR / "size-half.perf.data")
    ap.add_argument("--script", type=Path, default=VAR / "size.script.txt")
    ap.add_argument("--script-half", type=Path, default=VAR / "size-half.script.txt")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "WORKDIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0

    pairs = [("perf.data", args.perf_data, args.perf_data_half),
             ("perf script text", args.script, args.script_half)]
    missing = [str(p) for _, full, half in pairs for p in (full, half) if not p.is_file()]
    if missing:
        raise SystemExit("missing: " + ", ".join(missing) +
                         "\n(make them with: sudo benchmarks/record_size.sh /var/tmp)")
    inputs = [p for _, full, half in pairs for p in (full, half)]
    runs: list[list[dict]] = [[] for _ in inputs]
    for i in range(args.runs):
        for p, done in zip(inputs, runs):
            r = run_once(p)
            done.append(r)
            print(f"run {i + 1}/{args.runs} {p.name}: {r['analysis_s']:.2f} s, "
                  f"{r['peak_mib']:.0f} MiB", file=sys.stderr, flush=True)
            if args.stages:
                for name, secs, rss, hwm in r["stages"]:
                    print(f"    {name:<8} {secs:7.2f} s  rss {rss:7.1f} MiB  "
                          f"hwm {hwm:7.1f} MiB", file=sys.stderr)
    res = [best(rs) for rs in runs]
    width = max(len(p.name) for p in inputs)

    print(f"\nfastest of {args.runs} runs (analysis s: steps 1-6; wall s: the child "
          f"process with start-up and the worker's imports)")
    print(f"{'input':<{width}} {'MB':>8} {'samples':>10} {'analysis s':>10} {'wall s':>7} "
          f"{'s/Msample':>9} {'peak MiB':>8} {'report B':>9} {'profile MB':>10}")
    for p, r in zip(inputs, res):
        print(f"{p.name:<{width}} {p.stat().st_size / 1e6:8.1f} {r['samples']:>10,} "
              f"{r['analysis_s']:10.2f} {r['wall_s']:7.2f} {per_msample(r):9.2f} "
              f"{r['peak_mib']:8.1f} {r['report_bytes']:>9,} "
              f"{r['profile_bytes'] / 1e6:10.1f}")

    base = max(r["stages"][0][3] for r in res)
    print(f"\nbefore the upload is read the child holds {base:.0f} MiB (Python, Django and "
          f"the worker's modules)")
    for i, (kind, _, _) in enumerate(pairs):
        f, h = res[2 * i], res[2 * i + 1]
        linear = per_msample(f) / per_msample(h)
        more = f["samples"] - h["samples"]
        grow = f"{(f['peak_mib'] - h['peak_mib']) * (1 << 20) / more:.0f}" if more else "n/a"
        report_ratio = f["report_bytes"] / h["report_bytes"]
        checks = [linear <= GOAL_LINEAR, f["peak_mib"] < GOAL_MIB,
                  f["report_bytes"] < GOAL_REPORT_BYTES and report_ratio <= GOAL_LINEAR]
        print(f"{kind}: {f['samples']:,} samples ({f['stacks']:,} stacks, "
              f"{f['locations']:,} locations, {f['functions']:,} functions)")
        print(f"  linear: {per_msample(f):.2f} s/Msample full vs {per_msample(h):.2f} half,"
              f" ratio {linear:.2f} (goal <= {GOAL_LINEAR}): {verdict(checks[0])}")
        print(f"  memory: peak {f['peak_mib']:.0f} MiB (goal < {GOAL_MIB}): "
              f"{verdict(checks[1])}; half {h['peak_mib']:.0f} MiB, "
              f"{grow} bytes more per sample")
        top = ", ".join(f"{k} {n:,}" for n, k in f["report_keys"])
        print(f"  report: {f['report_bytes']:,} bytes (half {h['report_bytes']:,}, ratio "
              f"{report_ratio:.2f}; goal < {GOAL_REPORT_BYTES:,} and <= {GOAL_LINEAR}x): "
              f"{verdict(checks[2])}; {f['functions_listed']:,} functions listed, "
              f"{f['functions_rest']:,} counted in functions_rest; largest keys: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
