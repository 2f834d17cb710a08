"""`make fuzz-native`: the compiled extensions under AddressSanitizer and
UndefinedBehaviorSanitizer, fuzzed.

1. build.py builds them, and the canary, into OUT/lib (never over the checkout's).
2. prove(): a child process with sanitized.environment() imports every extension from
   OUT/lib and from nowhere else (/proc/self/maps), and the canary's read one byte past
   a heap block and its signed overflow each abort a child with the sanitizer's report;
   without that the run stops (a harness that cannot fail is worth nothing).
3. The inputs are split between the targets (drive.NATIVE_TARGETS) and run in chunks,
   `--jobs` child processes at a time under `nice`; a child aborted by a sanitizer has
   the input it was on kept in `--crashes` with the report beside it, and its chunk
   goes on from the next input.
4. OUT/summary.json and the printed summary: inputs, seconds, findings per target, and
   which compiled functions the inputs reached. The exit status is 1 on any finding.

    python -m tests.fuzz.native.run [--inputs 1000000] [--jobs 2] [--out DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..mutate import CRASHES
from . import sanitized
from .build import CANARY_NAME, ROOT, build
from .drive import NATIVE_TARGETS

#: each target's share of the inputs: the perf.data reader is the most code (record
#: loop and switch records), perf script the next; a saved profile is
#: cheap to read
SPLIT = {"perf-data-alike": 0.45, "perf-script-compiled": 0.30, "saved-profile": 0.25}
CHUNK = 20_000


def _child(code: str, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=sanitized.environment(folder),
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def prove(folder: Path) -> list[str]:
    """The sanitized files a child loads; raises unless they are the ones loaded and the
    canary's two bugs are each reported (stderr) and fatal (exit status)."""
    r = _child("import json; from tests.fuzz.native import sanitized; "
               "print(json.dumps(sanitized.check_loaded(sanitized.install())))", folder)
    if r.returncode:
        raise RuntimeError(f"the sanitized extensions do not load:\n{r.stderr[-3000:]}")
    loaded = json.loads(r.stdout.splitlines()[-1])
    for call, report in (("read_past_end(16)", "heap-buffer-overflow"),
                         ("add_to_int_max(1)", "signed integer overflow")):
        r = _child("from tests.fuzz.native import sanitized; sanitized.install(); "
                   f"import {CANARY_NAME} as c; c.{call}; print('not caught')", folder)
        if r.returncode == 0 or report not in r.stderr or "not caught" in r.stdout:
            raise RuntimeError(f"the canary's {call} was not reported ({report}); exit "
                               f"status {r.returncode}:\n{r.stderr[-3000:]}")
    return loaded


def _first_lines(report: str) -> str:
    """What a sanitizer's report says and where: its first line and first frame."""
    lines = report.splitlines()
    at = next((i for i, ln in enumerate(lines)
               if any(m in ln for m in sanitized.REPORT_MARKERS)), None)
    if at is None:
        return " / ".join(ln.strip() for ln in lines[-3:]) or "no report"
    frame = next((ln.strip() for ln in lines[at + 1:at + 40] if ln.strip().startswith("#0")),
                 "")
    return f"{lines[at].strip()} {frame}"


def plan(inputs: int, chunk: int, split: dict[str, float]) -> list[tuple[str, int, int]]:
    """(target, first input, count) chunks, `inputs` in all."""
    jobs, given = [], 0
    names = list(split)
    for k, target in enumerate(names):
        n = inputs - given if k == len(names) - 1 else round(inputs * split[target])
        given += n
        for first in range(0, n, chunk):
            jobs.append((target, first, min(chunk, n - first)))
    return jobs


class Campaign:
    """Runs chunks in sanitized children and gathers what they say."""

    def __init__(self, folder: Path, out: Path, crashes: Path, seed: str, nice: int,
                 after_import_every: int) -> None:
        self.folder, self.out, self.crashes, self.seed = folder, out, crashes, seed
        self.nice, self.every = nice, after_import_every
        self.lock = threading.Lock()
        self.results: list[dict] = []
        self.reports: list[dict] = []
        self.started = time.monotonic()

    def _command(self, target: str, first: int, count: int, current: Path,
                 replay: bool) -> list[str]:
        cmd = [sys.executable, "-m", "tests.fuzz.native.drive", target, "--seed", self.seed,
               "--current", str(current), "--crashes", str(self.crashes),
               "--after-import-every", "1" if replay else str(self.every)]
        cmd += ["--replay"] if replay else ["--first", str(first), "--count", str(count)]
        return (["nice", "-n", str(self.nice)] if self.nice else []) + cmd

    def run_chunk(self, target: str, first: int, count: int, replay: bool = False) -> None:
        current = self.out / f"current-{target}-{first}.bin"
        end = first + count
        while replay or first < end:
            r = subprocess.run(self._command(target, first, end - first, current, replay),
                               env=sanitized.environment(self.folder), cwd=ROOT,
                               capture_output=True, text=True)
            if r.returncode == 0:
                result = json.loads(r.stdout.splitlines()[-1])
                result["replay"] = replay
                with self.lock:
                    self.results.append(result)
                    self._progress(target)
                break
            at = self._keep(target, current, r)
            if replay or at < first:  # (no input of this chunk started: a broken harness)
                break
            with self.lock:  # the inputs before the crash ran, and the crash's
                self.results.append({"target": target, "first": first, "replay": False,
                                     "inputs": at - first + 1, "findings": [], "calls": {}})
            first = at + 1
        current.unlink(missing_ok=True)

    def _keep(self, target: str, current: Path, r: subprocess.CompletedProcess) -> int:
        """The input a child died on, kept with its report; its number."""
        blob = current.read_bytes() if current.exists() else b""
        at, data = int.from_bytes(blob[:8], "little") if blob else -1, blob[8:]
        report = r.stderr[-20_000:]
        sanitizer = any(m in report for m in sanitized.REPORT_MARKERS)
        name = f"{target}-{hashlib.sha256(data).hexdigest()[:12]}"
        self.crashes.mkdir(parents=True, exist_ok=True)
        if len(blob) >= 8:
            (self.crashes / f"{name}.bin").write_bytes(data)
        (self.out / f"{name}.report.txt").write_text(report)
        summary = f"exit status {r.returncode}: {_first_lines(report)}"
        with self.lock:
            self.reports.append({"target": target, "input": at, "file": f"{name}.bin",
                                 "kind": "sanitizer" if sanitizer else
                                 f"exit status {r.returncode}", "summary": summary[:300]})
            print(f"  FINDING {target} input {at}: {summary[:200]} -> {name}.bin",
                  flush=True)
        return at

    def _progress(self, target: str) -> None:
        done = sum(r["inputs"] for r in self.results if not r.get("replay"))
        print(f"  {done:,} inputs ({target} chunk done) at "
              f"{time.monotonic() - self.started:,.0f} s", flush=True)

    def summary(self, loaded: list[str]) -> dict:
        per: dict[str, dict] = {}
        calls: dict[str, int] = {}
        findings = list(self.reports)
        for r in self.results:
            t = per.setdefault(r["target"], {"inputs": 0, "cpu_seconds": 0.0, "replayed": 0})
            t["replayed" if r.get("replay") else "inputs"] += r["inputs"]
            t["cpu_seconds"] = round(t["cpu_seconds"] + r.get("cpu_seconds", 0.0), 1)
            for k, v in r["calls"].items():
                calls[k] = calls.get(k, 0) + v
            findings += [dict(f, target=r["target"]) for f in r["findings"]]
        return {"inputs": sum(t["inputs"] for t in per.values()), "targets": per,
                "wall_seconds": round(time.monotonic() - self.started, 1),
                "findings": findings, "calls": calls,
                "unreached": sorted(k for k, v in calls.items() if not v),
                "sanitized_modules": loaded}


def campaign(folder: Path, inputs: int, out: Path, jobs: int = 2, crashes: Path = CRASHES,
             seed: str = "0", nice: int = 10, chunk: int = CHUNK,
             split: dict[str, float] = SPLIT, after_import_every: int = 4,
             replay: bool = False) -> dict:
    """Fuzzes with the sanitized modules of `folder` (built and proven: build, prove),
    and with `replay` first runs every input kept in `crashes` for the native targets;
    the summary."""
    out.mkdir(parents=True, exist_ok=True)
    loaded = [str(p) for p in sanitized.modules(folder).values()]
    c = Campaign(folder, out, crashes, seed, nice, after_import_every)
    work = plan(inputs, chunk, split) if inputs else []
    with ThreadPoolExecutor(jobs) as pool:
        if replay:
            list(pool.map(lambda t: c.run_chunk(t, 0, 0, replay=True), NATIVE_TARGETS))
        list(pool.map(lambda job: c.run_chunk(*job), work))
    result = c.summary(loaded)
    (out / "summary.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "fuzz-native")
    ap.add_argument("--crashes", type=Path, default=CRASHES)
    ap.add_argument("--seed", default="0")
    ap.add_argument("--nice", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=CHUNK)
    args = ap.parse_args(argv)
    folder = args.out / "lib"
    build(folder)
    loaded = prove(folder)
    print(f"{len(loaded)} sanitized modules loaded from {folder} and none from elsewhere "
          f"(/proc/self/maps); the canary's heap overflow and signed overflow were "
          f"reported and fatal", flush=True)
    result = campaign(folder, args.inputs, args.out, args.jobs, args.crashes, args.seed,
                      args.nice, args.chunk, replay=True)
    for target, t in result["targets"].items():
        print(f"{target}: {t['inputs']:,} inputs and the {t['replayed']} kept ones, "
              f"{t['cpu_seconds']:,.0f} CPU s")
    print(f"{result['inputs']:,} inputs in {result['wall_seconds']:,.0f} s; "
          f"{len(result['findings'])} findings; compiled functions not reached: "
          f"{', '.join(result['unreached']) or 'none'}")
    for f in result["findings"]:
        print(f"  {f['target']}: {f.get('summary') or f.get('error')} ({f['file']})")
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
