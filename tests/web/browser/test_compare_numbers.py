"""The comparison page writes every number in the one format of the movers' tables
(numbers.py on the server, numbers.js for what the page draws): shares as 0.42% / 34.4%,
every change signed with the true minus, in the tables and in the differential flame
graph's tooltip, with the values of the server's compare data (issue 17, bug 9)."""
import random
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from perfweb.captures.models import Capture
from perfweb.captures.templatetags.numbers import (of_percent, percent_text, points,
                                                   signed_percent, signed_text)

pytestmark = pytest.mark.django_db(transaction=True)

#: a change as the page writes it: "+1.5 pp", "−0.42 pp", "+<0.01 pp", "0 pp", and the
#: same in percent for relative changes
CHANGE = re.compile(r"^(?:[+\u2212](?:\d+(?:\.\d)?|\d\.\d\d|<0\.01)(?: pp|%)|0 pp|0%)$")
SHARE = re.compile(r"^(?:\d+(?:\.\d)?|\d\.\d\d|<0\.01)%$")


def _cells(page, selector):
    return page.eval_on_selector_all(
        selector, "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))")


def _hover(page, name):
    """The diff graph's tooltip lines on the frame `name`, and the server's node it is."""
    spot = page.evaluate("(n) => window.perfweb.frameCenter(n)", name)
    assert spot, f"{name} is not drawn"
    page.evaluate("""(y) => {
        const c = document.getElementById('diff-canvas').getBoundingClientRect();
        window.scrollBy(0, c.top + y - window.innerHeight / 2);
    }""", spot["y"])
    box = page.locator("#diff-canvas").bounding_box()
    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_function(
        "(n) => { const t = document.getElementById('diff-tooltip');"
        " return !t.hidden && t.firstChild && t.firstChild.textContent === n; }", arg=name)
    lines = page.eval_on_selector_all("#diff-tooltip > *", "els => els.map(e => e.textContent)")
    page.mouse.move(0, 0)
    return lines, spot["src"]


def _compare_page(page) -> dict:
    """The demo's busy 1.0.0 -> 1.1.0 comparison page, drawn; the server's compare data."""
    call_command("load_demo", "--username", "alice")
    before = Capture.objects.get(build__version="1.0.0", label="busy")
    after = Capture.objects.get(build__version="1.1.0", label="busy")
    data = page.answer(page.base + reverse("compare-data",
                                           args=[before.pk, after.pk])).json()
    page.goto(page.base + reverse("compare", args=[before.pk, after.pk]))
    page.wait_for_selector("#diff[data-frames]", state="attached", timeout=30000)
    return data


def test_every_change_on_the_comparison_page_is_signed_in_one_format(page):
    data = _compare_page(page)

    # the work done: CPU per job (a relative change) and CPUs busy
    per = data["cpu_per_unit"]
    assert page.text_content("#per-unit-change") == signed_percent(per["change"]) \
        == "\u221284.0%"
    cpus = data["cpus_change"]
    assert cpus < 0
    assert page.text_content("#cpus-busy-change") == signed_text(cpus) == \
        "\u2212" + f"{-cpus:.2f}"
    assert page.text_content("#cpus-change").endswith(f"({signed_text(cpus)})")

    # waiting and slow paths: shares in percent, changes in points
    paths = _cells(page, "#slow-paths tbody tr")
    assert paths and len(paths) == len(data["slow_paths"])
    assert [r[:4] for r in paths] == [
        [p["name"], of_percent(p["before"]), of_percent(p["after"]), points(p["change"])]
        for p in data["slow_paths"]]
    assert any(p["change"] < 0 for p in data["slow_paths"])  # a minus is met

    # the movers (done before: still so)
    movers = _cells(page, "#movers tbody tr")
    assert [r[2:] for r in movers] == [
        [of_percent(m["self_before"]), of_percent(m["self_after"]), points(m["self_change"]),
         of_percent(m["total_before"]), of_percent(m["total_after"])]
        for m in data["movers"]["functions"]]
    dsos = _cells(page, "#dso-movers tr")
    assert [r[1:] for r in dsos] == [
        [of_percent(d["self_before"]), of_percent(d["self_after"]), points(d["self_change"])]
        for d in data["movers"]["dsos"]]

    changes = [r[3] for r in paths] + [r[4] for r in movers] + [r[3] for r in dsos] + \
        [page.text_content("#per-unit-change")]
    shares = [c for r in paths for c in r[1:3]] + \
        [c for r in movers for c in (r[2], r[3], r[5], r[6])] + \
        [c for r in dsos for c in r[1:3]]
    assert all(CHANGE.match(c) for c in changes), [c for c in changes if not CHANGE.match(c)]
    assert all(SHARE.match(c) or c == "0%" for c in shares), shares
    assert any(c.startswith("+") for c in changes) and \
        any(c.startswith("\u2212") for c in changes)
    assert "-" not in "".join(changes)  # the true minus, never a hyphen

    # the differential graph's tooltip: the same format, the change signed, the
    # server's numbers
    nodes = data["tree"]["nodes"]
    names = [n["n"] for n in nodes]
    # frames of one name (so the one hovered is the one meant), wide enough to hover
    unique = [n for n in nodes[1:] if names.count(n["n"]) == 1 and max(n["sa"], n["sb"]) > .01]
    grew = max(unique, key=lambda n: n["sb"] - n["sa"])
    fell = min(unique, key=lambda n: n["sb"] - n["sa"])
    assert grew["sb"] > grew["sa"] and fell["sb"] < fell["sa"]
    for node in (nodes[0], grew, fell):
        lines, src = _hover(page, node["n"])
        assert {k: src[k] for k in node} == node
        sa, sb, a, b = node["sa"], node["sb"], node["a"], node["b"]
        change = points(100 * (sb - sa))
        assert lines == [node["n"], f"before {percent_text(sa)} ({a}) → after "
                                    f"{percent_text(sb)} ({b})",
                         f"change {change} ({signed_text(b - a, 0)} samples)"]
        assert CHANGE.match(change)
        assert change[0] == ("+" if node is grew else "\u2212" if node is fell else "0")
    assert not page.errors


#: shares and changes at the rules' edges: exact halves (0.125 % rounds to even in both),
#: what rounds up to 1% or 100%, below 0.01%, zero, signs
EDGES = [0, 1e-5, 4.9e-5, 5e-5, 0.00125, 0.00135, 0.0042, 0.009949, 0.00995, 0.0099999,
         0.01, 0.0105, 0.0125, 0.3443, 0.99949, 0.9995, 1.0, 1.5]


def test_the_page_formatter_writes_what_the_server_writes(page):
    """numbers.js, imported as the comparison page imports it, against numbers.py."""
    page.goto(page.base + "/")
    rng = random.Random(17)  # and shares of every size, as the diff tree's 5 decimals
    values = EDGES + [round(rng.random() * 10 ** -rng.randrange(5), 5) for _ in range(300)]
    values += [-v for v in values if v]
    got = page.evaluate("""async (values) => {
        const n = await import('/static/js/numbers.js');
        return values.map((v) => [n.percentText(v), n.percentText(v, true),
                                  n.ofPercent(100 * v), n.points(100 * v),
                                  n.signedText(v), n.signedText(1000 * v, 0)]);
    }""", values)
    assert got == [[percent_text(v), percent_text(v, signed=True), of_percent(100 * v),
                    points(100 * v), signed_text(v), signed_text(1000 * v, 0)]
                   for v in values]
    assert got[values.index(0.00125)][0] == "0.12%"  # half to even, as Python's format
    assert got[values.index(-0.0042)][1] == "\u22120.42%"


def test_the_differential_flame_graph_has_a_colour_scale(page):
    """(Issue 36, item 7.) A legend says what the colours mean and where they saturate,
    in the unit shown: 5 points of each capture's share, or 5% of the larger capture's
    samples with the toggle; a frame that grew past that is drawn the full red."""
    data = _compare_page(page)
    assert page.text_content("#diff-legend-low") == "shrank 5.0 points or more"
    assert page.text_content("#diff-legend-high") == "grew 5.0 points or more"
    assert "grey: changed less than 0.1 point" in page.text_content("#diff-legend-note")
    page.click("#diff-absolute")
    larger = max(data["tree"]["a"], data["tree"]["b"])
    assert page.text_content("#diff-legend-high") == \
        f"grew {round(0.05 * larger):,} samples or more"
    assert page.is_visible(".diff-scale")
    assert page.errors == []
