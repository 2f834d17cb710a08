"""The sandwich view in Chromium: the functions table sorted by its columns, and the
picked function's callers above and callees below, each as the server counts them."""
import pytest
from django.core.management import call_command

from perfweb.captures.models import Capture

pytestmark = pytest.mark.django_db(transaction=True)


def _data(page, capture, kind, query=""):
    r = page.answer(f"{page.base}/captures/{capture.pk}/data/{kind}.json{query}")
    assert r.ok, r.text()
    return r.json()


def _open(page, capture, query):
    """The page with its flame graph's data and the sandwich's table in (the page's own
    requests end before the test does: the database is emptied after it)."""
    page.goto(page.base + capture.get_absolute_url() + query)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    page.wait_for_selector("#sandwich-functions[data-rows]", state="attached", timeout=30000)


def _rows(page):
    return page.eval_on_selector_all("#sandwich-functions tbody tr", """rows => rows.map(r => ({
        f: Number(r.dataset.f), name: r.cells[4].textContent, self: Number(r.cells[0].textContent),
        total: Number(r.cells[2].textContent), selected: r.classList.contains("selected")}))""")


def _shown(page, fid):
    page.wait_for_selector(f"#sandwich-panel[data-function='{fid}']", state="attached",
                           timeout=30000)
    return (page.evaluate("window.perfweb.sandwichFrames('callers')"),
            page.evaluate("window.perfweb.sandwichFrames('callees')"))


def _click(page, canvas, frame):
    box = page.locator(f"#{canvas}").bounding_box()
    page.mouse.click(box["x"] + frame["x"], box["y"] + frame["y"])


def test_sandwich_table_sorts_and_shows_callers_and_callees(page):
    call_command("load_demo", "--username", "alice")
    busy = Capture.objects.get(build__version="1.0.0", label="busy")
    _open(page, busy, "?view=sandwich")
    assert page.is_visible("#sandwich-panel") and not page.is_visible("#flame-panel")
    assert page.text_content("#selection-total") == "973"
    # by self, descending: the server's table, row for row
    by_self = _data(page, busy, "functions")["functions"]
    rows = _rows(page)
    assert [r["f"] for r in rows] == [f["f"] for f in by_self[:len(rows)]]
    assert [r["self"] for r in rows] == sorted((r["self"] for r in rows), reverse=True)
    assert rows[0]["self"] == by_self[0]["s"] > by_self[-1]["s"]
    assert page.get_attribute("#sandwich-functions th[data-sort='self']", "aria-sort") == \
        "descending"
    assert page.is_hidden(".sandwich-graph >> nth=0")  # nothing picked yet

    # by total: a click on the column's title, kept in the URL
    page.click("#sandwich-functions th[data-sort='total']")
    page.wait_for_selector("#sandwich-functions[data-sort='total']", state="attached")
    assert "sort=total" in page.url
    by_total = _data(page, busy, "functions", "?sort=total")["functions"]
    rows = _rows(page)
    assert [r["f"] for r in rows] == [f["f"] for f in by_total[:len(rows)]]
    assert [r["total"] for r in rows] == sorted((r["total"] for r in rows), reverse=True)
    assert rows[0]["total"] == 973  # the threads' start, under every sample

    # pick a function: its callers' root and its callees' root are its total in the
    # server's functions table, and every sample through it came from some caller
    lock = next(f for f in by_total if f["n"] == "__GI___lll_lock_wait")
    page.click(f"#sandwich-functions tr[data-f='{lock['f']}']")
    callers, callees = _shown(page, lock["f"])
    (up,) = [r for r in callers if r["depth"] == 0]
    (down,) = [r for r in callees if r["depth"] == 0]
    assert up["name"] == down["name"] == "__GI___lll_lock_wait"
    assert up["total"] == down["total"] == lock["t"] > 0
    assert sum(r["total"] for r in callers if r["depth"] == 1) == lock["t"]
    assert sum(r["total"] for r in callees if r["depth"] == 1) + down["self"] == lock["t"]
    focused = _data(page, busy, "flame", f"?focus={lock['f']}")
    assert focused["callers"]["nodes"][0]["t"] == focused["callees"]["nodes"][0]["t"] == lock["t"]
    # (the tree's self is the leaf frame's: glibc's futex_wait is inlined in it, and the
    # table counts the symbol's, as perf does)
    assert down["self"] == focused["callees"]["nodes"][0]["s"] < lock["s"]
    assert f"focus={lock['f']}" in page.url and "view=sandwich" in page.url
    assert [r["f"] for r in _rows(page) if r["selected"]] == [lock["f"]]
    assert page.text_content("#sandwich-title").startswith(
        f"__GI___lll_lock_wait: total {lock['t']} ")

    # a reload shows the same function, in the same order
    page.reload()
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    callers, callees = _shown(page, lock["f"])
    assert [r["depth"] == 0 and r["total"] for r in callers][0] == lock["t"]
    assert page.get_attribute("#sandwich-functions", "data-sort") == "total"
    assert [r["f"] for r in _rows(page) if r["selected"]] == [lock["f"]]

    # a caller's frame is the next function to look at
    caller = max((r for r in callers if r["depth"] == 1 and r["f"] >= 0),
                 key=lambda r: r["total"])
    page.locator("#sandwich-callers").scroll_into_view_if_needed()
    _click(page, "sandwich-callers", caller)
    callers, callees = _shown(page, caller["f"])
    assert f"focus={caller['f']}" in page.url
    row = next(f for f in by_total if f["f"] == caller["f"])
    assert [r["total"] for r in callees if r["depth"] == 0] == [row["t"]]
    page.wait_for_selector("#hot-lines-box[data-state]", state="attached")
    # the other views hide it; the flame graph shows the same focus
    page.click("#view-tabs button[data-view='flame']")
    page.wait_for_selector("#sandwich-panel", state="hidden")
    assert page.is_visible("#flame-panel") and page.is_visible("#callers-box")
    page.click("#view-tabs button[data-view='topdown']")
    page.wait_for_selector("#calltree tbody tr", state="attached", timeout=30000)
    assert page.is_hidden("#sandwich-panel") and page.is_visible("#tree-panel")
    page.settle()
    assert not page.errors
