"""The off-CPU views of the capture page in Chromium: the gateway 1.1 capture (a global
mutex, recorded with context switches) switched to off-CPU and wall-clock time, its
thread state timeline, and a capture without switches that has no such switch."""
import re

import pytest

from perfweb.captures.models import Capture, ShareLink

from ..conftest import SPINPOOL
from ..test_offcpu_explorer import EVIL, RECORD, _text_capture
from .test_capture_page import _canvas_ink, _upload_in_browser

pytestmark = pytest.mark.django_db(transaction=True)

TIME = r"\d+\.\d{1,2} (?:ms|s)"


def _redrawn(page, time):
    """Wait until the flame graph is drawn from the `time` view's data (data-flame-view
    names the view its last answer weighs: off-CPU and wall data are both in µs, and
    data-time changes on the click, before the answer), and the top functions, asked at
    the same time, are in that view's unit (this tells the on-CPU table from the others,
    which is all the test reads of it)."""
    unit = "samples" if time == "on-cpu" else "µs"
    page.wait_for_function(
        """([time, unit, format]) => {
            const e = document.getElementById("explorer");
            const cell = document.querySelector("#functions tbody tr td");
            return e.dataset.time === time && e.dataset.flameView === time &&
                e.dataset.flameUnit === unit && cell !== null &&
                new RegExp(format).test(cell.textContent);
        }""", arg=[time, unit, r"^\d+$" if time == "on-cpu" else f"^{TIME}$"])


def _hover(page, name):
    spot = page.evaluate("(n) => window.perfweb.frameCenter(n)", name)
    assert spot, f"{name} is not drawn"
    canvas = page.locator("#flame-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_selector("#flame-tooltip:not([hidden])")
    return spot, page.text_content("#flame-tooltip")


def test_switch_the_mutex_capture_to_off_cpu_and_wall_time(page, browser, worker_factory,
                                                           tmp_path):
    worker_factory()
    _upload_in_browser(page, _text_capture(tmp_path, EVIL), version="1.1", label="load")
    capture = Capture.objects.get()
    oc = capture.latest_result().report["off_cpu"]
    assert page.text_content("#selection-total") == "2384"
    assert page.text_content("#selection-unit") == "samples"
    assert page.locator("#time-tabs button.active").text_content() == "On-CPU"
    spot, tip = _hover(page, "gateway::Worker::on_readable")
    assert re.search(rf"total {spot['total']} \(", tip), tip  # samples, as before

    page.click("#time-tabs button[data-time=off-cpu]")
    _redrawn(page, "off-cpu")
    assert "time=off-cpu" in page.url
    assert page.locator("#time-tabs button.active").text_content() == "Off-CPU"
    total = int(page.get_attribute("#explorer", "data-flame-total"))
    assert abs(total - oc["totals"]["off_cpu_s"] * 1e6) <= oc["totals"]["switches"]
    assert page.text_content("#selection-total") == f"{total / 1e6:.2f} s"
    assert page.text_content("#selection-unit") == "off-CPU"
    ink = _canvas_ink(page)
    assert ink["painted"] > 0.05 * ink["pixels"]
    # the lock: 5.1 s of futex waits under Worker::on_readable, drawn as time
    spot, tip = _hover(page, "gateway::Worker::on_readable")
    assert spot["total"] >= oc["top_blocking"][0]["seconds"] * 1e6
    m = re.search(rf"total ({TIME}) off-CPU \(([\d.]+)%\) · self ({TIME}) off-CPU", tip)
    assert m, tip
    assert m.group(1) == f"{spot['total'] / 1e6:.2f} s"
    assert "samples" not in tip
    # top functions and the call tree in time too
    first = page.locator("#functions tbody tr").first.locator("td")
    assert re.fullmatch(TIME, first.nth(0).text_content())
    page.click("#view-tabs button[data-view=topdown]")
    page.wait_for_function(  # the tree's first answer, asked in the off-CPU view
        """(format) => {
            const cell = document.querySelector("#calltree tbody tr td:nth-child(4)");
            return cell !== null && new RegExp(format).test(cell.textContent);
        }""", arg=f"^{TIME}$")
    assert page.locator("#calltree tbody tr").first.locator("td").nth(3).text_content() == \
        f"{total / 1e6:.2f} s"
    page.click("#view-tabs button[data-view=flame]")

    page.click("#time-tabs button[data-time=wall]")
    _redrawn(page, "wall")
    wall = int(page.get_attribute("#explorer", "data-flame-total"))
    assert wall == total + 2384 * 2004  # and 1/499 s for each CPU sample
    assert page.text_content("#selection-unit") == "wall-clock"
    spot, tip = _hover(page, "gateway::hash_payload")  # the CPU work, in time now
    assert re.search(rf"total {TIME} wall-clock", tip), tip
    assert spot["total"] > 4e6
    page.reload()
    page.wait_for_selector("#explorer[data-flame-total]", state="attached")
    _redrawn(page, "wall")
    assert page.locator("#time-tabs button.active").text_content() == "Wall-clock"

    # the thread state timeline: a painted row per thread, names as text
    page.wait_for_selector("#thread-states[data-rows='3']", state="attached")
    rows = page.locator("#thread-states .state-row")
    assert rows.count() == 3 and page.is_visible("#states-box")
    for i in range(3):
        c = page.evaluate("""(i) => {
            const c = document.querySelectorAll("#thread-states canvas")[i];
            const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
            const seen = {};
            for (let k = 0; k < d.length; k += 4) if (d[k + 3]) seen[d[k] + "," + d[k + 1]] = 1;
            return {colors: Object.keys(seen).length, width: c.width};
        }""", i)
        assert c["width"] > 300 and c["colors"] >= 3  # running, blocked and runnable
    labels = [rows.nth(i).locator(".state-label").text_content() for i in range(3)]
    assert f"{EVIL} 27298" in labels
    assert page.locator("#thread-states img").count() == 0 and page.dialogs == []
    times = rows.nth(0).locator(".state-times").text_content()
    assert re.fullmatch(r"on CPU [\d.]+ s · blocked [\d.]+ s · waiting for a CPU [\d.]+ s",
                        times), times
    # a drag across a row restricts every view to that range
    canvas = rows.nth(1).locator("canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + 8)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + 8, steps=5)
    page.mouse.up()
    page.wait_for_selector("#range-clear:not([hidden])")
    page.wait_for_function(
        "(most) => Number(document.getElementById('explorer').dataset.flameTotal) < most",
        arg=wall * 0.3)
    assert "start=" in page.url and "time=wall" in page.url
    assert page.errors == []

    # a share link carries the view: the guest sees the off-CPU time, read-only
    link = ShareLink.objects.create(capture=capture, token="g" * 32)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    guest = context.new_page()
    guest.goto(f"{page.base}/s/{link.url_token}/?time=off-cpu")
    guest.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    _redrawn(guest, "off-cpu")
    assert int(guest.get_attribute("#explorer", "data-flame-total")) == total
    assert guest.locator("#sharing").count() == 0
    guest.wait_for_selector("#thread-states[data-rows='3']", state="attached")
    context.close()


def test_no_view_switch_without_context_switches(page, worker_factory):
    worker_factory()
    _upload_in_browser(page, SPINPOOL / "1.0.0-idle.truth-script.txt")
    assert page.text_content("#selection-total") == "975"
    assert page.locator("#time-tabs").count() == 0
    assert page.locator("#states-box").count() == 0 and page.locator("#off-cpu").count() == 0
    page.click("#off-cpu-missing summary")
    assert RECORD in page.text_content("#off-cpu-missing")
    # a link asking for the off-CPU view: the engine's sentence, and the CPU samples
    page.goto(page.url.split("?")[0] + "?time=off-cpu")
    page.wait_for_selector("#flame-share.error")
    assert "needs context switches" in page.text_content("#flame-share")
    page.wait_for_function(
        "() => document.getElementById('explorer').dataset.flameTotal === '975'")
    assert page.text_content("#selection-unit") == "samples"
    assert "time=" not in page.url
    assert page.errors == []
