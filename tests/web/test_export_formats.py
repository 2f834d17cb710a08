"""pprof and Firefox Profiler downloads through the API and the page's links: a member gets
the files (of the whole capture and of an explorer selection, with the explorer's totals),
an outsider a 404, a share link no export route, a query the explorer refuses a sentence
(400). One analysis of the spinpool 1.0.0 busy capture with its symbols."""
import pytest

from analysis.export.firefox import read_firefox
from analysis.export.pprof import read_pprof
from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Membership, ShareLink, Team

from .conftest import spinpool
from .test_api import _auth

pytestmark = pytest.mark.django_db(transaction=True)


def _samples(pprof_bytes):
    msg = read_pprof(pprof_bytes)
    return sum(s.value[0] for s in msg.sample), msg


def test_pprof_and_firefox_downloads(client, django_user_model, outsider):
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    team = Team.objects.create(name="inference")
    Membership.objects.create(team=team, user=alice)
    c = spinpool(alice, "1.0.0", "busy")
    key = create_token(alice, "ci")
    api = f"/api/v1/captures/{c.pk}/export"

    r = client.get(f"{api}/pprof/", **_auth(key))
    assert r.status_code == 200, r.content
    assert r["Content-Type"] == "application/gzip"
    assert r["Content-Disposition"] == f'attachment; filename="capture-{c.pk}.pb.gz"'
    total, msg = _samples(r.content)
    assert total == 973  # perf report: "# Samples: 973 of event 'cpu-clock:ppp'"
    strings = msg.string_table
    assert [(strings[t.type], strings[t.unit]) for t in msg.sample_type] == \
        [("samples", "count"), ("cpu", "nanoseconds")]
    # perf report: "Event count (approx.): 9828282730"
    assert sum(s.value[1] for s in msg.sample) == 9828282730

    r = client.get(f"{api}/firefox/", **_auth(key))
    assert r.status_code == 200 and r["Content-Type"] == "application/gzip"
    gecko = read_firefox(r.content)
    assert sum(len(t["samples"]["data"]) for t in gecko["threads"]) == 973

    # a selection: the explorer's busiest thread in its first two seconds
    client.force_login(alice)
    threads = client.get(f"/captures/{c.pk}/data/threads.json?start=0&end=2").json()
    busiest = max(threads["threads"], key=lambda t: t["samples"])
    q = f"tids={busiest['tid']}&start=0&end=2"
    flame = client.get(f"/captures/{c.pk}/data/flame.json?{q}").json()
    assert 0 < flame["total"] == busiest["samples"] < 973
    r = client.get(f"{api}/pprof/?{q}", **_auth(key))
    assert r.status_code == 200
    assert r["Content-Disposition"] == \
        f'attachment; filename="capture-{c.pk}-selection.pb.gz"'
    assert _samples(r.content)[0] == flame["total"]
    assert _samples(r.content)[1].duration_nanos == 2_000_000_000
    # the page's link (a session, the same route the export menu links to)
    r = client.get(f"/captures/{c.pk}/export/firefox/?{q}")
    assert r.status_code == 200
    gecko = read_firefox(r.content)
    assert [(t["tid"], len(t["samples"]["data"])) for t in gecko["threads"]] == \
        [(busiest["tid"], flame["total"])]
    page = client.get(f"/captures/{c.pk}/").content.decode()
    assert f'href="/captures/{c.pk}/export/pprof/"' in page
    assert f'href="/captures/{c.pk}/export/firefox/"' in page
    assert page.count("data-export-selection") == 2

    # what the explorer refuses is a sentence, not a file or a 500
    r = client.get(f"{api}/pprof/?tf=zz-1", **_auth(key))
    assert r.status_code == 400 and "Transform" in r.json()["detail"]
    r = client.get(f"/captures/{c.pk}/export/firefox/?view=off-cpu")
    assert r.status_code == 400 and b"context switches" in r.content
    r = client.get(f"{api}/pprof/?event=7", **_auth(key))
    assert r.status_code == 400 and r.json()["detail"] == "no such event"

    # an outsider: no such capture, through the API or the page
    other = create_token(outsider, "other")
    client.force_login(outsider)
    for fmt in ("pprof", "firefox"):
        assert client.get(f"{api}/{fmt}/", **_auth(other)).status_code == 404
        assert client.get(f"/captures/{c.pk}/export/{fmt}/").status_code == 404
    # a share link shows no export (as for the other formats) and has no export route
    client.logout()
    link = ShareLink.objects.create(capture=c, token="t" * 32, created_by=alice)
    shared = client.get(f"/s/{link.url_token}/").content.decode()
    assert "export/pprof" not in shared and "data-export-selection" not in shared
    assert client.get(f"/s/{link.url_token}/export/pprof/").status_code == 404
    assert client.get(f"/captures/{c.pk}/export/pprof/").status_code == 302  # sign in
