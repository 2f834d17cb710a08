"""A share link's uses are one row per link and day (issue 33): every request through a
link used to write a row of its own, so a link opened in a loop grew the table without
bound. The rows are updated in place, concurrent first uses of a day make one row, the
capture page lists them for the owner, and the migration folds the rows of old."""
import threading
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from perfweb.captures.models import ShareLink, ShareLinkUse
from perfweb.captures.services.share_uses import record_use

from .conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def link(member):
    capture = spinpool(member, "1.0.0", "idle")
    return ShareLink.objects.create(capture=capture, token="u" * 32, created_by=member)


def test_uses_are_counted_per_link_and_day(link, member):
    guest = Client()
    token = link.url_token
    for i in range(30):
        addr = f"198.51.100.{i % 10}"
        assert guest.get(reverse("shared-data", args=[token, "threads"]),
                         REMOTE_ADDR=addr, HTTP_USER_AGENT=f"agent {i}").status_code == 200
    assert guest.get(reverse("shared", args=[token]), REMOTE_ADDR="2001:db8::1",
                     HTTP_USER_AGENT="last one").status_code == 200
    # a refused token counts nothing
    assert guest.get(reverse("shared", args=[f"{link.pk}.{'x' * 32}"])).status_code == 410
    (row,) = ShareLinkUse.objects.filter(link=link)
    assert row.count == 31 and row.day == row.last_at.date() == row.first_at.date()
    assert row.first_at <= row.last_at
    assert (row.last_address, row.last_user_agent) == ("2001:db8::1", "last one")
    # the first 8 distinct addresses, and that others came
    assert row.address_list() == [f"198.51.100.{i}" for i in range(8)]
    assert row.address_count == 8 and row.more_addresses

    # another day: a row of its own; the page lists both, with the total
    tomorrow = row.last_at + timedelta(days=1)
    record_use(link, "203.0.113.5", "curl/8", tomorrow)
    record_use(link, "203.0.113.5", "curl/8", tomorrow)
    days = list(ShareLinkUse.objects.filter(link=link).order_by("day"))
    assert [(d.count, d.address_list(), d.more_addresses) for d in days] == \
        [(31, row.address_list(), True), (2, ["203.0.113.5"], False)]
    owner = Client()
    owner.force_login(member)
    page = owner.get(reverse("capture", args=[link.capture.pk])).content.decode()
    assert "used 33 time(s)" in page
    assert "198.51.100.7 and others" in page and "203.0.113.5" in page


def test_first_uses_of_a_day_at_once_make_one_row(link):
    """Eight threads, each with its own database connection, all using the link for the
    first time of the day at once: one row, every use counted."""
    now = datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
    start = threading.Barrier(8)
    errors = []

    def use(n):
        try:
            start.wait()
            for k in range(10):
                record_use(link, f"192.0.2.{n}", "t", now + timedelta(seconds=k))
        except Exception as e:  # (reported below: an exception in a thread is lost)
            errors.append(e)
        finally:
            connection.close()
    threads = [threading.Thread(target=use, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    (row,) = ShareLinkUse.objects.filter(link=link, day=now.date())
    assert row.count == 80 and row.address_count == 8 and not row.more_addresses
    assert sorted(row.address_list()) == sorted(f"192.0.2.{n}" for n in range(8))


def test_the_migration_folds_rows_per_request_into_days(link):
    """Back to the migration before, rows per request as they were written, then
    forward: one row per link and day with their count, first and last use and
    addresses."""
    executor = MigrationExecutor(connection)
    (mine,) = [key for key in executor.loader.disk_migrations
               if key[0] == "captures" and key[1].endswith("_share_link_daily_use")]
    after = [mine]
    before = [dep for dep in executor.loader.get_migration(*mine).dependencies
              if dep[0] == "captures"]
    executor.migrate(before)
    try:
        _fold_rows_of_old(executor, before, after, link)
    finally:  # every migration again, those after this one too, for the next tests
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _fold_rows_of_old(executor, before, after, link):
    old = executor.loader.project_state(before).apps
    Use = old.get_model("captures", "ShareLinkUse")
    day1 = datetime(2030, 1, 2, 23, 0, tzinfo=timezone.utc)
    # every two minutes from 23:00: 30 uses on the 2nd, 20 on the 3rd
    rows = [(day1 + timedelta(minutes=2 * k), f"10.0.0.{k % 12}", f"ua{k}") for k in range(50)]
    for at, addr, ua in rows:
        u = Use.objects.create(link_id=link.pk, path="/s/x/", remote_addr=addr,
                               user_agent=ua)
        Use.objects.filter(pk=u.pk).update(at=at)  # (auto_now_add on create)
    MigrationExecutor(connection).migrate(after)
    first, second = ShareLinkUse.objects.filter(link=link).order_by("day")
    assert (first.day.isoformat(), first.count, first.first_at, first.last_at) == \
        ("2030-01-02", 30, day1, day1 + timedelta(minutes=58))
    assert first.address_list() == [f"10.0.0.{k}" for k in range(8)] and first.more_addresses
    assert (first.last_address, first.last_user_agent) == ("10.0.0.5", "ua29")
    assert (second.day.isoformat(), second.count, second.first_at) == \
        ("2030-01-03", 20, day1 + timedelta(minutes=60))
    assert second.address_list() == [f"10.0.0.{k}" for k in (6, 7, 8, 9, 10, 11, 0, 1)]
    assert (second.last_address, second.last_user_agent, second.address_count) == \
        ("10.0.0.1", "ua49", 8)
