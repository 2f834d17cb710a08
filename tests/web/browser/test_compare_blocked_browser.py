"""The compare page's "Blocked time" table in Chromium: gateway 1.0 -> 1.1 (1.1 takes a
global mutex in Worker::on_readable; both recorded with context switches, at 1803.44 and
1563.45 req/s) analyzed by a real worker; the lock's row is shown with its share of the
threads' time, seconds per second and milliseconds per request."""
import pytest
from django.urls import reverse

from ..test_compare_blocked import upload_both

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_compare_page_shows_the_lock_row(page, client, member, worker_factory,
                                             tmp_path):
    worker_factory()
    client.force_login(member)
    before, after = upload_both(client)

    page.goto(page.base + reverse("compare", args=[before.pk, after.pk]))
    assert page.text_content("#verdict-word") == "regression"
    assert "gateway::Worker::on_readable 0.0% -> 33.9%" in page.text_content(
        "#verdict-reason")
    table = page.locator("#blocked")
    assert table.is_visible()
    headers = [h.strip() for h in table.locator("thead th").all_text_contents()]
    assert headers == ["Kind", "Where", "Before", "After", "Change",
                       "Seconds per second", "Per request"]
    rows = table.locator("tbody tr")
    assert rows.count() == 1  # the event loop's wait did not move: not shown
    lock = rows.first
    assert lock.is_visible() and lock.get_attribute("data-kind") == "lock"
    cells = [c.strip() for c in lock.locator("td").all_text_contents()]
    assert cells == ["lock", "gateway::Worker::on_readable", "0%", "33.9%", "+33.9 pp",
                     "0.00 → 1.02 s/s", "0 → 0.651 ms"]
    # the table stays inside its card
    card = page.locator("#verdict").bounding_box()
    box = table.bounding_box()
    assert box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"]
    page.screenshot(path=str(tmp_path / "compare-blocked.png"), full_page=True)
    assert page.errors == [] and page.dialogs == []
