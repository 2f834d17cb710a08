"""A function's hot lines and full signature on the capture page, in Chromium: the
`--call-graph dwarf` pool capture uploaded with its binaries and debug files (analyzed by
a real worker), the top functions' signatures and source files, the Hot lines card of
the focused function, and names, paths and source text that arrive as text, not HTML."""
import json
import re

import pytest

from ..test_dwarf_capture import FILES, POOL, _source_archive
from .test_capture_page import EVIL, _upload_in_browser, upload_evil_capture

pytestmark = pytest.mark.django_db(transaction=True)

RECORD_LESS = "work::record_less(work::Record const&, work::Record const&)"
NO_LINES = "No source lines: upload the debug files (or the binaries built with -g)"


def _lines_requests(page):
    seen = []
    page.on("request", lambda r: seen.append(r.url) if "/data/lines.json" in r.url else None)
    return seen


def _function_row(page, name):
    return page.locator("#functions tbody tr").filter(
        has=page.locator("td.fn span.name", has_text=re.compile(f"^{re.escape(name)}$")))


def _hot_rows(page):
    rows = page.locator("#hot-lines tbody tr")
    out = []
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td")
        out.append({"file": cells.nth(0).locator(".file").text_content(),
                    "path": cells.nth(0).locator(".file").get_attribute("title"),
                    "line": int(cells.nth(0).locator(".line").text_content().lstrip(":")),
                    "s": cells.nth(1).text_content(), "sp": cells.nth(2).text_content(),
                    "t": cells.nth(3).text_content(), "tp": cells.nth(4).text_content()})
    return out


def test_hot_lines_and_signatures_of_the_dwarf_capture(page, worker_factory, tmp_path):
    worker_factory()
    _upload_in_browser(page, POOL / "dwarf8k.perf.data", FILES, version="1.0", label="load",
                       sources=[_source_archive(tmp_path)])
    assert page.text_content("#selection-total") == "441"
    page.wait_for_selector("#functions tbody tr")
    assert page.is_hidden("#hot-lines-box")  # nothing focused yet
    asked = _lines_requests(page)

    # the top functions: short names, the signature as the cell's title, the source file
    cell = _function_row(page, "work::record_less").locator("td.fn")
    assert cell.get_attribute("title") == RECORD_LESS
    src = cell.locator("small.src")
    assert src.text_content() == "libwork.cpp"
    assert src.get_attribute("title").endswith("cpp-pool/libwork.cpp")

    # focus the inlined `mix` from its row: the card lists its lines, hottest first
    _function_row(page, "mix").click()
    page.wait_for_selector("#hot-lines-box[data-state=lines]")
    assert "focus=" in page.url
    assert page.text_content("#hot-lines-title") == "mix"
    rows = _hot_rows(page)
    assert rows and all(r["file"] == "libwork.cpp" and r["path"].endswith("libwork.cpp")
                        and 16 <= r["line"] <= 20 for r in rows), rows
    assert sum(int(r["s"]) for r in rows) == 68
    selves = [int(r["s"]) for r in rows]
    assert selves == sorted(selves, reverse=True)
    for r in rows:  # percentages of the selection's 441 samples, as the other tables
        assert r["sp"] == f"{100 * int(r['s']) / 441:.2f}"
        assert r["tp"] == f"{100 * int(r['t']) / 441:.2f}"
    page.wait_for_timeout(300)
    assert len(asked) == 1, asked  # one request for one focus change

    # the answer as the page got it: the build's source archive gives the listing
    focus = re.search(r"focus=(\d+)", page.url).group(1)
    url = page.get_attribute("#explorer", "data-lines-url")
    data = page.answer(f"{page.base}{url}?focus={focus}").json()  # not the page's
    assert sum(x["s"] for x in data["lines"]) == 68
    assert data["source"]["file"] == "cpp-pool/libwork.cpp"
    _check_source(page, data["source"])

    # focus record_less from its row: its callee graph's root carries the signature
    _function_row(page, "work::record_less").click()
    page.wait_for_function(
        "() => document.getElementById('hot-lines-title').textContent === 'work::record_less'")
    page.wait_for_selector("#hot-lines-box[data-state=lines]")
    assert page.text_content("#hot-lines-signature") == RECORD_LESS
    assert len(asked) == 2
    page.wait_for_selector("#callers-box:not([hidden])")
    # the focused graph is drawn after its data arrives (under load, after this line)
    page.wait_for_function("() => window.perfweb.frameCenter('work::record_less')")
    spot = page.evaluate("() => window.perfweb.frameCenter('work::record_less')")
    assert spot, "work::record_less is not drawn"
    canvas = page.locator("#flame-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    # near the right edge: the tooltip stays inside the graph and wraps the long name
    page.mouse.move(box["x"] + box["width"] - 20, box["y"] + spot["y"])
    page.wait_for_selector("#flame-tooltip:not([hidden])")
    assert page.text_content("#flame-tooltip .signature") == RECORD_LESS
    assert page.text_content("#flame-tooltip strong") == "work::record_less"
    assert page.text_content("#flame-tooltip .src").endswith("cpp-pool/libwork.cpp")
    # all of it in the window, none of it clipped by the short graph's box
    shown = page.evaluate("""() => {
        const t = document.getElementById("flame-tooltip").getBoundingClientRect();
        const s = getComputedStyle(document.getElementById("flame-tooltip"));
        return {left: t.left, right: t.right, top: t.top, bottom: t.bottom,
                width: innerWidth, height: innerHeight, position: s.position};
    }""")
    assert shown["position"] == "fixed", shown
    assert 0 <= shown["left"] and shown["right"] <= shown["width"], shown
    assert 0 <= shown["top"] and shown["bottom"] <= shown["height"], shown
    assert page.evaluate("""() => {
        const t = document.getElementById("flame-tooltip");
        return t.scrollWidth <= t.clientWidth + 1;
    }""")

    # the call tree's rows carry it too
    page.click("#view-tabs button[data-view=topdown]")
    page.fill("#calltree-filter", "record_less")
    page.wait_for_selector(f"#calltree td.fn span[title^='{RECORD_LESS}']")

    # Escape drops the focus, and the card goes
    page.click("#view-tabs button[data-view=flame]")
    page.keyboard.press("Escape")
    page.wait_for_selector("#hot-lines-box", state="hidden")
    assert "focus=" not in page.url

    # a reload with the focus in the URL shows the card again
    _function_row(page, "mix").click()
    page.wait_for_selector("#hot-lines-box[data-state=lines]")
    page.reload()
    page.wait_for_selector("#hot-lines-box[data-state=lines]")
    assert sum(int(r["s"]) for r in _hot_rows(page)) == 68
    assert page.errors == [] and page.dialogs == []


def _check_source(page, source):
    page.wait_for_selector("#hot-source:not([hidden])")
    assert page.text_content("#hot-source .source-head") == \
        f"{source['file']} from {source['archive']}"
    rows = page.locator("#hot-source .source-row")
    assert rows.count() == len(source["rows"])
    for i, r in enumerate(source["rows"]):
        row = rows.nth(i)
        assert int(row.locator(".source-no").text_content()) == r["line"]
        assert row.locator(".source-text").text_content() == r["text"]
        assert ("hot" in row.get_attribute("class").split()) == (r["s"] > 0)
    assert page.evaluate("""() => getComputedStyle(
        document.querySelector("#hot-source .source-text")).whiteSpace""") == "pre"


def test_names_paths_and_source_text_are_text_not_html(page, worker_factory, tmp_path):
    """A capture without debug info says where the lines would come from; names, file
    paths and source text with HTML in them (from uploaded files) stay text: the source
    listing is checked here with an answer that carries one."""
    evil = EVIL
    upload_evil_capture(page, worker_factory, tmp_path)
    _function_row(page, evil).click()
    page.wait_for_selector("#hot-lines-box[data-state=empty]")
    assert page.text_content("#hot-lines-title") == evil
    assert page.text_content("#hot-lines-status").startswith(NO_LINES)
    assert page.is_hidden("#hot-lines") and page.is_hidden("#hot-source")

    # the same function, answered with lines and a source listing full of markup
    path = f"/src/{evil}/pool.cpp"
    text = [f"int f() {{ return 1; }} // {evil}", "  <script>alert(2)</script>", "}"]

    def answer(route):
        body = json.loads(route.fetch().text())
        body["lines"] = [{"file": path, "line": 11, "s": 20, "t": 25},
                         {"file": path, "line": 10, "s": 5, "t": 30}]
        body["source"] = {"file": path, "archive": f"{evil}.tar.gz",
                          "rows": [{"line": 10 + i, "text": t, "s": [5, 20, 0][i],
                                    "t": [30, 25, 0][i]} for i, t in enumerate(text)]}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(re.compile(r".*/data/lines\.json.*"), answer)
    page.reload()
    page.wait_for_selector("#hot-lines-box[data-state=lines]")
    rows = _hot_rows(page)
    assert [(r["file"], r["path"], r["line"], r["s"]) for r in rows] == \
        [("pool.cpp", path, 11, "20"), ("pool.cpp", path, 10, "5")]
    _check_source(page, {"file": path, "archive": f"{evil}.tar.gz",
                         "rows": [{"line": 10 + i, "text": t, "s": [5, 20, 0][i]}
                                  for i, t in enumerate(text)]})
    # the hottest line is shaded darkest
    heat = page.evaluate("""() => [...document.querySelectorAll("#hot-source .source-row")]
        .map((r) => getComputedStyle(r).backgroundColor)""")
    alpha = [float(re.findall(r"[\d.]+", c)[3]) if c.startswith("rgba") else
             (1.0 if c != "rgba(0, 0, 0, 0)" else 0.0) for c in heat]
    assert alpha[1] > alpha[0] > alpha[2] == 0.0, heat
    page.click("#hot-lines tbody tr >> nth=0")
    assert page.get_attribute("#hot-source .source-row[data-line='11']", "class") == \
        "source-row hot picked"
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:text('alert')") \
        .count() == 0

    # a refused archive: its sentence (which names the uploaded archive) in place of the
    # source, as text
    note = f"Source archive {evil}.tar.bz2 refused: it expands more than 200x its size."

    def refused(route):
        body = json.loads(route.fetch().text())
        body["lines"] = [{"file": path, "line": 11, "s": 20, "t": 25}]
        body["source"], body["source_note"] = None, note
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.unroute(re.compile(r".*/data/lines\.json.*"))
    page.route(re.compile(r".*/data/lines\.json.*"), refused)
    page.reload()
    page.wait_for_selector("#hot-source:not([hidden]) .source-note")
    assert page.text_content("#hot-source .source-note") == note
    assert page.locator("#hot-source .source-row").count() == 0
    assert page.locator("img[src=x]").count() == 0
    page.wait_for_timeout(300)
    assert page.dialogs == [] and page.errors == []
