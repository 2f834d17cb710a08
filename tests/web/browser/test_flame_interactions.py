"""The flame graph's interactions in Chromium (issue 17's list of features): wheel zoom and
drag pan, keyboard navigation, search dimming, toggles that show their state, history,
the zoomed frame's total, the frame menu and labels that fit. Every number is checked
against the server's flame data for the demo's spinpool capture (975 samples)."""
import math
import re
import urllib.parse

import pytest
from django.core.management import call_command

from perfweb.captures.models import Capture

from .test_explorer_limits_browser import _analyzed
from .test_rough_edges import _open

pytestmark = pytest.mark.django_db(transaction=True)

LOOP = "qualla::ThreadPool::loop"
MATCH_RGB = (238, 43, 238)  # colors.js MATCH_COLOR


def _idle(page):
    call_command("load_demo", "--username", "alice")
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    _open(page, idle)
    return idle


def _flame(page, **params):
    """The server's flame data for these query parameters, as the page asks for it."""
    return page.evaluate("""async (qs) => {
        const url = document.getElementById('explorer').dataset.flameUrl;
        return (await answer(url + (qs ? '?' + qs : ''))).json();
    }""", urllib.parse.urlencode(params))


def _nested(tree):
    nodes = [dict(n, c=[], up=None) for n in tree["nodes"]]
    for n in nodes[1:]:
        nodes[n["p"]]["c"].append(n)
        n["up"] = nodes[n["p"]]
    return nodes


def _node(nodes, name):
    [hit] = [n for n in nodes if n["n"] == name]
    return hit


def _box(page):
    page.locator("#flame-canvas").scroll_into_view_if_needed()
    return page.locator("#flame-canvas").bounding_box()


def _spot(page, name):
    spot = page.evaluate("(n) => window.perfweb.frameCenter(n)", name)
    assert spot, f"{name} is not drawn"
    return spot


def _at(page, x, y):
    return page.evaluate("([x, y]) => window.perfweb.frameAtPoint(x, y)", [x, y])


def _crumbs(page):
    return page.eval_on_selector_all("#breadcrumbs .crumb", "bs => bs.map(b => b.textContent)")


def _pixel(page, x, y):
    """RGBA of the canvas at (x, y) CSS px."""
    return tuple(page.evaluate("""([x, y]) => {
        const c = document.getElementById('flame-canvas');
        const dpr = c.width / c.clientWidth;
        return [...c.getContext('2d').getImageData(
            Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data];
    }""", [x, y]))


def test_wheel_zooms_about_the_pointer_and_a_drag_pans_without_clicking(page):
    _idle(page)
    data = _flame(page)
    nodes = _nested(data["tree"])
    view = page.evaluate("window.perfweb.flameView()")
    assert (view["start"], view["end"]) == (0, 975) == (0, data["total"])
    assert page.text_content("#selection-total") == "975"
    box = _box(page)
    spot = _spot(page, LOOP)
    assert spot["total"] == _node(nodes, LOOP)["t"] == 52
    # (a mouse event's clientX is whole pixels: the pointer at one)
    x, y = math.floor(box["x"] + spot["x"]) - box["x"], spot["y"]
    page.mouse.move(box["x"] + x, box["y"] + y)
    page.mouse.wheel(0, -300)
    page.wait_for_function("() => window.perfweb.flameView().end < 975")
    view = page.evaluate("window.perfweb.flameView()")
    span = view["end"] - view["start"]
    at = x / view["width"]
    # narrowed by exp(-0.6), about the pointer: the sample under it is the same one
    assert span == pytest.approx(975 * math.exp(-0.6), rel=1e-6)
    assert view["start"] + at * span == pytest.approx(at * 975, abs=1e-6)
    assert view["start"] > 0 and view["end"] < 975
    # the Selection figure: the samples of the root in the range on screen (535 of 975)
    in_view = round(975 * math.exp(-0.6))
    assert page.text_content("#selection-total") == str(in_view) == "535"
    assert page.text_content("#selection-whole") == f"in view, of {data['total']}"
    under = _at(page, x, y)
    assert under["name"] == LOOP and under["total"] == 52
    assert under["w"] == pytest.approx(52 / span * view["width"], rel=1e-6)  # wider now
    # the ancestors stay drawn across the whole viewport, clipped to it
    root_y = page.evaluate("window.perfweb.frameCenter('all')")["y"]
    assert _at(page, 1, root_y)["name"] == "all"
    assert _at(page, view["width"] - 1, root_y)["name"] == "all"
    assert _pixel(page, 1, root_y)[3] == 255
    assert _pixel(page, view["width"] - 1, root_y)[3] == 255
    drawn = page.evaluate("window.perfweb.drawnFrames()")
    assert all(f["left"] < view["width"] and f["left"] + f["w"] > 0 for f in drawn)
    # frames wholly outside the zoomed range are not drawn: the root's first child that
    # ends before the viewport's first sample
    before = [n for n in nodes if n["up"] and n["up"]["n"] == "libstdc++.so.6.0.30+0xd44a3"]
    starts, at_sample = {}, 0
    for n in before:
        starts[n["n"]], at_sample = at_sample, at_sample + n["t"]
    gone = [name for name, s in starts.items()
            if s + _node(nodes, name)["t"] <= view["start"]]
    assert gone and not {f["name"] for f in drawn} & set(gone)

    # a drag pans by as much as the pointer moved, and is no click: no zoom follows
    url = page.url
    page.mouse.move(box["x"] + x, box["y"] + y)
    page.mouse.down()
    page.mouse.move(box["x"] + x - 20, box["y"] + y, steps=5)
    page.mouse.up()
    page.wait_for_timeout(300)
    moved = page.evaluate("window.perfweb.flameView()")
    assert moved["start"] == pytest.approx(view["start"] + 20 / view["width"] * span, abs=1e-6)
    assert moved["end"] - moved["start"] == pytest.approx(span, rel=1e-9)
    assert moved["end"] < 975  # (not stopped at the right end)
    assert page.url == url and _crumbs(page) == ["all"]
    assert page.text_content("#selection-total") == str(in_view)  # (the same width)
    # the frame went with the pointer: the same sample under it
    assert moved["start"] + (x - 20) / view["width"] * span == pytest.approx(at * 975, abs=1e-6)
    assert _at(page, x - 20, y)["name"] == LOOP
    # a click still zooms to the frame as before, and the new tree shows whole
    page.mouse.click(box["x"] + x - 20, box["y"] + y)
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 3")
    assert _crumbs(page)[-1] == LOOP
    view = page.evaluate("window.perfweb.flameView()")
    assert (view["start"], view["end"], view["total"]) == (0, 52, 52)
    assert page.text_content("#selection-total") == "52"
    assert page.text_content("#selection-whole") == f"in the zoomed frame, of {data['total']}"
    # a wheel zoom in the zoomed frame, then out all the way: its whole weight again
    box, spot = _box(page), _spot(page, LOOP)
    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    page.mouse.wheel(0, -300)
    page.wait_for_function("() => window.perfweb.flameView().end < 52")
    assert page.text_content("#selection-total") == str(round(52 * math.exp(-0.6))) == "29"
    for _ in range(3):
        page.mouse.wheel(0, 500)
    page.wait_for_function("() => window.perfweb.flameView().end === 52")
    assert page.text_content("#selection-total") == "52"
    assert page.text_content("#selection-whole") == f"in the zoomed frame, of {data['total']}"
    page.settle()
    assert not page.errors


def _heaviest(node):
    best = None
    for c in node["c"]:
        if c["t"] > 0 and (best is None or c["t"] > best["t"]):
            best = c
    return best


def _selected(page):
    return page.evaluate("window.perfweb.selectedFrame()")


def test_arrow_keys_move_a_selected_frame_and_enter_zooms(page):
    _idle(page)
    nodes = _nested(_flame(page)["tree"])
    page.focus("#flame-canvas")
    if _selected(page) is None:  # (focus from the keyboard picks the root at once)
        page.keyboard.press("ArrowUp")  # else the first key does
    assert _selected(page)["name"] == "all" and _selected(page)["total"] == 975
    # flame orientation: up on screen is toward the leaves, along the heaviest child
    # up to the first frame with a sibling after it
    node = nodes[0]
    while node is nodes[0] or node["up"]["c"][-1] is node:
        page.keyboard.press("ArrowUp")
        node = _heaviest(node)
        got = _selected(page)
        assert (got["name"], got["total"], got["self"]) == (node["n"], node["t"], node["s"])
    # right and left: the next sibling, and back
    siblings = node["up"]["c"]
    i = siblings.index(node)
    page.keyboard.press("ArrowRight")
    got = _selected(page)
    assert (got["name"], got["total"]) == (siblings[i + 1]["n"], siblings[i + 1]["t"])
    page.keyboard.press("ArrowLeft")
    assert _selected(page)["name"] == node["n"]
    page.keyboard.press("ArrowDown")  # toward the root
    parent = node["up"]
    assert (_selected(page)["name"], _selected(page)["total"]) == (parent["n"], parent["t"])
    # outlined: a dark line inside its box's left edge, where the fill was before
    got = _selected(page)
    edge = max(got["left"], 0) + 1
    assert _pixel(page, edge, got["y"])[:3] == (17, 17, 17)

    # icicle: the root at the top, down on screen toward the leaves
    page.keyboard.press("o")
    page.keyboard.press("ArrowDown")
    assert _selected(page)["name"] == _heaviest(parent)["n"]
    page.keyboard.press("ArrowUp")
    assert _selected(page)["name"] == parent["n"]

    # Enter zooms to it: the breadcrumbs end there, the figure is its total
    page.keyboard.press("Enter")
    page.wait_for_function("(n) => [...document.querySelectorAll('#breadcrumbs .crumb')]"
                           ".pop().textContent === n", arg=parent["n"])
    assert page.text_content("#selection-total") == str(parent["t"])
    root = urllib.parse.unquote(re.search(r"root=([^&]+)", page.url).group(1))
    assert root.split(",")[-1] == str(parent["f"])
    # the selection moved to the new tree's root, and "f" focuses it
    assert _selected(page)["name"] == parent["n"]
    page.keyboard.press("f")
    page.wait_for_selector("#callers-box:not([hidden])")
    assert page.text_content("#focus-label") == parent["n"]
    assert not page.errors


def test_a_search_dims_the_frames_it_does_not_match(page):
    _idle(page)
    page.fill("#flame-search", "futex")
    page.wait_for_selector("#flame-share:has-text('matches')")
    page.wait_for_timeout(300)  # the server's matches drawn
    ids = set(_flame(page, search="futex")["search"]["functions"])
    assert ids
    drawn = page.evaluate("window.perfweb.drawnFrames()")
    matched = [f for f in drawn if not f["dim"]]
    dimmed = [f for f in drawn if f["dim"]]
    assert {f["f"] for f in matched} == {f["f"] for f in drawn if f["f"] in ids}
    assert all(f["f"] not in ids for f in dimmed) and dimmed and matched
    assert {f["name"] for f in dimmed} >= {"all", LOOP}
    # pixels (left in the box, clear of its label): a match in full colour, a dimmed
    # frame at a quarter of its opacity
    hit = matched[0]
    assert _pixel(page, max(hit["left"], 0) + 1, hit["y"]) == MATCH_RGB + (255,)
    loop = next(f for f in dimmed if f["name"] == LOOP)
    assert _pixel(page, loop["left"] + 1, loop["y"])[3] == pytest.approx(0.25 * 255, abs=2)
    # the search cleared, nothing is dimmed
    page.fill("#flame-search", "")
    page.wait_for_timeout(400)
    assert not any(f["dim"] for f in page.evaluate("window.perfweb.drawnFrames()"))
    assert _pixel(page, loop["left"] + 1, loop["y"])[3] == 255
    assert not page.errors


def _pressed(page):
    return [page.get_attribute(f"#flame-{b}", "aria-pressed") for b in ("invert", "orient")]


def test_toggle_buttons_show_their_state_from_clicks_and_the_url(page):
    idle = _idle(page)
    assert _pressed(page) == ["false", "false"]
    off = page.evaluate("getComputedStyle(document.getElementById('flame-invert'))"
                        ".backgroundColor")
    page.click("#flame-invert")
    page.wait_for_function("() => location.search.includes('invert=1')")
    assert _pressed(page) == ["true", "false"]
    on = page.evaluate("getComputedStyle(document.getElementById('flame-invert'))"
                       ".backgroundColor")
    assert on != off  # the pressed state shows
    # the graph is the inverted tree: its first row is the server's sampled functions
    inverted = _nested(_flame(page, invert=1)["tree"])
    top = max(inverted[0]["c"], key=lambda n: n["t"])
    page.wait_for_function("(n) => window.perfweb.drawnFrames().some((f) => f.depth === 1 "
                           "&& f.name === n)", arg=top["n"])
    view = page.evaluate("window.perfweb.flameView()")
    row1 = {f["name"]: f["total"] for f in page.evaluate("window.perfweb.drawnFrames()")
            if f["depth"] == 1}
    assert row1 == {n["n"]: n["t"] for n in inverted[0]["c"]
                    if n["t"] / 975 * view["width"] >= 0.5}
    assert len(row1) > 5
    page.click("#flame-orient")
    assert _pressed(page) == ["true", "true"] and "orient=icicle" in page.url
    page.keyboard.press("o")  # the key is the button
    assert _pressed(page) == ["true", "false"] and "orient=" not in page.url
    page.go_back()
    page.wait_for_function("() => location.search.includes('orient=icicle')")
    assert _pressed(page) == ["true", "true"]
    page.go_back()
    page.go_back()
    page.wait_for_function("() => !location.search.includes('invert')")
    assert _pressed(page) == ["false", "false"]
    page.goto(page.base + idle.get_absolute_url() + "?invert=1&orient=icicle")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached")
    assert _pressed(page) == ["true", "true"]
    assert not page.errors


def test_back_returns_to_the_zoom_and_focus_before(page):
    _idle(page)
    assert _crumbs(page) == ["all"] and page.text_content("#selection-total") == "975"
    box = _box(page)
    spot = _spot(page, LOOP)
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 3")
    zoomed = _crumbs(page)
    assert zoomed == ["all", "libstdc++.so.6.0.30+0xd44a3", LOOP]
    assert page.text_content("#selection-total") == "52"
    zoomed_url = page.url
    # focus a callee of the zoomed frame (hover, f)
    child = max((n for n in _nested(_flame(page)["tree"]) if n["up"] and n["up"]["n"] == LOOP),
                key=lambda n: n["t"])
    spot = _spot(page, child["n"])
    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    page.keyboard.press("f")
    page.wait_for_selector("#callers-box:not([hidden])")
    assert page.text_content("#focus-label") == child["n"]
    assert f"focus={child['f']}" in page.url
    assert _crumbs(page) == ["all", child["n"]]
    assert page.text_content("#selection-total") == "975"  # focused, not zoomed
    page.go_back()
    page.wait_for_selector("#callers-box", state="hidden")
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 3")
    assert page.url == zoomed_url and _crumbs(page) == zoomed
    assert page.text_content("#selection-total") == "52"
    assert page.evaluate("window.perfweb.flameView().total") == 52  # the zoomed tree drawn
    page.go_back()
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 1")
    assert "root=" not in page.url and "focus=" not in page.url
    assert page.text_content("#selection-total") == "975"
    page.wait_for_function("() => window.perfweb.flameView().total === 975")
    page.go_forward()
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 3")
    assert page.text_content("#selection-total") == "52"
    assert not page.errors


def test_zooming_shows_the_zoomed_frames_total(page):
    _idle(page)
    box = _box(page)
    spot = _spot(page, LOOP)
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 3")
    root = urllib.parse.unquote(re.search(r"root=([^&]+)", page.url).group(1))
    data = _flame(page, root=root)
    assert data["tree"]["nodes"][0]["n"] == LOOP
    assert page.text_content("#selection-total") == str(data["tree"]["nodes"][0]["t"]) == "52"
    assert page.text_content("#selection-whole") == f"in the zoomed frame, of {data['total']}"
    # one level deeper
    child = max((n for n in data["tree"]["nodes"] if n["p"] == 0), key=lambda n: n["t"])
    spot = _spot(page, child["n"])
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 4")
    deeper = _flame(page, root=f"{root},{child['f']}")
    assert page.text_content("#selection-total") == str(deeper["tree"]["nodes"][0]["t"]) \
        == str(child["t"])
    # reset: the whole selection again
    page.click("#flame-reset")
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 1")
    assert page.text_content("#selection-total") == "975"
    assert page.is_hidden("#selection-whole")
    assert not page.errors


def _menu(page, name):
    # the views that load after the flame graph's answer, and those that load when they
    # are scrolled into view, change the page around the canvas (under load a
    # right-click aimed before they settled missed its frame): aimed once they are in
    _box(page)
    page.settle()
    box = page.locator("#flame-canvas").bounding_box()
    spot = _spot(page, name)
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"], button="right")
    page.wait_for_selector("#frame-menu:not([hidden])")
    assert page.text_content("#frame-menu .frame-menu-title") == name


def _clipboard(page):
    return page.evaluate("navigator.clipboard.readText()")


def test_the_frame_menu_copies_shows_in_the_call_tree_and_focuses(page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.base)
    _idle(page)
    nodes = _nested(_flame(page)["tree"])
    target = max((n for n in nodes if n["up"] and n["up"]["n"] == LOOP), key=lambda n: n["t"])
    chain = []
    n = target
    while n["up"]:
        chain.append(n)
        n = n["up"]
    chain.reverse()  # the root's child down to the target
    _menu(page, target["n"])
    assert page.eval_on_selector_all("#frame-menu button", "bs => bs.map(b => b.textContent)") \
        == ["Copy name", "Copy stack", "Show in call tree", "Focus on this function",
            # the call-tree transforms (tests/web/browser/test_transforms_browser.py)
            "Merge function", "Drop samples with this function", "Collapse library",
            "Collapse recursion"]
    page.click("#frame-menu [data-action=copy-name]")
    assert page.is_hidden("#frame-menu")
    assert _clipboard(page) == target["n"]
    _menu(page, target["n"])
    page.click("#frame-menu [data-action=copy-stack]")
    assert _clipboard(page) == "\n".join(c["n"] for c in chain)
    # Escape closes the menu and nothing else happens
    _menu(page, target["n"])
    page.keyboard.press("Escape")
    assert page.is_hidden("#frame-menu") and _crumbs(page) == ["all"]

    # zoomed to the loop, the stack still starts at the root
    box = _box(page)
    spot = _spot(page, LOOP)
    page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_function("() => document.querySelectorAll('#breadcrumbs .crumb').length === 3")
    _menu(page, target["n"])
    page.click("#frame-menu [data-action=copy-stack]")
    assert _clipboard(page) == "\n".join(c["n"] for c in chain)

    # the call tree, opened down to that frame, its row marked with the tree's numbers
    _menu(page, target["n"])
    page.click("#frame-menu [data-action=show-tree]")
    page.wait_for_selector("#calltree tr.marked")
    assert page.locator("#view-tabs button.active").text_content() == "Call tree"
    assert "view=topdown" in page.url
    row = page.locator("#calltree tr.marked")
    assert row.locator("td.fn span").text_content() == target["n"]
    assert row.locator("td").nth(3).text_content() == str(target["t"])
    assert row.get_attribute("data-key") == "/" + "/".join(str(c["f"]) for c in chain)
    shown = page.eval_on_selector_all("#calltree tbody tr", "rs => rs.map(r => r.dataset.key)")
    for i in range(1, len(chain)):  # every ancestor's row is there, open
        assert "/" + "/".join(str(c["f"]) for c in chain[:i]) in shown
    assert row.is_visible()

    # back in the flame graph: Focus
    page.click("#view-tabs button[data-view=flame]")
    page.wait_for_function("() => window.perfweb.frameCenter('%s') !== null" % target["n"])
    _menu(page, target["n"])
    page.click("#frame-menu [data-action=focus]")
    page.wait_for_selector("#callers-box:not([hidden])")
    assert page.text_content("#focus-label") == target["n"]
    assert f"focus={target['f']}" in page.url
    focused = _flame(page, focus=target["f"])
    assert page.evaluate("window.perfweb.flameView().total") == focused["callees"]["nodes"][0]["t"]
    # the focused view's call tree item is off (the tables are of the whole selection)
    _menu(page, target["n"])
    assert page.is_disabled("#frame-menu [data-action=show-tree]")
    page.keyboard.press("Escape")
    assert not page.errors


MEASURE = """(labels) => {
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = '12px system-ui, sans-serif';
    return labels.map((s) => ctx.measureText(s).width);
}"""


def _labels(page):
    frames = [f for f in page.evaluate("window.perfweb.drawnFrames()") if f["label"]]
    widths = page.evaluate(MEASURE, [f["label"] for f in frames])
    return frames, widths


def _check_labels(page, frames, widths):
    cut = 0
    for f, w in zip(frames, widths):
        assert w <= f["room"] + 1e-6, (f["name"], f["label"], w, f["room"])
        if f["label"] != f["name"]:
            cut += 1
            assert f["label"].endswith("…") and f["name"].startswith(f["label"][:-1]), f
    # a cut name ends between graphemes, never inside one (string indices in UTF-16)
    whole = page.evaluate("""(pairs) => pairs.map(([name, label]) => {
        const seg = new Intl.Segmenter(undefined, {granularity: 'grapheme'});
        const ends = [...seg.segment(name)].map((s) => s.index + s.segment.length);
        return ends.includes(label.length - 1);
    })""", [[f["name"], f["label"]] for f in frames if f["label"] != f["name"]])
    assert all(whole)
    return cut


def test_labels_fit_their_frames_with_an_ellipsis_and_the_tooltip_has_the_signature(
        page, member):
    _idle(page)
    frames, widths = _labels(page)
    assert len(frames) > 10
    assert _check_labels(page, frames, widths) >= 3
    # short names on the frames, the full signature in the tooltip
    nodes = _nested(_flame(page)["tree"])
    loop = _node(nodes, LOOP)
    assert loop["g"] == "qualla::ThreadPool::loop()"
    spot = _spot(page, LOOP)
    box = _box(page)
    drawn = _at(page, spot["x"], spot["y"])
    assert drawn["label"] in (LOOP, "") or LOOP.startswith(drawn["label"][:-1])
    assert "()" not in drawn["label"]
    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    page.wait_for_selector("#flame-tooltip:not([hidden])")
    assert page.text_content("#flame-tooltip strong") == LOOP
    assert page.text_content("#flame-tooltip .signature") == loop["g"]
    # a wheel zoom widens frames: their labels grow, and still fit
    page.mouse.wheel(0, -500)
    page.mouse.wheel(0, -500)
    page.wait_for_function("() => { const v = window.perfweb.flameView(); "
                           "return v.end - v.start < 975 * 0.2; }")
    frames, widths = _labels(page)
    _check_labels(page, frames, widths)
    assert _at(page, spot["x"], spot["y"])["label"] == LOOP  # wide enough now

    # names of combining accents and emoji sequences are cut between their graphemes
    accents = "e\u0301" * 60
    family = "\U0001F468\u200D\U0001F469\u200D\U0001F467" * 30
    folded = "".join(f"app;{name} {w}\n" for name, w in
                     [(accents, 40), (family, 30)] + [(f"fn{i}", 3) for i in range(40)])
    capture = _analyzed(member, "graphemes.folded", folded.encode(), "9.9.9", "graphemes")
    _open(page, capture)
    frames, widths = _labels(page)
    cut = {f["name"]: f["label"] for f in frames if f["label"] != f["name"]}
    assert accents in cut and family in cut
    assert _check_labels(page, frames, widths) >= 2
    assert not page.errors
