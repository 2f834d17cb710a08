"""What opening a capture page costs (issue 16), against gunicorn as deployed, with the
static files collectstatic wrote as the Dockerfile has it collect them: each file is
sent compressed (brotli, or gzip) under its hashed name; Plotly is fetched when the
timeline is shown, not with the page; the flame graph's request goes out first and
alone; and the flame graph's data, now read off the prepared tree saved with the
profile, has the numbers the stacks give (aggregate.tree) and perf's own."""
import gzip
import json
import re
import secrets
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import brotli
import plotly
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from analysis import explore
from analysis.aggregate import tree as calltree
from analysis.aggregate.selection import stack_weights
from perfweb.captures import services
from perfweb.captures.models import Capture, Membership, ShareLink
from perfweb.captures.services.profiles import stored_profile
from perfweb.captures.uploads import store_upload

from ..conftest import ROOT, SPINPOOL, service_env
from .conftest import settle

pytestmark = pytest.mark.django_db(transaction=True)

HASHED = re.compile(r"\.[0-9a-f]{12}\.(js|css)$")
PLOTLY = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@pytest.fixture
def deployed(server_factory, tmp_path):
    """(base URL, the folder collectstatic wrote) of gunicorn serving perfweb.wsgi."""
    static = tmp_path / "static"
    env = {"STATIC_ROOT": str(static), "PERFWEB_BROTLI_QUALITY": "4"}  # 11: 30 s
    r = subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
                       cwd=ROOT, env=service_env(env), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return server_factory(env), static


@pytest.fixture
def shared(member):
    """The demo's idle capture, analyzed with its symbols, and its share link's path."""
    team = Membership.objects.get(user=member).team
    c, _ = store_upload(member, team, {
        "service": "llm-api", "version": "1.0.0", "label": "idle", "symbols_for_build": True,
        "capture": SimpleUploadedFile("1.0.0-idle.perf.data",
                                      (SPINPOOL / "1.0.0-idle.perf.data").read_bytes()),
        "symbols": [SimpleUploadedFile(s.name, s.read_bytes()) for s in
                    (SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "1.0.0-idle.perf.data.tar.bz2")]})
    services.run_analysis(c.pk)
    c = Capture.objects.get(pk=c.pk)
    assert c.status == "done", c.error
    link = ShareLink.objects.create(capture=c, token=secrets.token_urlsafe(24))
    return c, f"/s/{link.url_token}/"


def _get(url, encoding=None):
    headers = {"Accept-Encoding": encoding} if encoding else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                timeout=60) as r:
        return r.headers, r.read()


def _static_urls(html: str) -> list[str]:
    return sorted(set(re.findall(r'(?:href|src|data-plotly-url)="(/static/[^"]+)"', html)))


def test_static_files_are_served_compressed_under_hashed_names(deployed, shared):
    base, static = deployed
    _, page = _get(base + shared[1])
    urls = _static_urls(page.decode())
    names = [u.rsplit("/", 1)[1] for u in urls]
    assert any(n.startswith("main.") for n in names) and \
        any(n.startswith("plotly.min.") for n in names) and \
        any(n.startswith("app.") for n in names), urls
    # the module's imports, by the names it asks for
    _, main = _get(base + next(u for u in urls if "/main." in u))
    imports = re.findall(r'from "\./([^"]+)"', main.decode())
    assert len(imports) >= 8
    urls += [next(u for u in urls if "/main." in u).rsplit("/", 1)[0] + "/" + i
             for i in imports]
    for url in urls:
        assert HASHED.search(url), url
        file = static / url.removeprefix("/static/")
        collected = file.read_bytes()
        assert file.stat().st_mode & 0o444 == 0o444  # the image's server user reads it
        headers, body = _get(base + url, "br")
        assert headers["Content-Encoding"] == "br", url
        assert brotli.decompress(body) == collected
        assert "immutable" in headers["Cache-Control"] and len(body) < len(collected)
        headers, body = _get(base + url, "gzip")
        assert headers["Content-Encoding"] == "gzip" and gzip.decompress(body) == collected
        headers, body = _get(base + url, "gzip, deflate, br, zstd")  # Chromium's
        assert headers["Content-Encoding"] in ("br", "gzip")  # whichever is smaller
        headers, body = _get(base + url)
        assert headers["Content-Encoding"] is None and body == collected
    plotly_url = next(u for u in urls if "/plotly.min." in u)
    assert (static / plotly_url.removeprefix("/static/")).read_bytes() == PLOTLY.read_bytes()
    headers, body = _get(base + plotly_url, "br")
    assert len(body) < 0.3 * PLOTLY.stat().st_size  # 4.8 MB: 1.3 MB at level 4


def test_plotly_waits_for_the_timeline_and_the_flame_graph_goes_first(deployed, shared,
                                                                       browser):
    base, _ = deployed
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    events = []  # in the order the browser saw them
    page.on("request", lambda r: events.append(("asked", r.url, None)))
    page.on("response", lambda r: events.append(("answered", r.url, r.all_headers())))
    page.goto(base + shared[1])
    page.wait_for_selector("#explorer[data-flame-total]", state="attached")
    page.wait_for_selector("#functions tbody tr")
    settle(page)
    page.wait_for_timeout(500)
    assert page.text_content("#selection-total") == "975"
    # the flame graph's data alone until its answer was in, the others after it (as
    # the page's own clock has the requests)
    data = page.evaluate("""() => performance.getEntriesByType("resource")
        .filter((e) => e.name.includes("/data/"))
        .map((e) => [e.name.split("/data/")[1].split("?")[0], e.startTime, e.responseEnd])""")
    (flame,) = [d for d in data if d[0] == "flame.json"]
    others = [d for d in data if d is not flame]
    assert {"functions.json", "threads.json"} <= {d[0] for d in others}
    assert all(start >= flame[2] for _, start, _ in others), data
    assert "timeline.json" not in {d[0] for d in data}
    assert not [u for _, u, _ in events if "/plotly.min." in u]
    assert page.evaluate("typeof window.Plotly") == "undefined"

    page.locator("#timeline").scroll_into_view_if_needed()
    page.wait_for_selector("#timeline .main-svg")
    page.wait_for_selector("#heatmap .main-svg")
    fetched = [(u, h) for what, u, h in events if what == "answered" and "/plotly.min." in u]
    assert len(fetched) == 1 and fetched[0][1]["content-encoding"] in ("br", "gzip")
    assert HASHED.search(urllib.parse.urlsplit(fetched[0][0]).path)
    assert [u for _, u, _ in events if "/data/timeline.json" in u]
    context.close()


def _reference(profile, q: explore.Query):
    """The flame graph's total, path and rows as aggregate.tree grows them from the
    stacks (what the endpoint answered before the prepared tree)."""
    sel = explore.selection(profile, q)
    p = explore.viewed(profile, q)
    w = stack_weights(p, sel)
    grow = calltree.bottom_up if q.invert else calltree.top_down
    tree, root = grow(p, w, q.root, limit_of=explore._merge_limit), q.root
    if tree is None:
        tree, root = grow(p, w, limit_of=explore._merge_limit), ()
    rows = [(r.key if r.key >= 0 else -1, r.self[0], r.total[0], r.parent) for r in tree.rows]
    return sum(w.values()), list(zip(root, tree.path)), rows


def test_the_flame_graph_data_has_the_same_numbers(deployed, shared):
    base, _ = deployed
    capture, path = shared
    profile = stored_profile(capture)

    def flame(**params):
        return json.loads(_get(f"{base}{path}data/flame.json?"
                               f"{urllib.parse.urlencode(params)}")[1])

    whole = flame()
    assert whole["total"] == 975
    names = {n["n"]: n for n in whole["tree"]["nodes"]}
    loop = names["qualla::ThreadPool::loop"]
    assert loop["t"] == 52  # perf report's total for it
    chain = []
    at = whole["tree"]["nodes"].index(loop)
    while at > 0:
        chain.append(whole["tree"]["nodes"][at]["f"])
        at = whole["tree"]["nodes"][at]["p"]
    chain.reverse()
    leaves = [n for n in flame(invert=1)["tree"]["nodes"] if n["p"] == 0]
    assert sum(n["t"] for n in leaves) == 975  # each sample has one leaf
    threads = explore.threads(profile, explore.Query())["threads"]
    queries = [
        ({}, explore.Query()),
        ({"invert": 1}, explore.Query(invert=True)),
        ({"root": ",".join(map(str, chain))}, explore.Query(root=tuple(chain))),
        ({"root": ",".join(map(str, chain[:1]))}, explore.Query(root=tuple(chain[:1]))),
        ({"root": ",".join(map(str, chain + chain))}, explore.Query(root=tuple(chain + chain))),
        ({"root": chain[0], "invert": 1}, explore.Query(root=(chain[0],), invert=True)),
        ({"tids": threads[0]["tid"]}, explore.Query(tids=frozenset({threads[0]["tid"]}))),
        ({"start": 0.5, "end": 1.5, "root": chain[0]},
         explore.Query(start=0.5, end=1.5, root=(chain[0],))),
        ({"search": "futex"}, explore.Query(search="futex")),
    ]
    for params, q in queries:
        got = flame(**params)
        total, crumbs, rows = _reference(profile, q)
        assert got["total"] == total, params
        assert [(c["f"], c["t"]) for c in got["path"]] == crumbs, params
        assert [(n["f"], n["s"], n["t"], n["p"]) for n in got["tree"]["nodes"]] == rows, params
    assert flame(search="futex")["search"]["samples"] == 454  # as the page shows it
