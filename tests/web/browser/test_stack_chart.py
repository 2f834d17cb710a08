"""The stack chart in Chromium, on the spinpool 1.0.0 busy capture read without symbols:
what it paints at each sample's time is the stack `perf script` printed for that sample
and the stack the server's exact boxes give; zoom, range selection, tooltip, share link,
and no chart data for an outsider."""
import pytest
from django.test import Client
from django.urls import reverse

from perfweb.captures.models import ShareLink
from script_samples import raw_samples

from ..conftest import SPINPOOL, analysed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def busy(member):
    return analysed(member, SPINPOOL / "1.0.0-busy.perf.data", "llm-api", "1.0.0", "busy")


def perf_samples():
    """(tid, seconds, period, frames root first) per sample, as perf script printed them."""
    return [(tid, t, period, frames) for tid, t, period, _, frames in
            raw_samples(SPINPOOL / "1.0.0-busy.script-raw.txt")]


def _open_chart(page, url):
    page.goto(url)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    # the timeline above draws when it comes near the screen, and moves the chart down
    page.locator("#timeline").scroll_into_view_if_needed()
    page.wait_for_selector("#timeline .nsewdrag", state="attached", timeout=30000)
    page.wait_for_selector("#threads label", state="attached", timeout=30000)
    page.locator("#stack-chart-box").scroll_into_view_if_needed()
    page.wait_for_selector("#stack-canvas[data-boxes]", state="attached", timeout=30000)
    page.locator("#stack-canvas").scroll_into_view_if_needed()


def _painted(page, asks):
    return page.evaluate("(asks) => asks.map(([tid, t]) => window.perfweb.stackAt(tid, t))",
                         asks)


def _server_stack(data, tid, t):
    lane = next(ln for ln in data["lanes"] if ln["tid"] == tid)
    b = lane["boxes"]
    hits = sorted((b["d"][i], b["f"][i]) for i in range(len(b["s"]))
                  if b["s"][i] <= t < b["e"][i])
    return [data["functions"][str(f)]["n"] for _, f in hits]


def test_the_chart_paints_each_samples_stack(page, busy):
    _open_chart(page, page.base + busy.get_absolute_url())
    script = perf_samples()
    t0 = min(t for _, t, _, _ in script)
    # perf prints microseconds, cut: the sample is within the microsecond after
    asks = [[tid, t - t0 + 1.5e-6] for tid, t, _, _ in script]
    painted = _painted(page, asks)
    exact = page.evaluate("(u) => answer(u + '?px=0').then((r) => r.json())",
                          reverse("data-stacks", args=[busy.pk]))
    assert len(painted) == 973
    for (tid, t), drawn, (_, _, _, frames) in zip(asks, painted, script):
        assert drawn == frames == _server_stack(exact, tid, t), (tid, t)
    # both threads have a lane, labelled with perf's sample counts for them
    status = page.text_content("#stack-status")
    assert "api 18192" in status and "api 18193" in status
    assert float(page.get_attribute("#stack-canvas", "data-px")) < 0.005  # no merging
    assert page.errors == []


def test_wheel_zoom_asks_for_finer_boxes_and_a_drag_sets_the_range(page, busy):
    _open_chart(page, page.base + busy.get_absolute_url())
    canvas = page.locator("#stack-canvas")
    box = canvas.bounding_box()
    px0 = float(page.get_attribute("#stack-canvas", "data-px"))
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 30)
    for _ in range(10):
        page.mouse.wheel(0, -100)
    # ten notches of 15%: 1/4 of the 5 s in view, asked at its own pixels' resolution
    page.wait_for_function(f"() => Number(document.getElementById('stack-canvas')"
                           f".dataset.px) < {px0 / 2}")
    # zoomed in, the chart still paints each sample's stack (of those in view)
    script = perf_samples()
    t0 = min(t for _, t, _, _ in script)
    view = page.evaluate("() => window.perfweb.stackView()")
    assert view[1] - view[0] == pytest.approx(5.0 / 1.15 ** 10, rel=0.01)
    inside = [s for s in script if view[0] <= s[1] - t0 < view[1] - 0.011]
    assert len(inside) > 20
    painted = _painted(page, [[tid, t - t0 + 1.5e-6] for tid, t, _, _ in inside])
    assert painted == [frames for _, _, _, frames in inside]

    # hovering a box says what it is
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 18 + 8)
    page.wait_for_selector("#stack-tooltip:not([hidden])")
    tip = page.text_content("#stack-tooltip")
    assert "libstdc++.so.6.0.30+0xd44a3" in tip and "thread api" in tip

    # a drag selects a time range for every view
    page.mouse.move(box["x"] + box["width"] * 0.25, box["y"] + 30)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + 30, steps=6)
    page.mouse.up()
    page.wait_for_function("() => location.search.includes('start=')")
    page.wait_for_function("() => !document.getElementById('range-status').textContent"
                           ".startsWith('Showing the whole')")
    a, b = view[0] + (view[1] - view[0]) * 0.25, view[0] + (view[1] - view[0]) * 0.75
    start = float(page.evaluate("new URLSearchParams(location.search).get('start')"))
    end = float(page.evaluate("new URLSearchParams(location.search).get('end')"))
    assert start == pytest.approx(a, abs=(view[1] - view[0]) / 100)
    assert end == pytest.approx(b, abs=(view[1] - view[0]) / 100)
    # the flame graph follows: the samples perf printed in that range (of the page's
    # rounded times)
    expect = sum(1 for s in script if start <= s[1] - t0 + 1e-7 < end)
    page.wait_for_function(f"() => document.getElementById('explorer').dataset.flameTotal"
                           f" === '{expect}'")
    page.wait_for_function("() => (v => v !== null && v[1] - v[0] < 0.8)"
                           "(window.perfweb.stackView())")
    assert page.errors == []


def test_a_share_link_shows_the_chart_and_an_outsider_gets_no_data(page, busy, browser,
                                                                 outsider):
    link = ShareLink.objects.create(capture=busy, token="t" * 32, created_by=busy.uploaded_by)
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    guest = other.new_page()
    guest.base = page.base
    guest.errors = []
    guest.on("pageerror", lambda e: guest.errors.append(str(e)))
    _open_chart(guest, page.base + reverse("shared", args=[link.url_token]))
    script = perf_samples()
    t0 = min(t for _, t, _, _ in script)
    some = script[::50]
    painted = _painted(guest, [[tid, t - t0 + 1.5e-6] for tid, t, _, _ in some])
    assert painted == [frames for _, _, _, frames in some]
    assert guest.errors == []
    other.close()

    url = reverse("data-stacks", args=[busy.pk])
    client = Client()
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert client.get(reverse("shared-data", args=[link.url_token, "stacks"])).status_code \
        == 200


def test_a_wheel_down_zoomed_all_the_way_out_scrolls_the_page(page, busy):
    """Over the whole range a wheel down cannot zoom out further: the page scrolls (it
    was held, the pointer over the chart stuck the page); zoomed in, it zooms out."""
    _open_chart(page, page.base + busy.get_absolute_url())
    whole = page.evaluate("() => window.perfweb.stackView()")
    box = page.locator("#stack-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 30)
    y0 = page.evaluate("window.scrollY")
    page.mouse.wheel(0, 200)
    page.wait_for_function(f"() => window.scrollY > {y0}")
    assert page.evaluate("() => window.perfweb.stackView()") == whole
    box = page.locator("#stack-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 30)
    page.mouse.wheel(0, -100)
    page.wait_for_function("(w) => (v => v !== null && v[1] - v[0] < (w[1] - w[0]) * 0.9)"
                           "(window.perfweb.stackView())", arg=whole)
    y1 = page.evaluate("window.scrollY")
    page.mouse.wheel(0, 100)  # zoomed in: a wheel down zooms out, the page stays
    page.wait_for_function("(w) => (v => v !== null && v[1] - v[0] > (w[1] - w[0]) * 0.99)"
                           "(window.perfweb.stackView())", arg=whole)
    assert page.evaluate("window.scrollY") == y1
    page.wait_for_selector("#stack-canvas[data-boxes]", state="attached")
    page.settle()
    assert page.errors == []
