"""Crafted searches and deep stacks, in the browser of whoever opens the link (issue 12).

The page compiled the URL's ?search= as a JavaScript RegExp, which backtracks: a shared
link with `^(.|.)*#` froze the tab of its reader. Trees were walked recursively: a deep
stack overflowed the browser's call stack (and the server's first).
"""
import gzip
import re
import urllib.parse

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from perfweb.captures import services
from perfweb.captures.models import Capture, Membership, ShareLink
from perfweb.captures.uploads import store_upload

from ..conftest import SPINPOOL

pytestmark = pytest.mark.django_db(transaction=True)

MATCH_RGB = (238, 43, 238)  # colors.js MATCH_COLOR, hsl(300, 85%, 55%)


def _analyzed(user, name, data, version, label="idle", symbols=()):
    team = Membership.objects.get(user=user).team
    c, _ = store_upload(user, team, {
        "service": "llm-api", "version": version, "label": label,
        "capture": SimpleUploadedFile(name, data), "symbols_for_build": True,
        "symbols": [SimpleUploadedFile(s.name, s.read_bytes()) for s in symbols]})
    services.run_analysis(c.pk)
    c = Capture.objects.get(pk=c.pk)
    assert c.status == "done", c.error
    return c


def _spinpool(member):
    return _analyzed(member, "1.0.0-idle.perf.data",
                     (SPINPOOL / "1.0.0-idle.perf.data").read_bytes(), "1.0.0",
                     symbols=[SPINPOOL / "symbols-1.0.0.zip",
                              SPINPOOL / "1.0.0-idle.perf.data.tar.bz2"])


def _pixel(page, name, canvas="flame-canvas"):
    """The colour of a frame's box, above its text."""
    return tuple(page.evaluate("""([name, id]) => {
        const spot = window.perfweb.frameCenter(name);
        const c = document.getElementById(id);
        const dpr = c.width / c.clientWidth;
        const d = c.getContext("2d").getImageData(
            Math.round(spot.x * dpr), Math.round((spot.y - 8) * dpr), 1, 1).data;
        return [d[0], d[1], d[2]];
    }""", [name, canvas]))


def test_a_crafted_search_in_a_shared_link_does_not_freeze_the_page(page, browser, member):
    capture = _spinpool(member)
    link = ShareLink.objects.create(capture=capture, token="s" * 32, created_by=member)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    guest = context.new_page()
    errors = []
    guest.on("pageerror", lambda e: errors.append(str(e)))
    for pattern in ("^(.|.)*#", "^(.|.){0,40}#"):
        q = urllib.parse.urlencode({"search": pattern})
        guest.goto(f"{page.base}/s/{link.url_token}/?{q}", timeout=15000)
        # a RegExp would still be backtracking through the first name here
        guest.wait_for_selector("#explorer[data-flame-total]", state="attached",
                                timeout=10000)
        guest.wait_for_selector("#flame-share:has-text('matches')", timeout=10000)
        assert guest.text_content("#flame-share") == \
            f"“{pattern}” matches 0 samples (0.00% of the selection)"
        assert guest.text_content("#selection-total") == "975"
    # what RE2 cannot run is said on the page, and the flame graph is still drawn
    guest.goto(f"{page.base}/s/{link.url_token}/?search=" + urllib.parse.quote(r"(\w)\1"))
    guest.wait_for_selector("#flame-share.error", timeout=10000)
    assert "backreferences and lookaround are not supported" in \
        guest.text_content("#flame-share")
    assert guest.text_content("#selection-total") == "975"
    assert errors == []
    context.close()


def test_regex_matches_come_from_the_server(page, member):
    capture = _spinpool(member)
    page.goto(f"{page.base}/captures/{capture.pk}/")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached")
    loop = "qualla::ThreadPool::loop"
    assert _pixel(page, loop) != MATCH_RGB
    page.fill("#flame-search", r"Pool::lo+p$")  # no frame holds this text as typed
    page.wait_for_selector("#flame-share:has-text('matches 52 samples')")
    assert _pixel(page, loop) == MATCH_RGB  # the ids the server's RE2 matched
    page.fill("#flame-search", "libqualla")  # text: highlighted before any answer
    assert _pixel(page, loop) != MATCH_RGB
    assert page.errors == []


def _deep_folded(frames, root="main"):
    return gzip.compress((f"{root};work 2\n" + f"{root};" + "recurse;" * frames
                          + "leaf 1\n").encode(), 1)


def test_deep_stacks_draw_zoom_and_compare(page, member):
    small = _analyzed(member, "deep.folded.gz", _deep_folded(5000), "1.0.0", "deep")
    big = _analyzed(member, "deeper.folded.gz", _deep_folded(2_000_000), "2.0.0", "deep")
    page.goto(f"{page.base}/captures/{small.pk}/")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached")
    assert page.text_content("#selection-total") == "3"
    deeper = "[deeper frames: click the frame above to zoom in]"
    spot = page.evaluate("(n) => window.perfweb.frameCenter(n)", deeper)
    assert spot and spot["total"] == 1
    # the frame right below the cut is the 1,000th level: zoom there, see what follows
    page.locator("#flame-canvas").click(position={"x": spot["x"], "y": spot["y"] + 18})
    page.wait_for_selector("#breadcrumbs .crumb:nth-child(1001)")  # all, 1,000 frames
    assert page.evaluate("(n) => window.perfweb.frameCenter(n)", deeper)["total"] == 1
    root = re.search(r"root=([\d,%C]+)", page.url).group(1)
    assert len(urllib.parse.unquote(root).split(",")) == 1000
    page.click("#view-tabs button[data-view=topdown]")
    page.wait_for_selector("#calltree tbody tr")
    assert page.locator("#calltree tbody tr").first.locator("td").nth(3).text_content() == "3"

    page.goto(f"{page.base}/compare/{small.pk}/{big.pk}/")
    page.wait_for_selector("#diff[data-frames]", state="attached")
    assert int(page.get_attribute("#diff", "data-frames")) > 1000
    assert page.errors == []


def test_a_busy_server_is_asked_again(page, browser, member, settings, tmp_path):
    """Every compute slot taken (as by other requests): the shared page's data requests
    get 429 with Retry-After: 1, and the page asks again until a slot frees, then draws
    its flame graph, without an error (issue 33)."""
    import fcntl
    import os
    import threading
    capture = _spinpool(member)
    link = ShareLink.objects.create(capture=capture, token="b" * 32, created_by=member)
    settings.PERFWEB_COMPUTE_SLOTS = 1
    settings.PERFWEB_COMPUTE_SLOTS_DIR = str(tmp_path)
    fd = os.open(tmp_path / "0", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    refused = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    guest = context.new_page()
    errors = []
    guest.on("pageerror", lambda e: errors.append(str(e)))
    guest.on("response", lambda r: r.status == 429 and refused.append(r.url))
    release = threading.Timer(3.0, os.close, args=(fd,))
    release.start()
    try:
        guest.goto(f"{page.base}/s/{link.url_token}/", timeout=15000)
        guest.wait_for_selector("#explorer[data-flame-total]", state="attached",
                                timeout=30000)
    finally:
        release.join()
    assert any("/data/flame.json" in url for url in refused)
    assert guest.text_content("#selection-total") == "975"
    assert errors == []
    context.close()
