"""What the benchmarks share: timing a child process with its peak memory, and
recording the standard capture (30 s, system-wide, 3999 Hz, two busy threads)."""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"


def measure(cmd: list[str], stdout=subprocess.DEVNULL, cwd=ROOT) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one child process."""
    with tempfile.TemporaryFile() as errf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=errf, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024.0


def record(seconds: int = 30) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    worker = OUT / "worker"
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread",
                    str(ROOT / "tests/fixtures/recorded/worker.c"), "-o", str(worker)],
                   check=True)
    data = OUT / "bench.perf.data"
    busy = subprocess.Popen([str(worker)])
    try:
        subprocess.run(["perf", "record", "-q", "-a", "-g", "-F", "3999", "-o", str(data),
                        "--", "sleep", str(seconds)], check=True)
    finally:
        busy.kill()
        busy.wait()
    return data
