"""Back and Forward across issue 17's features working together (Chromium, the demo's
spinpool 1.0.0 busy capture, 973 samples): a transform, a sandwich pick and a time range
are history entries, and Back redraws every view with the state before, as the server
counts it; the stack chart follows the transforms and the range like the flame graph."""
import time

import pytest
from django.core.management import call_command

from perfweb.captures.models import Capture

from .test_event_picker import _perf, events  # noqa: F401 (events: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def _data(page, capture, kind, query=""):
    r = page.answer(f"{page.base}/captures/{capture.pk}/data/{kind}.json{query}")
    assert r.ok, r.text()
    return r.json()


def _busy(page):
    call_command("load_demo", "--username", "alice")
    return Capture.objects.get(build__version="1.0.0", label="busy")


def _open(page, capture, query=""):
    page.goto(page.base + capture.get_absolute_url() + query)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    page.settle()


def _total(page, n):
    page.wait_for_function("(n) => document.getElementById('explorer').dataset.flameTotal"
                           " === String(n) && document.getElementById('selection-total')"
                           ".textContent === String(n)", arg=n, timeout=30000)


def _drop_held(page, expect: int) -> list:
    """Drop the focused function from the toolbar with the answers of its flame and
    functions requests held (returned, to be released later), once `expect` of them are
    asked (a page asks two at once; a held one gives its turn up after 2 s: http.js)."""
    held = []
    page.route(lambda url: "tf=" in url and ("/flame.json" in url or "/functions.json" in url),
               lambda route: held.append(route))
    page.click("#transform-tools button[data-kind='df']")
    page.wait_for_function("() => location.search.includes('tf=')")
    end = time.monotonic() + 15
    while len(held) < expect and time.monotonic() < end:
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)  # (and no more than those)
    return held


def _release(page, held: list) -> None:
    """Let the held answers through and wait until the page has handled them (the stack
    chart may ask its own, not held, when it is in view). The route goes too: an answer
    asked again later would be held for ever, and the page never settle."""
    n = len(held)
    for route in held[:n]:
        route.continue_()
    page.unroute_all()
    for route in held[n:]:  # (asked again in between)
        route.continue_()
    page.wait_for_function("""(n) => performance.getEntriesByType('resource').filter(
        (e) => e.name.includes('tf=') && /[/](flame|functions)[.]json/.test(e.name)
               && e.responseEnd > 0).length >= n""", arg=len(held))
    page.settle()
    page.wait_for_timeout(300)  # (their answers parsed and handled)


def _chart(page):
    """The stack chart scrolled to and drawn; its status line."""
    page.locator("#stack-chart-box").scroll_into_view_if_needed()
    page.wait_for_selector("#stack-canvas[data-boxes]", state="attached", timeout=30000)
    page.settle()


def _painted_names(page, chart):
    """Every function name the stack chart paints at each exact box start of `chart`."""
    asks = [[ln["tid"], s + 1e-7] for ln in chart["lanes"]
            for s, d in zip(ln["boxes"]["s"], ln["boxes"]["d"]) if d == 0]
    page.settle()  # (the chart's answer for this view drawn: data-boxes is set by it)
    page.wait_for_selector("#stack-canvas[data-boxes]", state="attached", timeout=30000)
    stacks = page.evaluate("(asks) => asks.map(([tid, t]) => window.perfweb.stackAt(tid, t))",
                           asks)
    return {n for s in stacks for n in s}


def test_back_and_forward_restore_a_transform_in_every_view(page):
    busy = _busy(page)
    table = {f["n"]: f for f in _data(page, busy, "functions")["functions"]}
    syscall = table["do_syscall_64"]
    assert (syscall["s"], syscall["t"]) == (133, 473)
    _open(page, busy, f"?focus={syscall['f']}")
    _chart(page)
    page.click("#transform-tools button[data-kind='df']")
    tf = f"df-{syscall['f']}"
    page.wait_for_selector(f"#transforms[data-transforms='{tf}']", state="attached")
    _total(page, 973 - 473)
    # the stack chart is of the transformed stacks too: the server's lanes count the
    # 500 samples left, and no painted stack holds the dropped function
    chart = _data(page, busy, "stacks", f"?tf={tf}&px=0")
    assert sum(ln["samples"] for ln in chart["lanes"]) == 500
    page.settle()
    names = _painted_names(page, chart)
    assert names and "do_syscall_64" not in names

    page.go_back()
    page.wait_for_selector("#transforms[data-transforms='']", state="attached")
    page.wait_for_selector("#callers-box:not([hidden])")  # the focus before the drop
    assert page.text_content("#focus-label") == "do_syscall_64"
    assert "tf=" not in page.url
    page.wait_for_function("() => document.querySelector('#functions tbody')"
                           ".textContent.includes('do_syscall_64')")
    page.settle()
    whole = _data(page, busy, "stacks", "?px=0")
    assert sum(ln["samples"] for ln in whole["lanes"]) == 973
    assert "do_syscall_64" in _painted_names(page, whole)

    page.go_forward()
    page.wait_for_selector(f"#transforms[data-transforms='{tf}']", state="attached")
    _total(page, 500)
    page.settle()
    assert "do_syscall_64" not in _painted_names(page, chart)
    assert not page.errors


def test_back_restores_the_sandwich_pick(page):
    busy = _busy(page)
    rows = _data(page, busy, "functions")["functions"]
    first, second = rows[0], rows[1]
    _open(page, busy, "?view=sandwich")
    page.wait_for_selector("#sandwich-functions[data-rows]", state="attached", timeout=30000)
    for f in (first, second):
        page.click(f"#sandwich-functions tbody tr[data-f='{f['f']}']")
        page.wait_for_selector(f"#sandwich-panel[data-function='{f['f']}']",
                               state="attached", timeout=30000)
    page.go_back()
    page.wait_for_selector(f"#sandwich-panel[data-function='{first['f']}']",
                           state="attached", timeout=30000)
    assert page.get_attribute("#sandwich-panel", "data-total") == str(first["t"])
    assert page.get_attribute(f"#sandwich-functions tbody tr[data-f='{first['f']}']",
                              "aria-selected") == "true"
    page.settle()
    assert not page.errors


def test_back_restores_the_time_range_in_the_stack_chart(page):
    busy = _busy(page)
    ranged = _data(page, busy, "flame", "?start=1&end=2")["total"]
    assert 0 < ranged < 973
    _open(page, busy, "?start=1.000&end=2.000")
    _total(page, ranged)
    _chart(page)
    assert page.evaluate("window.perfweb.stackView()") == [1, 2]
    page.click("#range-clear")
    _total(page, 973)
    page.wait_for_function("() => (v => v !== null && v[1] - v[0] > 4)"
                           "(window.perfweb.stackView())")
    page.go_back()
    _total(page, ranged)
    page.wait_for_function("() => JSON.stringify(window.perfweb.stackView()) === '[1,2]'",
                           timeout=10000)
    page.settle()
    assert not page.errors


def test_back_restores_the_event_picked(page, events):
    """The two-event capture of test_event_picker: Back from the other event shows the
    default one's perf report count again, in the picker and the flame graph."""
    reported, _ = _perf()
    _open(page, events)
    options = page.evaluate("""() => [...document.querySelectorAll('#event-picker option')]
        .map((o) => [o.value, o.textContent, o.selected])""")
    [(shown, text)] = [(v, t) for v, t, on in options if on]
    default = next(e for e in reported if text.startswith(e))
    [(value, other)] = [(v, e) for v, t, _ in options for e in reported
                        if t.startswith(e) and e != default]
    _total(page, reported[default])
    page.locator("#event-picker").select_option(value)
    _total(page, reported[other])
    page.go_back()
    _total(page, reported[default])
    assert page.input_value("#event-picker") == shown and "event=" not in page.url
    page.go_forward()
    _total(page, reported[other])
    assert page.input_value("#event-picker") == value
    page.settle()
    assert not page.errors


def test_a_slow_answer_does_not_draw_over_the_view_back_returned_to(page):
    """The drop's flame and functions answers held until Back has drawn the view before
    it: when they come, the page stays on that view (973 samples, no chip)."""
    busy = _busy(page)
    syscall = next(f for f in _data(page, busy, "functions")["functions"]
                   if f["n"] == "do_syscall_64")
    _open(page, busy, f"?focus={syscall['f']}")
    held = _drop_held(page, 2)
    assert len(held) == 2  # the flame graph's and the top functions'
    page.go_back()
    page.wait_for_function("() => !location.search.includes('tf=')")
    page.wait_for_load_state("networkidle")  # (not settle: the held answers are awaited)
    _total(page, 973)
    _release(page, held)
    assert page.text_content("#selection-total") == "973"
    assert page.get_attribute("#transforms", "data-transforms") == ""
    assert "do_syscall_64" in page.text_content("#functions tbody")
    assert not page.errors


def test_a_slow_call_tree_answer_does_not_draw_over_the_view_back_returned_to(page):
    """The call tree (top-down view) of a drop held until Back has drawn the tree before
    it: when it comes, the tree keeps the 973 samples, not the drop's 500."""
    busy = _busy(page)
    syscall = next(f for f in _data(page, busy, "functions")["functions"]
                   if f["n"] == "do_syscall_64")
    _open(page, busy, f"?view=topdown&focus={syscall['f']}")
    first = "#calltree tbody tr:first-child td:nth-child(4)"  # the root's total
    page.wait_for_function(f"() => document.querySelector('{first}')?.textContent === '973'")
    held = _drop_held(page, 3)
    assert len(held) == 3  # the flame graph's, the call tree's and the top functions'
    page.go_back()
    page.wait_for_function("() => !location.search.includes('tf=')")
    page.wait_for_load_state("networkidle")  # (not settle: the held answers are awaited)
    _total(page, 973)
    page.wait_for_function(f"() => document.querySelector('{first}')?.textContent === '973'")
    _release(page, held)
    assert page.text_content(first) == "973"
    assert page.text_content("#selection-total") == "973"
    assert not page.errors
