"""The explorer's `tf` (call-tree transforms) and `sort` parameters over HTTP: members
and share links get the same answers, outsiders none, a malformed value a sentence
(400), and a share link keeps both in its view."""
import pytest

from perfweb.captures.models import Membership, ShareLink, Team
from perfweb.captures.share_links import view_query

from .conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def busy(django_user_model):
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    team = Team.objects.create(name="inference")
    Membership.objects.create(team=team, user=alice)
    c = spinpool(alice, "1.0.0", "busy")
    link = ShareLink.objects.create(capture=c, token="t" * 32, created_by=alice)
    return alice, c, link


def _get(client, url):
    r = client.get(url)
    return r.status_code, r.json()


def test_drop_and_collapse_over_http(client, busy, outsider):
    alice, capture, link = busy
    client.force_login(alice)
    base = f"/captures/{capture.pk}/data"
    status, table = _get(client, f"{base}/functions.json")
    assert status == 200 and table["total"] == 973
    syscall = next(f for f in table["functions"] if f["n"] == "do_syscall_64")
    assert (syscall["s"], syscall["t"]) == (133, 473)  # perf's counts (--children: 48.61%)
    tf = f"df-{syscall['f']}"
    for url in (f"{base}/flame.json?tf={tf}", f"/s/{link.url_token}/data/flame.json?tf={tf}"):
        status, flame = _get(client, url)
        assert status == 200 and flame["total"] == 973 - 473
        assert flame["transforms"] == [{"t": tf, "kind": "df", "verb": "drop",
                                        "n": "do_syscall_64"}]
    status, dropped = _get(client, f"{base}/functions.json?tf={tf}")
    assert dropped["total"] == 500
    assert syscall["f"] not in {f["f"] for f in dropped["functions"]}
    # the collapsed kernel: one frame, the kernel's 473 samples its own
    status, kernel = _get(client, f"{base}/functions.json?tf=cr-{syscall['f']}&sort=total")
    assert status == 200 and kernel["sort"] == "total"
    (row,) = [f for f in kernel["functions"] if f["d"] == "[kernel.kallsyms]"]
    assert (row["n"], row["s"], row["t"]) == ("[kernel.kallsyms]", 473, 473)
    assert [f["t"] for f in kernel["functions"]] == sorted(
        (f["t"] for f in kernel["functions"]), reverse=True)
    # outsiders see nothing of it
    client.force_login(outsider)
    assert client.get(f"{base}/flame.json?tf={tf}").status_code == 404


MALFORMED = [
    ("tf=zz-1", "Transform 'zz-1' is not one of"),
    ("tf=mf-999999", "Transform mf-999999: no such function."),
    ("tf=" + ".".join(f"mf-{i}" for i in range(13)), "At most 12 transforms"),
    ("sort=speed", "Unknown order 'speed'"),
]


def test_a_malformed_parameter_is_said(client, busy):
    """(each query on the one analysed capture: an analysis per query took 10 s each)"""
    alice, capture, link = busy
    for query, message in MALFORMED:
        for url in (f"/captures/{capture.pk}/data/functions.json?{query}",
                    f"/s/{link.url_token}/data/functions.json?{query}"):
            client.force_login(alice)
            r = client.get(url)
            assert r.status_code == 400, (query, r.status_code)
            assert r.json()["error"].startswith(message), (query, r.json())


def test_a_share_link_keeps_the_transforms_and_the_order():
    assert view_query("?view=sandwich&focus=3&sort=total&tf=mf-1.cr-2&junk=1") == \
        "view=sandwich&focus=3&sort=total&tf=mf-1.cr-2"
