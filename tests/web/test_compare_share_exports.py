"""A comparison's downloads and share links (issue 38): the spinpool service's 1.0.0 and
1.1.0 busy captures (perf's own report: 973 and 154 samples), analysed with their builds'
symbols. A team member downloads the comparison as JSON, CSV, Markdown and differential
folded stacks, from the page and the API; a share link shows the comparison, its data and
downloads to someone without an account, and nothing of either capture's explorer."""
import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from perfweb.captures.models import ShareLink

from .conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pair(member):
    return spinpool(member, "1.0.0", "busy"), spinpool(member, "1.1.0", "busy")


def _body(r) -> str:
    return (b"".join(r.streaming_content) if r.streaming else r.content).decode()


def test_the_team_downloads_the_comparison(client, member, pair):
    before, after = pair
    client.force_login(member)
    data = client.get(reverse("compare-data", args=[before.pk, after.pk])).json()
    assert data["title"] == "llm-api: 1.0.0 busy -> 1.1.0 busy"

    r = client.get(reverse("compare-export", args=[before.pk, after.pk, "json"]))
    assert r.status_code == 200 and r["Content-Type"] == "application/json"
    assert r["Content-Disposition"] == \
        f'attachment; filename="compare-{before.pk}-{after.pk}.json"'
    exported = json.loads(_body(r))
    assert exported["verdict"] == data["verdict"] == "improvement"
    assert exported["movers"] == data["movers"]

    rows = list(csv.DictReader(io.StringIO(_body(client.get(
        reverse("compare-export", args=[before.pk, after.pk, "csv"]))))))
    functions = [r for r in rows if r["kind"] == "function"]
    assert len(functions) == len(data["movers"]["functions"])
    assert len(rows) - len(functions) == len(data["movers"]["dsos"])
    first = data["movers"]["functions"][0]
    assert (functions[0]["name"], float(functions[0]["self_change"]),
            float(functions[0]["self_noise"])) == \
        (first["name"], first["self_change"], first["self_noise"])

    md = _body(client.get(reverse("compare-export", args=[before.pk, after.pk, "markdown"])))
    assert md.startswith("## llm\\-api: 1\\.0\\.0 busy \\-\\> 1\\.1\\.0 busy\n\n"
                         "**Verdict: improvement.** ")
    assert "| CPUs busy | " in md and "### Functions that moved beyond sampling noise" in md

    folded = _body(client.get(reverse("compare-export",
                                      args=[before.pk, after.pk, "diff-folded"])))
    lines = folded.splitlines()
    # every sample of both captures, as perf report counts them (# Samples: 973, 154)
    assert sum(int(line.rsplit(" ", 2)[1]) for line in lines) == 973
    assert sum(int(line.rsplit(" ", 2)[2]) for line in lines) == 154
    assert all(line.count(" ") >= 2 for line in lines)

    # the API answers the same files, with ?with= or the previous build by default
    api = client.get(f"/api/v1/captures/{after.pk}/compare/export/csv/")
    assert api.status_code == 200 and _body(api) == _body(
        client.get(reverse("compare-export", args=[before.pk, after.pk, "csv"])))
    assert client.get(f"/api/v1/captures/{after.pk}/compare/export/xls/").status_code == 400
    assert client.get(reverse("compare-export", args=[before.pk, after.pk, "xls"])
                      ).status_code == 404
    # the page links every download
    page = client.get(reverse("compare", args=[before.pk, after.pk])).content.decode()
    for fmt in ("json", "csv", "markdown", "diff-folded"):
        assert reverse("compare-export", args=[before.pk, after.pk, fmt]) in page


def test_an_outsider_gets_nothing(client, outsider, pair):
    before, after = pair
    client.force_login(outsider)
    assert client.get(reverse("compare-export", args=[before.pk, after.pk, "json"])
                      ).status_code == 404
    r = client.post(reverse("compare-share-create", args=[before.pk, after.pk]), {})
    assert r.status_code == 404 and not ShareLink.objects.exists()


def test_a_share_link_shows_the_comparison_and_nothing_else(client, member, pair):
    before, after = pair
    client.force_login(member)
    r = client.post(reverse("compare-share-create", args=[before.pk, after.pk]),
                    {"days": "7"})
    assert r.status_code == 302 and r["Location"].endswith("#sharing")
    link = ShareLink.objects.get()
    assert (link.capture, link.compare_with) == (before, after) and link.expires_at
    page = client.get(reverse("compare", args=[before.pk, after.pk])).content.decode()
    assert f"/s/{link.url_token}/" in page
    # the capture's own Share card does not list it: it opens no explorer
    assert link.url_token not in client.get(before.get_absolute_url()).content.decode()
    # a number of days out of range is said, and no link made
    r = client.post(reverse("compare-share-create", args=[before.pk, after.pk]),
                    {"days": "400"})
    assert "share_error=days" in r["Location"] and ShareLink.objects.count() == 1
    assert "a whole number of days from 1 to 365" in client.get(r["Location"]).content.decode()

    anonymous = Client()
    shared = anonymous.get(reverse("shared", args=[link.url_token]))
    assert shared.status_code == 200
    text = shared.content.decode()
    assert "Verdict: <span id=\"verdict-word\">improvement</span>" in text
    assert 'id="diff-tree"' in text and 'id="movers"' in text
    assert before.get_absolute_url() not in text and after.get_absolute_url() not in text
    assert 'id="share-form"' not in text  # visitors make no links
    data = anonymous.get(reverse("shared-data", args=[link.url_token, "compare"]))
    assert data.status_code == 200 and data.json()["verdict"] == "improvement"
    for kind in ("flame", "functions", "status", "lines"):
        assert anonymous.get(reverse("shared-data", args=[link.url_token, kind])
                             ).status_code == 404, kind
    md = anonymous.get(reverse("shared-compare-export", args=[link.url_token, "markdown"]))
    assert md.status_code == 200 and "**Verdict: improvement.**" in _body(md)
    # a capture's link has no comparison, and no downloads here
    own = ShareLink.objects.create(capture=before, token="c" * 32, created_by=member)
    assert anonymous.get(reverse("shared-data", args=[own.url_token, "compare"])
                         ).status_code == 404
    assert anonymous.get(reverse("shared-compare-export", args=[own.url_token, "json"])
                         ).status_code == 404

    # revoked: gone for the visitor
    client.post(reverse("compare-share-revoke", args=[before.pk, after.pk, link.pk]))
    assert anonymous.get(reverse("shared", args=[link.url_token])).status_code == 410
    assert anonymous.get(reverse("shared-compare-export", args=[link.url_token, "json"])
                         ).status_code == 410
