"""Browser tests: Playwright driving Debian's Chromium (/usr/bin/chromium; no browser is
downloaded) against the live Django server, a real Celery worker, PostgreSQL and Redis."""
import os
import time

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("Chromium is missing: apt-get install chromium (.ci/run does it)")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # live_server + sync API
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


# What a test asks the server from the page goes through `answer(url)`: fetch, asked
# again while the server says its compute slots are all taken (429 with a Retry-After
# of a few seconds), as the page's own requests are (static/js/http.js). The page's
# requests and the test's share the host's slots; a bare fetch got that 429.
ANSWER = """window.answer = async (url) => {
  for (let attempt = 1; ; attempt++) {
    const r = await fetch(url);
    const wait = Number(r.headers.get("Retry-After"));
    if (r.status !== 429 || !(wait > 0 && wait <= 5) || attempt >= 12) return r;
    await new Promise((done) => setTimeout(done, wait * 1000));
  }
};"""


def _answer(page, url: str):
    """What `window.answer` is to the page's fetches, for the test's own requests made
    through Playwright (page.request shares the page's session): asked again while the
    server says its compute slots are all taken."""
    for attempt in range(1, 13):
        r = page.request.get(url)
        try:
            wait = float(r.headers.get("retry-after", ""))
        except ValueError:
            wait = 0
        if r.status != 429 or not 0 < wait <= 5 or attempt == 12:
            return r
        time.sleep(wait)


def settle(page, timeout: float = 30000) -> None:
    """Until the page waits for no answer: the network idle, and no ask of the page's
    queued, in flight or sleeping before it asks again after a "busy" 429 (http.js
    counts them on <html data-asking>); a network-idle wait alone passed during that
    sleep, and a test then read a view whose answer had not come."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => (document.documentElement.dataset.asking || '0') === '0'",
                           timeout=timeout)
    page.wait_for_load_state("networkidle")


@pytest.fixture
def page(browser, live_server, member):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(ANSWER)
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.base = live_server.url
    page.answer = lambda url: _answer(page, url)
    page.settle = lambda: settle(page)
    yield page
    context.close()
