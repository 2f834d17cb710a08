"""Load on loopback, as deployed: gunicorn (perfweb.wsgi, 3 sync workers as in the
Dockerfile), two Celery workers (prefork), PostgreSQL and Redis on this machine.

1. 20 concurrent uploads of distinct 25 MB captures through the `perfweb` CLI (20
   processes at once), each upload's time recorded; then until every capture is analyzed.
2. 200 concurrent viewers with wrk: the capture page and its flame graph, functions and
   timeline data, in rotation, signed in, for --seconds.
3. Peak memory (VmHWM) of every gunicorn and Celery process.

Nothing may fail: every upload 201, every capture done, no wrk error or non-2xx answer.
The figures go to stdout and benchmarks/results/load.md.

    make bench-load            # needs wrk (apt-get install wrk), PostgreSQL and Redis
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPINPOOL = ROOT.parent / "shared" / "corpus" / "cases" / "spinpool"
RESULTS = ROOT / "benchmarks" / "results"
DB = "perfweb_load"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(media: Path) -> dict:
    env = dict(os.environ)
    env.update({"DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}",
                "REDIS_URL": "redis://127.0.0.1:6379/3", "MEDIA_ROOT": str(media),
                "PERFWEB_VAR_DIR": str(media.parent / "var"),
                "CELERY_TASK_DEFAULT_QUEUE": "perfweb-load", "ALLOWED_HOSTS": "127.0.0.1",
                "DJANGO_SETTINGS_MODULE": "perfweb.settings",
                "PERFWEB_USER_QUOTA_BYTES": str(10 << 30)})
    return env


def _manage(env, *args) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                          check=True, capture_output=True, text=True).stdout


def _captures(folder: Path, n: int, size: int) -> list[Path]:
    """n distinct perf script texts of `size` bytes: the spinpool idle capture repeated,
    each file with its own comment line, so no two are the same upload."""
    base = (SPINPOOL / "1.0.0-idle.truth-script.txt").read_bytes()
    out = []
    for i in range(n):
        path = folder / f"load-{i:02d}.script.txt"
        with open(path, "wb") as f:
            f.write(f"# load test capture {i}\n".encode())
            written = 0
            while written < size:
                f.write(base)
                written += len(base)
        out.append(path)
    return out


def _peak_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    kids = [int(p) for p in out.split()]
    return [pid] + [q for k in kids for q in _tree(k)]


def _pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uploads", type=int, default=20)
    ap.add_argument("--upload-mb", type=int, default=25)
    ap.add_argument("--viewers", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=30)
    args = ap.parse_args()
    if not subprocess.run(["which", "wrk"], capture_output=True).returncode == 0:
        raise SystemExit("wrk is missing: apt-get install wrk")

    work = Path(tempfile.mkdtemp(prefix="perfweb-load-"))
    media = work / "media"
    media.mkdir()
    env = _env(media)
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DB],
                   check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DB], check=True)
    subprocess.run(["redis-cli", "-n", "3", "flushdb"], check=True, capture_output=True)
    _manage(env, "migrate", "-v", "0")
    demo = _manage(env, "load_demo")
    password = re.search(r"password: (\S+)", demo).group(1)
    key = _manage(env, "shell", "-c",
                  "from django.contrib.auth import get_user_model;"
                  "from perfweb.captures.api_tokens import create_token;"
                  "print(create_token(get_user_model().objects.get(username='demo'), 'load'))"
                  ).strip().splitlines()[-1]

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    logs = open(work / "services.log", "wb")
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "perfweb.wsgi", "--bind",
                            f"127.0.0.1:{port}", "--workers", "3", "--timeout", "120",
                            "--backlog", "2048", "--log-level", "warning"],
                           cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT)
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "perfweb", "worker",
                               "--concurrency=2", "--loglevel=WARNING", "-n", "load@%h"],
                              cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT)
    report = []
    ok = True
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/login/", timeout=2)
                break
            except OSError:
                time.sleep(0.5)

        # 1. uploads
        files = _captures(work, args.uploads, args.upload_mb << 20)
        t0 = time.perf_counter()
        procs = [(subprocess.Popen(
            [sys.executable, "-m", "perfweb_client", "upload", str(f), "--service", "load",
             "--build", f"b{i}", "--url", url, "-q"], cwd=ROOT,
            env=dict(env, PERFWEB_TOKEN=key), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True), time.perf_counter())
            for i, f in enumerate(files)]
        times, failures = [], []
        for p, started in procs:
            out, err = p.communicate()
            times.append(time.perf_counter() - started)
            if p.returncode != 0:
                failures.append(err.strip())
        wall = time.perf_counter() - t0
        ids = _manage(env, "shell", "-c",
                      "from perfweb.captures.models import Capture;"
                      "print(Capture.objects.filter(build__service__name='load').count())")
        uploaded = int(ids.strip().splitlines()[-1])
        t1 = time.perf_counter()
        while True:
            state = _manage(env, "shell", "-c",
                            "from perfweb.captures.models import Capture as C;"
                            "q=C.objects.filter(build__service__name='load');"
                            "print(q.filter(status='done').count(),"
                            "q.filter(status='failed').count())").split()[-2:]
            done, failed = int(state[0]), int(state[1])
            if done + failed >= uploaded or time.perf_counter() - t1 > 1800:
                break
            time.sleep(2)
        analysis_s = time.perf_counter() - t1
        ok &= not failures and uploaded == args.uploads and failed == 0 and \
            done == args.uploads
        report += [
            f"## {args.uploads} concurrent uploads of {args.upload_mb} MB captures",
            "", "| uploads | refused | p50 s | p99 s | all uploaded in s | analyzed | failed "
                "| all analyzed after s |", "|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {args.uploads} | {len(failures)} | {statistics.median(times):.2f} | "
            f"{_pct(times, 99):.2f} | {wall:.1f} | {done} | {failed} | {analysis_s:.0f} |", ""]
        if failures:
            report += ["Refused: " + "; ".join(failures[:5]), ""]

        # 2. viewers
        login = urllib.request.Request(url + "/login/")
        with urllib.request.urlopen(login) as r:
            cookie = r.headers.get("Set-Cookie", "").split(";")[0]
            csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', r.read()).group(1)
        body = f"username=demo&password={password}&csrfmiddlewaretoken={csrf.decode()}"
        req = urllib.request.Request(url + "/login/", data=body.encode(), headers={
            "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded",
            "Referer": url + "/login/"})

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        try:
            urllib.request.build_opener(NoRedirect).open(req)
        except urllib.error.HTTPError as e:
            session = [c.split(";")[0] for c in e.headers.get_all("Set-Cookie")
                       if c.startswith("sessionid=")][0]
        pk = _manage(env, "shell", "-c",
                     "from perfweb.captures.models import Capture;"
                     "print(Capture.objects.get(build__version='1.0.0', label='idle').pk)"
                     ).strip().splitlines()[-1]
        paths = [f"/captures/{pk}/", f"/captures/{pk}/data/flame.json",
                 f"/captures/{pk}/data/functions.json", f"/captures/{pk}/data/timeline.json"]
        lua = work / "viewers.lua"
        lua.write_text(
            'wrk.headers["Cookie"] = "%s"\nlocal paths = {%s}\nlocal i = 0\n'
            'request = function()\n  i = i + 1\n  return wrk.format("GET", paths[(i %% #paths) + 1])\nend\n'
            % (session, ", ".join(f'"{p}"' for p in paths)))
        threads = min(8, os.cpu_count() or 2)
        wrk = subprocess.run(["wrk", "-t", str(threads), "-c", str(args.viewers), "-d",
                              f"{args.seconds}s", "--timeout", "30s", "--latency", "-s",
                              str(lua), url], capture_output=True, text=True)
        out = wrk.stdout
        lat = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", out, re.M))
        rps = re.search(r"Requests/sec:\s+(\S+)", out).group(1)
        total = re.search(r"(\d+) requests in", out).group(1)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        errors = re.search(r"Socket errors: (.*)", out)
        ok &= non2xx is None and errors is None
        report += [f"## {args.viewers} concurrent viewers for {args.seconds} s (wrk)", "",
                   "| requests | req/s | p50 | p90 | p99 | non-2xx | socket errors |",
                   "|---:|---:|---:|---:|---:|---:|---:|",
                   f"| {total} | {rps} | {lat.get('50')} | {lat.get('90')} | {lat.get('99')} "
                   f"| {non2xx.group(1) if non2xx else 0} | "
                   f"{errors.group(1) if errors else 'none'} |", ""]

        # 3. memory
        web_peak = max(_peak_kib(p) for p in _tree(web.pid)[1:]) / 1024
        worker_peak = max(_peak_kib(p) for p in _tree(worker.pid)) / 1024
        report += ["## Peak memory (VmHWM)", "",
                   f"- gunicorn worker: {web_peak:.0f} MiB (largest of 3)",
                   f"- Celery worker process: {worker_peak:.0f} MiB (largest)", ""]
    finally:
        for p in (web, worker):
            p.send_signal(signal.SIGTERM)
        for p in (web, worker):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    text = "\n".join([f"# Load on loopback ({time.strftime('%Y-%m-%d')}, "
                      f"{os.cpu_count()} CPUs)", "", *report,
                      f"Result: {'PASS: nothing failed, nothing lost' if ok else 'FAIL'}", ""])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "load.md").write_text(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
