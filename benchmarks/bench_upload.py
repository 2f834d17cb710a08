#!/usr/bin/env python3
"""Benchmark: upload to "done" through the deployed app, beside `perf report`.

What a user waits for: `perfweb upload` of the diverse capture with the symbol inputs
`perf report` reads from the recording host (a kallsyms copy and the DSO files the
capture maps), until the capture's API row says finished. The app runs as deployed:
gunicorn (docker-compose's flags), one Celery worker (prefork, one process), PostgreSQL
and Redis on this machine, a database and Redis db of its own. Each run is a new build
(its symbol files are new to the worker too); runs interleave with `perf report --stdio
--no-children --sort comm,dso,sym` on the same file, and the fastest of each is shown.
The API is polled every 50 ms, so the time is not the client's --wait backoff.

Goal (issue 16, step 5): upload to done within 2x `perf report`'s wall time.

    make bench-upload                       # /var/tmp/diverse.perf.data
    make bench-upload BENCH_ARGS="--perf-data FILE --runs 5"
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import ROOT, measure  # noqa: E402

DIVERSE = Path("/var/tmp/diverse.perf.data")
DB = "perfweb_bench_upload"
GOAL = 2.0


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(work: Path) -> dict:
    env = dict(os.environ)
    env.update({"DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}",
                "REDIS_URL": "redis://127.0.0.1:6379/4", "MEDIA_ROOT": str(work / "media"),
                "PERFWEB_VAR_DIR": str(work / "var"), "ALLOWED_HOSTS": "127.0.0.1",
                "CELERY_TASK_DEFAULT_QUEUE": "perfweb-bench-upload",
                "DJANGO_SETTINGS_MODULE": "perfweb.settings",
                "PERFWEB_USER_QUOTA_BYTES": str(20 << 30), "HOME": str(work)})
    return env


def _manage(env, *args) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          check=True, capture_output=True, text=True).stdout


def _symbol_inputs(data: Path, work: Path) -> list[Path]:
    """What `perf report` reads from the host: /proc/kallsyms and the mapped files."""
    kallsyms = work / "kallsyms"
    shutil.copyfile("/proc/kallsyms", kallsyms)
    dsos = subprocess.run(
        [sys.executable, "-c", "import sys, os; from analysis.importers import load; "
         "[print(m.path) for m in load(sys.argv[1]).mappings if m.path.startswith('/') "
         "and os.path.isfile(m.path)]", str(data)],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [kallsyms, *map(Path, sorted(set(dsos)))]


def _get(url: str, key: str) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"Token {key}",
                                               "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def _upload(env, url: str, key: str, data: Path, symbols: list[Path], build: str
            ) -> tuple[float, float, dict]:
    """(seconds until the upload was stored, seconds until done, the capture's row)."""
    cmd = [sys.executable, "-m", "perfweb_client", "upload", str(data), "--service",
           "bench", "--build", build, "--label", "system-wide", "--url", url, "-q"]
    for s in symbols:
        cmd += ["--symbols", str(s)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=dict(env, PERFWEB_TOKEN=key),
                         capture_output=True, text=True)
    uploaded = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"upload failed: {out.stderr[-2000:]}")
    pk = re.search(r"capture (\d+):", out.stdout).group(1)
    while True:
        row = _get(f"{url}/api/v1/captures/{pk}/", key)
        if row["finished"]:
            return uploaded, time.perf_counter() - t0, row
        if time.perf_counter() - t0 > 900:
            raise SystemExit(f"capture {pk} still {row['status']} after 900 s")
        time.sleep(0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perf-data", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    data = args.perf_data or DIVERSE
    if args.perf_data is None and not data.exists():
        subprocess.run(["bash", str(ROOT / "benchmarks" / "record_diverse.sh"), str(data)],
                       check=True)
    work = Path(tempfile.mkdtemp(prefix="perfweb-bench-upload-"))
    (work / "media").mkdir()
    env = _env(work)
    symbols = _symbol_inputs(data, work)
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DB],
                   check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB], check=True)
    subprocess.run(["redis-cli", "-n", "4", "flushdb"], check=True, capture_output=True)
    _manage(env, "migrate", "-v", "0")
    key = _manage(env, "shell", "-c",
                  "from django.contrib.auth import get_user_model;"
                  "from perfweb.captures.models import Team, Membership;"
                  "from perfweb.captures.api_tokens import create_token;"
                  "u = get_user_model().objects.create_user('bench', password='bench-pw-19');"
                  "Membership.objects.create(team=Team.objects.create(name='bench'), user=u);"
                  "print(create_token(u, 'bench'))").strip().splitlines()[-1]
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    logs = open(work / "services.log", "wb")
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "perfweb.wsgi", "--bind",
                            f"127.0.0.1:{port}", "--workers", "3", "--timeout", "120",
                            "--log-level", "warning"],
                           cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT)
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "perfweb", "worker",
                               "--concurrency=1", "--loglevel=WARNING", "-n",
                               "bench-upload@%h"],
                              cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT)
    os.environ["HOME"] = "/tmp"  # keep perf from reading or writing a build-id cache here
    perf = ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort",
            "comm,dso,sym"]
    perf_times, stored, done, rows = [], [], [], []
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(url + "/login/", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        for i in range(max(1, args.runs)):
            perf_times.append(measure(perf)[0])
            up, finished, row = _upload(env, url, key, data, symbols, f"run-{i + 1}")
            stored.append(up)
            done.append(finished)
            rows.append(row)
    finally:
        for p in (web, worker):
            p.send_signal(signal.SIGTERM)
        for p in (web, worker):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        logs.close()
    failed = [r for r in rows if r["status"] != "done"]
    size = data.stat().st_size + sum(s.stat().st_size for s in symbols)
    best_perf, best = min(perf_times), min(done)
    print(f"input: {data} ({data.stat().st_size / 1e6:.1f} MB) with {len(symbols)} symbol "
          f"inputs (kallsyms and {len(symbols) - 1} DSOs; {size / 1e6:.1f} MB uploaded)")
    print(f"{'step':44s} {'seconds':>8s}")
    print(f"{'perf report --stdio --no-children':44s} {best_perf:8.2f}")
    print(f"{'perfweb upload: stored (client exits)':44s} {min(stored):8.2f}")
    print(f"{'perfweb upload to done (API says finished)':44s} {best:8.2f}")
    print(f"(fastest of {len(done)} runs each; all upload-to-done runs: "
          + ", ".join(f"{t:.2f}" for t in done) + " s; perf report: "
          + ", ".join(f"{t:.2f}" for t in perf_times) + " s)")
    print(f"\nupload to done / perf report: {best / best_perf:.2f}x (goal <= {GOAL:.1f}x)")
    if failed:
        print("FAILED: " + "; ".join(f"{r['id']}: {r['status']} {r.get('error', '')}"
                                     for r in failed))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
