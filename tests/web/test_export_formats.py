"""pprof and Firefox Profiler downloads through the API and the page's links: a member gets
the files (of the whole capture and of an explorer selection, with the explorer's totals,
which are perf script's for that thread and time range), an outsider a 404, a share link no export route, a query the explorer refuses a sentence
(400). One analysis of the spinpool 1.0.0 busy capture with its symbols."""
from collections import Counter

import pytest

from analysis.export.firefox import read_firefox
from analysis.export.pprof import function_totals, read_pprof
from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Membership, ShareLink, Team
from script_selection import script_selection

from .conftest import SPINPOOL, spinpool
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
    assert r.status_code == 200
    assert r["Content-Type"] == "application/gzip"
    assert r["Content-Disposition"] == f'attachment; filename="capture-{c.pk}.pb.gz"'
    total, msg = _samples(r.getvalue())
    assert total == 973  # perf report: "# Samples: 973 of event 'cpu-clock:ppp'"
    strings = msg.string_table
    assert [(strings[t.type], strings[t.unit]) for t in msg.sample_type] == \
        [("samples", "count"), ("cpu", "nanoseconds")]
    # perf report: "Event count (approx.): 9828282730"
    assert sum(s.value[1] for s in msg.sample) == 9828282730

    r = client.get(f"{api}/firefox/", **_auth(key))
    assert r.status_code == 200 and r["Content-Type"] == "application/gzip"
    gecko = read_firefox(r.getvalue())
    assert sum(len(t["samples"]["data"]) for t in gecko["threads"]) == 973

    # a selection: the explorer's busiest thread in its first two seconds
    client.force_login(alice)
    threads = client.get(f"/captures/{c.pk}/data/threads.json?start=0&end=2").json()
    # perf script's own samples of each worker in [t0, t0 + 2 s), t0 its first sample
    script = SPINPOOL / "1.0.0-busy.truth-script.txt"
    perf = {tid: script_selection(script, {tid}, 0, 2) for tid in (18192, 18193)}
    assert {t["tid"]: t["samples"] for t in threads["threads"]} == \
        {tid: n for tid, (n, _, _) in perf.items()} == {18192: 193, 18193: 197}
    busiest = max(threads["threads"], key=lambda t: t["samples"])
    q = f"tids={busiest['tid']}&start=0&end=2"
    flame = client.get(f"/captures/{c.pk}/data/flame.json?{q}").json()
    assert (busiest["tid"], flame["total"]) == (18193, busiest["samples"]) == (18193, 197)
    r = client.get(f"{api}/pprof/?{q}", **_auth(key))
    assert r.status_code == 200
    assert r["Content-Disposition"] == \
        f'attachment; filename="capture-{c.pk}-selection.pb.gz"'
    total, msg = _samples(r.getvalue())
    assert total == flame["total"] == 197
    # each function perf script names: the samples whose stack holds it and those it is
    # the leaf of, as in perf's stacks. perf names the symbol holding an address, a
    # location's last line (the lines before it are the calls inlined there: glibc's
    # inline futex_wait is not the kernel's)
    _, perf_totals, perf_leaves = perf[18193]
    names = {f.id: msg.string_table[f.name] for f in msg.function}
    holder = {loc.id: loc.line[-1].function_id for loc in msg.location}
    cum, leaves = Counter(), Counter()
    for s in msg.sample:
        cum.update({names[holder[lid]]: s.value[0] for lid in s.location_id})
        leaves[names[holder[s.location_id[0]]]] += s.value[0]
    assert {k: cum[k] for k in perf_totals} == dict(perf_totals)
    assert {k: leaves[k] for k in perf_leaves} == dict(perf_leaves)
    assert cum["futex_wait"] == perf_totals["futex_wait"] == 24
    # and the explorer's functions table of the selection: total is pprof's cum (each
    # function once per sample, inlined ones too); self, like perf's, goes to the symbol
    # holding the leaf's address (pprof's flat to the inlined callee: README, Exports)
    table = client.get(f"/captures/{c.pk}/data/functions.json?{q}").json()
    assert table["total"] == 197
    self_ids = Counter()
    for s in msg.sample:
        self_ids[holder[s.location_id[0]]] += s.value[0]
    cum_ids = function_totals(msg)[1]
    assert {fid: (self_ids[fid], cum_ids[fid]) for fid in cum_ids} == \
        {f["f"] + 1: (f["s"], f["t"]) for f in table["functions"]}
    assert msg.duration_nanos == 2_000_000_000
    # the page's link (a session, the same route the export menu links to)
    r = client.get(f"/captures/{c.pk}/export/firefox/?{q}")
    assert r.status_code == 200
    gecko = read_firefox(r.getvalue())
    assert [(t["tid"], len(t["samples"]["data"])) for t in gecko["threads"]] == \
        [(busiest["tid"], flame["total"])]
    page = client.get(f"/captures/{c.pk}/").content.decode()
    assert f'href="/captures/{c.pk}/export/pprof/"' in page
    assert f'href="/captures/{c.pk}/export/firefox/"' in page
    assert page.count("data-export-selection") == 2 and page.count("data-export-shown") == 2

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
