"""Plotly draws a subset of HTML in the text it is given, so a build version
`<a href="https://evil.example/ver">x</a>` was a clickable link on the service page (and
thread names on the capture and share pages): the security probe of issue 12. Every
string from an upload must reach the charts as text, in Chromium."""
import re
import secrets

import pytest

from perfweb.captures.models import Capture, ShareLink

from ..conftest import SPINPOOL
from .test_capture_page import _upload_in_browser

pytestmark = pytest.mark.django_db(transaction=True)

EVIL = '<a href="https://evil.example/ver">x</a><b>y</b>'
VERSION, LABEL, FUNCTION, THREAD = f"1.0{EVIL}", f"idle{EVIL}", f"lock{EVIL}", f"api{EVIL}"


def _hostile_capture(tmp_path):
    """The spinpool 1.0.0 idle capture as perf script text, its busiest function and one
    of its two threads renamed with markup (perf script keeps names as they are)."""
    text = (SPINPOOL / "1.0.0-idle.truth-script.txt").read_text()
    text = text.replace("pthread_mutex_lock@@GLIBC_2.2.5+", f"{FUNCTION}+")
    text = re.sub(r"^api 18136 ", f"{THREAD} 18136 ", text, flags=re.M)
    path = tmp_path / "hostile.perf-script.txt"
    path.write_text(text)
    return path


def _markup_drawn(page, chart: str) -> dict:
    """What Plotly made of markup in one chart's SVG: links, bold or italic runs."""
    return page.evaluate("""(id) => {
        const svg = [...document.querySelectorAll(`#${id} svg`)];
        const all = (sel) => svg.flatMap((s) => [...s.querySelectorAll(sel)]);
        return {links: all("a").length,
                styled: all("tspan[style*=bold], tspan[style*=italic]").length,
                texts: all("text").map((t) => t.textContent)};
    }""", chart)


def _link_glyph(page) -> dict:
    """The page position of the "x" that the version's link wraps, on the x axis of the
    CPUs chart: drawn as text "1.0<a href=...>x</a>..." or, as a link, "1.0xy"."""
    page.locator("#chart-cpus").scroll_into_view_if_needed()
    return page.evaluate("""() => {
        const text = [...document.querySelectorAll("#chart-cpus .xtick text")]
            .find((t) => t.textContent.startsWith("1.0"));
        const s = text.textContent;
        const i = s.includes("<a") ? s.indexOf(">x<") + 1 : 3;
        const box = text.getExtentOfChar(i);
        const p = new DOMPoint(box.x + box.width / 2, box.y + box.height / 2)
            .matrixTransform(text.getScreenCTM());
        return {x: p.x, y: p.y};
    }""")


def _hover(page, chart: str, curve: int) -> str:
    """Plotly's own hover of the first point of a trace; the hover layer's text."""
    return page.evaluate("""([id, curve]) => {
        const gd = document.getElementById(id);
        window.Plotly.Fx.hover(gd, [{curveNumber: curve, pointNumber: 0}]);
        return gd.querySelector(".hoverlayer").textContent;
    }""", [chart, curve])


def _assert_text_only(page, chart: str, *literal: str) -> None:
    drawn = _markup_drawn(page, chart)
    assert drawn["links"] == 0 and drawn["styled"] == 0, (chart, drawn)
    for text in literal:
        assert text in drawn["texts"], (chart, text, drawn["texts"])


def test_names_in_charts_are_text(page, browser, worker_factory, tmp_path):
    worker_factory()
    _upload_in_browser(page, _hostile_capture(tmp_path), version=VERSION, label=LABEL)
    _upload_in_browser(page, SPINPOOL / "1.1.0-idle.perf.data", version="1.1.0",
                       label="idle")
    hostile = Capture.objects.get(label=LABEL)
    assert hostile.status == "done" and hostile.build.version == VERSION

    # the service page: version on the axis, label and function names in legends
    page.goto(f"{page.base}/services/{hostile.build.service.pk}/")
    page.wait_for_selector("#history[data-points='2']", state="attached")
    page.wait_for_selector("#chart-rules .main-svg")
    _assert_text_only(page, "chart-cpus", VERSION, LABEL, "idle")
    _assert_text_only(page, "chart-functions", VERSION, FUNCTION)
    _assert_text_only(page, "chart-rules", VERSION)
    tabs = len(page.context.pages)
    spot = _link_glyph(page)
    page.mouse.click(spot["x"], spot["y"])  # where the link's "x" is drawn
    page.wait_for_timeout(500)
    assert len(page.context.pages) == tabs and page.url.endswith(
        f"/services/{hostile.build.service.pk}/")
    names = page.evaluate("document.getElementById('chart-functions').data.map(t => t.name)")
    hover = _hover(page, "chart-functions", names.index(
        FUNCTION.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")))
    assert VERSION in hover
    _assert_text_only(page, "chart-functions", VERSION, FUNCTION)  # the hover too
    assert EVIL in _hover(page, "chart-cpus", 0)
    _assert_text_only(page, "chart-cpus", VERSION, LABEL)
    assert page.errors == []

    # the capture page's timeline: thread names in the legend
    page.goto(f"{page.base}{hostile.get_absolute_url()}")
    page.locator("#timeline").scroll_into_view_if_needed()  # Plotly is fetched then
    page.wait_for_selector("#timeline .main-svg")
    _assert_text_only(page, "timeline", f"{THREAD} 18136", "api 18137")
    assert page.errors == []

    # the same timeline through a share link, for someone without an account
    link = ShareLink.objects.create(capture=hostile, token=secrets.token_urlsafe(24))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    guest = context.new_page()
    assert guest.goto(f"{page.base}/s/{link.url_token}/").status == 200
    guest.locator("#timeline").scroll_into_view_if_needed()
    guest.wait_for_selector("#timeline .main-svg")
    _assert_text_only(guest, "timeline", f"{THREAD} 18136", "api 18137")
    context.close()
