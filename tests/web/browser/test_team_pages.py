"""Share links, the service history and comparisons, as people use them in Chromium."""
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from perfweb.captures.models import Capture, ShareLink, ShareLinkUse

from ..conftest import SPINPOOL
from .test_capture_page import _upload_in_browser

pytestmark = pytest.mark.django_db(transaction=True)


def _fresh(browser):
    """A browser context that never signed in."""
    return browser.new_context(viewport={"width": 1280, "height": 900})


def test_share_link_opens_without_login_until_revoked(page, browser, worker_factory):
    worker_factory()
    _upload_in_browser(page, SPINPOOL / "1.0.0-idle.perf.data",
                       [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "kernel-symbols.zip",
                        SPINPOOL / "1.0.0-idle.perf.data.tar.bz2"])
    page.click("#sharing button[type=submit]")
    page.wait_for_selector("#share-links li")
    url = page.input_value("#share-links li input.share-url")
    assert url.startswith(page.base + "/s/")
    path = url[len(page.base):]
    token = path.strip("/").split("/")[-1]
    assert len(token.split(".")[1]) >= 22  # 128 bits or more, urlsafe base64

    context = _fresh(browser)
    guest = context.new_page()
    response = guest.goto(page.base + path)
    assert response.status == 200
    assert "Idle, yet 1.97 CPUs busy" in guest.text_content("#findings")
    guest.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    assert guest.text_content("#selection-total") == "975"
    assert guest.locator("text=Sign out").count() == 0
    assert guest.locator("#sharing").count() == 0  # read-only: no sharing controls
    (uses,) = ShareLinkUse.objects.filter(link__token=token.split(".")[1])
    assert uses.count >= 2 and uses.last_address == "127.0.0.1"  # the page and its data

    page.reload()
    page.click("#share-links button:has-text('Revoke')")
    page.wait_for_selector("#share-links li:has-text('revoked')")
    response = guest.goto(page.base + path)
    assert response.status == 410
    body = guest.text_content("main")
    assert "link no longer valid" in body.lower() and "1.97" not in body
    r = guest.request.get(f"{page.base}/s/{token}/data/flame.json")
    assert r.status == 410
    context.close()

    # an expired link is just as gone
    capture = Capture.objects.get()
    expired = ShareLink.objects.create(capture=capture, token="e" * 32,
                                       expires_at=timezone.now() - timedelta(minutes=1))
    context = _fresh(browser)
    assert context.new_page().goto(f"{page.base}/s/{expired.url_token}/").status == 410
    context.close()


def test_spinpool_history_and_comparison(page):
    call_command("load_demo", "--username", "alice")
    page.goto(page.base + "/")
    page.click("text=llm-api")
    page.wait_for_selector("#history[data-points='4']", state="attached", timeout=30000)
    assert page.title() == "llm-api · perfweb"
    assert page.locator("#compare-pick").count() == 1
    assert page.evaluate("document.getElementById('chart-cpus').data.length") == 2  # labels
    idle = page.evaluate("""() => document.getElementById('chart-cpus').data
        .find((t) => t.name === 'idle').y""")
    assert idle[0] > 1.9 and idle[1] == 0  # 1.0.0 spun, 1.1.0 sleeps
    rules = page.evaluate("""() => Object.fromEntries(document.getElementById('chart-rules')
        .data.map((t) => [t.name, t.y]))""")
    assert rules["spin-wait"][0] > 0 and rules["spin-wait"][1] == 0
    # the busy captures ran at 400 jobs/s: their throughput and CPU per job are charted
    assert page.is_visible("#rates")
    throughput = page.evaluate("""() => document.getElementById('chart-throughput').data
        .filter((t) => t.meta !== 'band').map((t) => [t.name, t.y, t.error_y.array])""")
    assert throughput == [["busy (jobs/s)", [400, 400], [0, 0]]]
    # each measured once: the band is what one run on a shared machine varies by
    band = page.evaluate("""() => document.getElementById('chart-throughput').data
        .filter((t) => t.meta === 'band').map((t) => t.y)""")
    assert band == [[520, 520], [pytest.approx(307.692308)] * 2]
    per_job = page.evaluate("""() => document.getElementById('chart-per-unit').data
        .filter((t) => t.meta !== 'band')
        .map((t) => t.y.map((v) => Math.round(v * 1000) / 1000))""")
    busy = page.evaluate("""() => document.getElementById('chart-cpus').data
        .find((t) => t.name === 'busy').y""")
    # (CPUs busy are charted rounded to 0.01: 1.971 -> 1.97)
    assert per_job == [pytest.approx([1000 * c / 400 for c in busy], rel=0.005)]

    before = Capture.objects.get(build__version="1.0.0", label="idle")
    after = Capture.objects.get(build__version="1.1.0", label="idle")
    page.select_option("#compare-pick select[name=a]", str(before.pk))
    page.select_option("#compare-pick select[name=b]", str(after.pk))
    page.click("#compare-pick button")
    page.wait_for_url(re.compile(rf".*/compare/{before.pk}/{after.pk}/$"))
    assert page.text_content("#cpus-change").strip() == "CPUs busy: 1.97 → 0.00 (−1.97)"
    assert page.text_content("#verdict-word") == "improvement"
    assert page.text_content("#verdict-reason") == (
        "Both captures are idle (no work), so every CPU used is waste: CPUs busy "
        "1.97 -> 0.00.")
    gone = page.eval_on_selector_all("#findings-gone li", "els => els.map(e => e.dataset.rule)")
    assert "spin-wait" in gone and "lock-contention" in gone
    assert page.text_content("#findings-appeared").strip() == "none"
    page.wait_for_selector("#diff[data-frames]", state="attached")
    assert int(page.get_attribute("#diff", "data-frames")) > 10
    assert page.locator("#movers tbody tr").count() > 5
    assert not page.errors

    # every finding has a permalink on the capture page
    page.goto(page.base + before.get_absolute_url())
    page.click("#finding-spin-wait a.permalink")
    assert page.url.endswith("#finding-spin-wait")

    # the capture page links to the same comparison
    page.goto(page.base + after.get_absolute_url())
    page.click("#compare-previous")
    page.wait_for_url(re.compile(rf".*/compare/{before.pk}/{after.pk}/$"))

    # with rates (the busy captures ran 400 jobs/s): judged by CPU per job
    spun = Capture.objects.get(build__version="1.0.0", label="busy")
    fixed = Capture.objects.get(build__version="1.1.0", label="busy")
    page.goto(page.base + f"/compare/{spun.pk}/{fixed.pk}/")
    assert page.text_content("#verdict-word") == "improvement"
    assert page.text_content("#verdict-reason").startswith(
        "CPU per job -84% (4.93 ms -> 790 µs of CPU per job) at 400 -> 400 jobs/s")
    assert page.text_content("#rate-before").strip() == "400 jobs/s"
    assert page.text_content("#per-unit-before").strip() == "4.928 ms"
    assert page.text_content("#per-unit-change").strip() == "−84.0%"
    # the capture page says it too, and the service page's history shows the rate
    page.goto(page.base + fixed.get_absolute_url())
    assert page.text_content("#capture-verdict").startswith("Against 1.0.0 busy: improvement.")
    page.goto(page.base + "/")
    page.click("text=llm-api")
    page.wait_for_selector("#history[data-points='4']", state="attached", timeout=30000)
    hover = page.evaluate("""() => document.getElementById('chart-cpus').data
        .find((t) => t.name === 'busy').text""")
    assert hover[1] == ("capture %d · 400 jobs/s · 0.791 ms CPU per job · improvement vs "
                        "previous build" % fixed.pk)
    assert page.locator(f"a.verdict-chip.verdict-improvement").count() == 2
    assert not page.errors


def test_upload_page_says_why_an_upload_is_refused(page, settings):
    settings.PERFWEB_MAX_UPLOAD_BYTES = 100
    page.goto(f"{page.base}/upload/")
    page.set_input_files("#id_capture", str(SPINPOOL / "1.1.0-busy.perf.data"))
    page.fill("#id_service", "llm-api")
    page.fill("#id_version", "1.0.0")
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('may be 100 bytes each')")
    settings.PERFWEB_MAX_UPLOAD_BYTES = 10000
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(
        "#upload-status:has-text('capture: 1.1.0-busy.perf.data is 18,836 bytes (18.4 KiB)')")
    settings.PERFWEB_MAX_UPLOAD_BYTES = 1 << 30
    settings.PERFWEB_USER_QUOTA_BYTES = 5000
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(
        "#upload-status:has-text('over your quota of 5,000 bytes (4.9 KiB)')")
    assert Capture.objects.count() == 0
