#!/usr/bin/env python3
"""The README's screenshots of the capture page, taken again (`make screenshots`).

Starts a private instance of the app as `make run` sets it up (SQLite and files under a
temporary folder, `manage.py load_demo`: the spinpool demo, analyzed at once), serves it
with gunicorn as deployed (the static files collected), signs in as the demo user in
Chromium (/usr/bin/chromium, 1280 px wide, device scale 1) and saves, on the demo's
1.0.0 busy capture (the thread pool spinning on a mutex):
  - capture-top.png: the page from its title down to the flame graph (the diagnosis),
  - stack-chart.png: the stack chart card,
  - sandwich.png: the sandwich view with the futex system call picked.
Each is taken once the page's own data hooks say its data is in and drawn
(`#explorer[data-flame-total]`, `#stack-canvas[data-boxes]`,
`#sandwich-panel[data-function]`), with the pointer off the canvases (no tooltip), then
rewritten with a palette (palette.py) to keep the repository small.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import palette  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--font-render-hinting=none"]
WIDTH = 1280
#: the function the sandwich view shows: the futex system call, entered both to wait for
#: the pool's mutex and to wake its waiters (the diagnosis's "futex 34.4%")
PICK = "__x64_sys_futex"
LIMIT = 250_000  # bytes a picture may take in the repository

FIND_CAPTURE = """
from perfweb.captures.models import Capture
print(Capture.objects.get(build__version="1.0.0", label="busy").pk)
"""


def start(port: int) -> tuple[subprocess.Popen, str, str, int, Path]:
    """The app on `port`, the demo loaded: (server, user, password, capture id, folder)."""
    var = Path(tempfile.mkdtemp(prefix="perfweb-shots-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(PERFWEB_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="perfweb.settings",
               STATIC_ROOT=str(var / "static"))
    py = sys.executable

    def manage(*args: str) -> str:
        return subprocess.run([py, "manage.py", *args], cwd=ROOT, env=env, check=True,
                              capture_output=True, text=True).stdout

    manage("migrate", "--noinput", "-v0")
    loaded = manage("load_demo")  # a new folder: the user is new, its password printed
    user, password = re.search(r"demo user: (\S+) / password: (\S+)", loaded).groups()
    pk = int(manage("shell", "--no-imports", "-c", FIND_CAPTURE).split()[-1])
    manage("collectstatic", "--noinput", "-v0")
    server = subprocess.Popen([py, "-m", "gunicorn", "perfweb.wsgi", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return server, user, password, pk, var


def settle(page) -> None:
    """The pointer away from every canvas (no tooltip), fonts in, a frame painted."""
    page.mouse.move(0, 0)
    page.evaluate("document.fonts.ready")
    page.wait_for_function("() => [...document.querySelectorAll('.tooltip')]"
                           ".every((t) => t.hidden)")
    page.evaluate("new Promise((ok) => requestAnimationFrame(() => "
                  "requestAnimationFrame(ok)))")


def shoot(base: str, user: str, password: str, pk: int) -> dict[str, bytes]:
    from playwright.sync_api import sync_playwright
    shots = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": WIDTH, "height": 900},
                                      device_scale_factor=1)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/login/")
        page.fill("#id_username", user)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")
        url = f"{base}/captures/{pk}/"

        # (a) the title, the diagnosis and the rest of the page's top, down to the flame
        # graph and its hint
        page.goto(url)
        page.wait_for_selector("#explorer[data-flame-total]", state="attached",
                               timeout=60000)
        page.wait_for_load_state("networkidle")  # top functions, threads: drawn below
        settle(page)
        y0, y1 = page.evaluate("""() => {
            const at = (s) => document.querySelector(s).getBoundingClientRect();
            return [at("h1").top + scrollY - 12, at("#flame-panel").bottom + scrollY + 16];
        }""")
        y0 = max(0, y0)
        shots["capture-top.png"] = page.screenshot(
            full_page=True, animations="disabled",
            clip={"x": 0, "y": y0, "width": WIDTH, "height": y1 - y0})

        # (b) the stack chart: below the timeline, which draws (and grows) when it comes
        # near the screen; the chart loads after the threads' list
        page.locator("#timeline").scroll_into_view_if_needed()
        page.wait_for_selector("#timeline .nsewdrag", state="attached", timeout=60000)
        page.wait_for_selector("#threads label", state="attached", timeout=60000)
        page.locator("#stack-chart-box").scroll_into_view_if_needed()
        page.wait_for_selector("#stack-canvas[data-boxes]", state="attached", timeout=60000)
        page.wait_for_load_state("networkidle")
        settle(page)
        shots["stack-chart.png"] = page.locator("#stack-chart-box").screenshot(
            animations="disabled")

        # (c) the sandwich view, the futex call picked from its table
        page.goto(f"{url}?view=sandwich&sort=self")
        page.wait_for_selector("#explorer[data-flame-total]", state="attached",
                               timeout=60000)
        page.wait_for_selector("#sandwich-functions[data-rows]", state="attached",
                               timeout=60000)
        row = page.locator("#sandwich-functions tbody tr").filter(
            has=page.locator("td.fn", has_text=re.compile(f"^{re.escape(PICK)}$"))).first
        fid = row.get_attribute("data-f")
        row.click()
        page.wait_for_selector(f"#sandwich-panel[data-function='{fid}']", state="attached",
                               timeout=60000)
        page.wait_for_load_state("networkidle")  # the hot lines follow the pick
        settle(page)
        shots["sandwich.png"] = page.locator("#explorer").screenshot(animations="disabled")
        browser.close()
    if errors:
        raise SystemExit(f"the page raised: {errors}")
    return shots


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8078)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    server, user, password, pk, var = start(args.port)
    try:
        shots = shoot(f"http://127.0.0.1:{args.port}", user, password, pk)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(var, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    too_big = False
    for name, png in shots.items():
        small = palette.smaller(png)
        (args.out / name).write_bytes(small)
        too_big |= len(small) > LIMIT
        print(f"{args.out / name}: {len(small) / 1e3:.0f} kB ({len(png) / 1e3:.0f} kB as "
              f"Chromium wrote it){' over the limit' if len(small) > LIMIT else ''}")
    return 1 if too_big else 0


if __name__ == "__main__":
    sys.exit(main())
