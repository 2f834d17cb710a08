"""Blocked time on the compare page: gateway 1.0 and 1.1 (1.1 takes a global mutex in
Worker::on_readable), recorded with `perf record -g --switch-events -e sched:sched_switch`
under wrk at 1803.44 and 1563.45 req/s, uploaded as two builds of one service (the perf
script text, gzip-compressed, as committed) and analyzed by a real Celery worker. The
comparison names the lock; the page shows it in the "Blocked time" table, escaped."""
from pathlib import Path

import pytest
from django.urls import reverse

from perfweb.captures.models import Capture
from perfweb.captures.team_views import blocked_rows

from .conftest import wait_for
from .test_pipeline import _status, _upload

pytestmark = pytest.mark.django_db(transaction=True)

MUTEX = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "cpp-server-mutex"
BUILDS = (("1.0", "1803.44"), ("1.1", "1563.45"))


def _analyzed(client, version, rate):
    r = _upload(client, MUTEX / f"{version}.perf.data.script.txt.gz", service="gateway",
                version=version, label="load test", rate=rate, rate_unit="req/s")
    assert r.status_code == 302, r.content[:500]
    capture = Capture.objects.order_by("-pk").first()
    done = wait_for(lambda: _status(capture.pk), timeout=180)
    assert done.status == "done", done.error
    return done


def upload_both(client):
    """The two gateway builds analyzed: (1.0, 1.1)."""
    return tuple(_analyzed(client, v, rate) for v, rate in BUILDS)


def test_the_lock_is_named_in_the_blocked_table(client, member, worker_factory):
    worker_factory()
    client.force_login(member)
    before, after = upload_both(client)
    assert after.latest_result().report["off_cpu"]["timed"]

    cmp = client.get(f"/api/v1/captures/{after.pk}/compare/").json()
    assert cmp["before"]["id"] == before.pk and cmp["after"]["id"] == after.pk
    assert cmp["verdict"] == "regression"
    assert "blocked: lock waits under gateway::Worker::on_readable 0.0% -> 33.9%" \
        in cmp["reason"]
    lock = next(r for r in cmp["blocked"] if r["kind"] == "lock")
    assert not lock["benign"]
    assert (lock["before"], lock["after"], lock["change"]) == (0.0, 33.92, 33.92)
    assert round(lock["after"], 1) == 33.9
    assert lock["under"][0] == "gateway::Worker::on_readable"
    assert lock["unit"] == "request"
    assert lock["per_second_before"] == 0.0 and round(lock["per_second_after"], 2) == 1.02
    # 1.02 s blocked per second at 1563.45 req/s
    assert lock["per_unit_after"] == pytest.approx(lock["per_second_after"] / 1563.45)
    # the pipeline stored the same comparison with the new build
    stored = after.latest_result().comparison
    assert stored["verdict"] == "regression" and stored["blocked"] == cmp["blocked"]

    page = client.get(reverse("compare", args=[before.pk, after.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    table = html[html.index('<table id="blocked">'):]
    table = table[:table.index("</table>")]
    assert "Blocked time" in html
    assert '<tr class="blocked-row" data-kind="lock">' in table
    assert "gateway::Worker::on_readable" in table
    assert "<td>0%</td><td>33.9%</td><td>+33.9 pp</td>" in table
    assert "0.00 → 1.02 s/s" in table
    assert "<th>Per request</th>" in table and "0 → 0.651 ms" in table
    # benign kinds that did not move a point (the event loop's wait) are left out
    assert "event wait" not in table and "waiting for work" not in table


def _row(**over):
    row = {"kind": "lock", "benign": False, "before": 0.0, "after": 33.92, "change": 33.92,
           "per_second_before": 0.0, "per_second_after": 1.017593,
           "under": ["gateway::Worker::on_readable"]}
    return dict(row, **over)


def test_which_rows_are_shown_and_how():
    rows = blocked_rows([
        _row(),
        _row(kind="event wait", benign=True, before=2.88, after=2.88, change=0.01,
             under=[]),
        _row(kind="idle", benign=True, before=40.0, after=20.0, change=-20.0,
             per_second_before=1.2, per_second_after=0.6, under=[]),
        _row(kind="disk", before=1.0, after=1.02, change=0.02, per_second_before=0.003,
             per_second_after=0.0031, under=[])])
    assert [r["kind"] for r in rows] == ["lock", "idle", "disk"]
    lock, idle, disk = rows
    assert (lock["where"], lock["before"], lock["after"], lock["change"]) == \
        ("gateway::Worker::on_readable", "0%", "33.9%", "+33.9 pp")
    assert (idle["benign"], idle["change"], idle["where"]) == (True, "−20.0 pp", "")
    assert (disk["change"], disk["per_second_before"]) == ("+0.02 pp", "0.003")
    assert lock["per_unit"] is None and lock["unit"] == ""
    # per unit of work in one scale per row
    (r,) = blocked_rows([_row(per_unit_before=4.8e-05, per_unit_after=5.5e-05,
                              unit="request")])
    assert r["per_unit"] == ("48", "55", "µs") and r["unit"] == "request"
    (r,) = blocked_rows([_row(per_unit_before=0.0, per_unit_after=0.00065086,
                              unit="job")])
    assert r["per_unit"] == ("0", "0.651", "ms")
    assert blocked_rows([]) == []


def test_names_from_uploads_are_escaped_and_older_comparisons_show_nothing(
        client, member, monkeypatch):
    """The template escapes the kind and the function name; a comparison without
    `blocked` (stored before off-CPU data) or with none has no table."""
    from django.template.loader import render_to_string
    evil = "<img/src=x/onerror=alert(1)>"
    rows = blocked_rows([_row(under=[evil]),
                         _row(kind=f"{evil}k", benign=True, change=5.0, under=[])])
    cmp = {"verdict": "regression", "reason": "r", "rates": {}, "cpu_per_unit": {},
           "movers": {"functions": [], "dsos": []}, "tree": {"a": 0, "b": 0, "nodes": []},
           "findings_gone": [], "findings_appeared": []}

    def page(**extra):
        before = after = {"build": {"service": {"name": "s"}, "version": "1"}, "label": ""}
        return render_to_string("captures/compare.html",
                                {"before": before, "after": after, "cmp": cmp, **extra})
    html = page(blocked_rows=rows, blocked_unit="")
    assert evil not in html
    assert "&lt;img/src=x/onerror=alert(1)&gt;" in html
    assert "(waiting for work)" in html and "blocked-benign note" in html
    for older in (page(), page(blocked_rows=blocked_rows([]))):
        assert 'id="blocked"' not in older and "Blocked time" not in older
