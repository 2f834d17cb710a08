#!/usr/bin/env python3
"""Benchmark: symbol tables of very large ELF files, and symbolization end to end.

1. Index of a very large ELF (libtorch_cpu.so: 434 MB, ~385k function symbols), built
   cold and then loaded from the cache. It is taken from --elf, or from the torch wheel
   that lies on these machines (/opt/wheels, `pip install torch==2.13.0` takes the same
   file), extracted once into benchmarks/out.
2. End to end on the system-wide capture of bench_perf_data_import.py (--perf-data, or a
   fresh 30 s recording): `perf report --stdio --no-children` (perf symbolizes from the
   machine's files) against perfweb importing the perf.data and symbolizing it from the
   same files given explicitly (the binaries of every DSO with samples, and a copy of
   /proc/kallsyms).
3. With --torch-python PYTHON (a Python with torch installed, e.g. a scratch venv made
   with `python3 -m venv v && v/bin/pip install torch==2.13.0`): a capture of a matmul
   loop that spends its time in libtorch_cpu.so, `perf report` against perfweb symbolizing
   it with a cold and a warm cache.
Goals (issue step 3): index under 1 s cold and 0.1 s cached; end to end within 1.5x of
`perf report`.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_common import OUT, ROOT, measure, record  # noqa: E402

from analysis.symbols.elf import read_info  # noqa: E402
from analysis.symbols.symbolize import _elf_index  # noqa: E402


def large_elf(given: Path | None) -> Path | None:
    if given:
        return given
    target = OUT / "libtorch_cpu.so"
    if target.exists():
        return target
    wheels = sorted(glob.glob("/opt/wheels/torch-*.whl"))
    if not wheels:
        return None
    OUT.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheels[-1]) as z, z.open("torch/lib/libtorch_cpu.so") as src, \
            open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return target


def bench_index(elf: Path) -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PERFWEB_CACHE_DIR"] = cache
        t0 = time.perf_counter()
        index, table = _elf_index(read_info(str(elf)))
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        again, _ = _elf_index(read_info(str(elf)))
        warm = time.perf_counter() - t0
        assert len(again) == len(index)
    print(f"\nsymbol index of {elf.name} ({elf.stat().st_size / 1e6:.0f} MB, {len(index)} "
          f"functions from {table})")
    print(f"  cold build + cache write: {cold:.2f} s (goal < 1 s)")
    print(f"  from cache:               {warm:.3f} s (goal < 0.1 s)")


def _dso_files(data: Path) -> tuple[list[str], int]:
    """The DSO files a capture hit, found in a child process: loading the capture here
    would count in the peak memory of every process this one starts."""
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from analysis.importers import load; "
         "p = load(sys.argv[1]); print(len(p)); "
         "[print(m.path) for m in p.mappings if m.path.startswith('/')]", str(data)],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")
    return sorted({f for f in out[1:] if f and os.path.isfile(f)}), int(out[0])


def bench_end_to_end(data: Path) -> None:
    files, samples = _dso_files(data)
    kallsyms = OUT / "kallsyms"
    shutil.copyfile("/proc/kallsyms", kallsyms)
    args = [a for f in files + [str(kallsyms)] for a in ("--symbols", f)]
    os.environ["HOME"] = "/tmp"
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PERFWEB_CACHE_DIR"] = cache
        rep = measure(["perf", "report", "-i", str(data), "--stdio", "--no-children"])
        cmd = [sys.executable, "-m", "analysis", "report", str(data), "--format", "json",
               *args]
        cold = measure(cmd)
        warm = measure(cmd)
    print(f"\nend to end on {data.name} ({samples} samples; symbols: {len(files)} files "
          f"+ kallsyms)")
    print(f"{'tool':<44} {'seconds':>8} {'peak MiB':>9}")
    print(f"{'perf report --stdio --no-children':<44} {rep[0]:>8.2f} {rep[1]:>9.1f}")
    print(f"{'perfweb import + symbolize (cold cache)':<44} {cold[0]:>8.2f} {cold[1]:>9.1f}")
    print(f"{'perfweb import + symbolize (warm cache)':<44} {warm[0]:>8.2f} {warm[1]:>9.1f}")
    print(f"perfweb / perf report: {cold[0] / rep[0]:.2f}x cold, {warm[0] / rep[0]:.2f}x "
          f"warm (goal <= 1.5x)")


_TORCH_WORK = """
import torch
torch.set_num_threads(2)
a = torch.randn(384, 384)
for _ in range(400):
    b = a @ a
    c = torch.relu(b).sum()
"""


def bench_torch(python: str) -> None:
    data = OUT / "torch.perf.data"
    subprocess.run(["perf", "record", "-q", "-g", "-F", "999", "-o", str(data), "--",
                    python, "-W", "ignore", "-c", _TORCH_WORK], check=True,
                   stderr=subprocess.DEVNULL)
    bench_end_to_end(data)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elf", type=Path)
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--torch-python", help="a python with torch, for the libtorch capture")
    args = ap.parse_args()
    # end to end first, while this process is small: a child's peak memory counts the
    # pages it shared with this process when it started
    bench_end_to_end(args.perf_data or record(args.seconds))
    if args.torch_python:
        bench_torch(args.torch_python)
    elf = large_elf(args.elf)
    if elf is None:
        print("no large ELF: pass --elf PATH (no torch wheel under /opt/wheels)")
    else:
        bench_index(elf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
