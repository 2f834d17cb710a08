"""Malformed ids (review H2): every route and parameter that reads an id from the URL, the
query or a form answers "²" (str.isdigit() is true, int() refuses it), "١" (an Arabic-Indic
one, which int() reads as 1), "-1", "1e3" and 19 nines (past a bigint) as it answers an
unknown id (404, 400 for a form field; 410 for a share link, as any invalid link) and never
with a 500 or with the object whose id int() would make of it.

One analysed capture (spinpool 1.1.0 busy, 16 functions) of team "inference", its member
alice; a share link to it."""
import pytest
from django.test import Client as DjangoClient

from perfweb.captures.api_tokens import ADMIN, create_token
from perfweb.captures.ids import parse_id
from perfweb.captures.models import Comment, Membership, ShareLink, Team

from .conftest import spinpool

pytestmark = pytest.mark.django_db

BAD = ["\u00b2", "\u0661", "-1", "1e3", "9" * 19]
#: answers that say "no such thing" (or, for a form field, "not that")
CLEAR = {400, 404}


def Client():  # noqa: N802  a 500 is an answer to list, not an exception to stop at
    return DjangoClient(raise_request_exception=False)


def test_parse_id():
    assert [parse_id(v) for v in BAD] == [None] * 5
    assert [parse_id(v) for v in ("0", "17", "9" * 18, 17, " 1", "1\n", "", None, True)] \
        == [0, 17, 10 ** 18 - 1, 17, None, None, None, None, None]


@pytest.fixture
def world(django_user_model):
    team = Team.objects.create(name="inference")
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    Membership.objects.create(team=team, user=alice, admin=True)
    capture = spinpool(alice, "1.1.0", "busy")
    link = ShareLink.objects.create(capture=capture, token="s" * 32, created_by=alice)
    client = Client()
    client.force_login(alice)
    return {"capture": capture, "link": link, "client": client, "alice": alice,
            "api": {"HTTP_AUTHORIZATION": f"Token {create_token(alice, 'ci', ADMIN)}"},
            "service": capture.build.service, "build": capture.build, "team": team}


def _check(answers) -> None:
    """`answers`: (what, status, allowed); every one must be allowed."""
    wrong = [(what, status) for what, status, allowed in answers if status not in allowed]
    assert not wrong, "\n".join(f"{status} {what}" for what, status in wrong)


def test_ids_in_the_path(world):
    c, client = world["capture"], world["client"]
    cap, svc, bld, team = c.pk, world["service"].pk, world["build"].pk, world["team"].pk
    gets = ["/captures/{}/", "/captures/{}/status.json", "/captures/{}/result.json",
            "/captures/{}/download/", "/captures/{}/folded/", "/captures/{}/delete/",
            "/captures/{}/data/flame.json", "/captures/{}/data/functions.json",
            "/captures/{}/export/folded/", "/captures/{}/compare-previous/",
            "/compare/{}/%d/" % cap, "/compare/%d/{}/" % cap,
            "/compare/{}/%d/data.json" % cap, "/services/{}/", "/services/{}/history.json",
            "/services/{}/delete/", "/builds/{}/",
            "/builds/{}/delete/", "/teams/{}/", "/symbols/{}/download/"]
    posts = ["/captures/{}/retry/", "/captures/{}/comments/", "/captures/{}/share/",
             "/captures/%d/share/{}/revoke/" % cap,
             "/captures/%d/comments/{}/delete/" % cap, "/builds/{}/reanalyze/",
             "/services/{}/webhook/",
             "/teams/{}/settings/"]
    api = ["/api/v1/captures/{}/", "/api/v1/captures/{}/result/",
           "/api/v1/captures/{}/findings/", "/api/v1/captures/{}/functions/",
           "/api/v1/captures/{}/export/folded/", "/api/v1/captures/{}/compare/",
           "/api/v1/captures/{}/comments/", "/api/v1/services/{}/",
           "/api/v1/services/{}/builds/", "/api/v1/services/{}/history/",
           "/api/v1/builds/{}/"]
    answers = []
    for v in BAD:
        for url in gets:
            answers.append((url.format(v), client.get(url.format(v)).status_code, CLEAR))
        for url in posts:
            # (revoking a link the capture has not revokes nothing: back to the page)
            allowed = CLEAR | {302} if "revoke" in url and v.isascii() and v.isdigit() \
                else CLEAR
            answers.append((url.format(v), client.post(url.format(v), {"body": "x"})
                            .status_code, allowed))
        for url in api:
            answers.append((url.format(v), client.get(url.format(v), **world["api"])
                            .status_code, CLEAR))
        url = f"/api/v1/captures/{cap}/comments/{v}/"
        answers.append((url, client.delete(url, **world["api"]).status_code, CLEAR))
        for url in ("/s/{}.{}/", "/s/{}.{}/data/flame.json", "/s/{}.{}/data/status.json"):
            url = url.format(v, world["link"].token)
            answers.append((url, Client().get(url).status_code, {410}))
    _check(answers)
    # the good ids still work (the sweep above did not log in another way)
    assert client.get(f"/captures/{cap}/").status_code == 200
    assert client.get(f"/api/v1/captures/{cap}/", **world["api"]).status_code == 200
    assert Client().get(f"/s/{world['link'].url_token}/").status_code == 200
    assert (svc, bld, team) and client.get(f"/teams/{team}/").status_code == 200


def test_ids_in_the_query_and_forms(world):
    c, client, api = world["capture"], world["client"], world["api"]
    answers = []
    for v in BAD:
        for q in ({"a": v, "b": c.pk}, {"a": c.pk, "b": v}):
            answers.append((f"compare/?{q}", client.get("/compare/", q).status_code, CLEAR))
        url = f"/api/v1/captures/{c.pk}/compare/"
        answers.append((f"with={v}", client.get(url, {"with": v}, **api).status_code,
                        CLEAR))
        for name in ("focus", "root", "event"):
            for kind in ("flame", "functions"):
                r = client.get(f"/captures/{c.pk}/data/{kind}.json", {name: v})
                answers.append((f"{kind} {name}={v}", r.status_code, CLEAR))
            r = Client().get(f"/s/{world['link'].url_token}/data/flame.json", {name: v})
            answers.append((f"shared flame {name}={v}", r.status_code, CLEAR))
        # a comment on the function with that id: the form and the API say which is wrong
        form = {"kind": "function", "function_id": v, "body": "hot"}
        r = client.post(f"/captures/{c.pk}/comments/", form)
        answers.append((f"comment form function_id={v}", r.status_code, {400}))
        if r.status_code == 400:
            assert "This capture has no function with id" in r.content.decode()
        r = client.post(f"/api/v1/captures/{c.pk}/comments/", form,
                        content_type="application/json", **api)
        answers.append((f"comment API function_id={v}", r.status_code, {400}))
        # a share link's expiry: whole days, 1 to 365
        r = client.post(f"/captures/{c.pk}/share/", {"days": v})
        answers.append((f"share days={v}", r.status_code, {400}))
        if r.status_code == 400:
            assert "Expires after: a whole number of days from 1 to 365" in \
                r.content.decode()
        r = client.post("/account/tokens/", {"revoke": v})
        answers.append((f"token revoke={v}", r.status_code, CLEAR))
    _check(answers)
    assert Comment.objects.count() == 0
    assert ShareLink.objects.count() == 1  # no link made of a malformed expiry
    assert world["alice"].api_tokens.count() == 1  # and no token revoked
    # the well-formed ones still do what they did
    r = client.post(f"/captures/{c.pk}/share/", {"days": "3"})
    assert r.status_code == 302 and ShareLink.objects.count() == 2
    assert client.post(f"/captures/{c.pk}/share/", {"days": ""}).status_code == 302
    r = client.post(f"/api/v1/captures/{c.pk}/comments/",
                    {"kind": "function", "function_id": 0, "body": "hot"},
                    content_type="application/json", **api)
    assert r.status_code == 201 and r.json()["function_id"] == 0
    assert client.get("/compare/", {"a": c.pk, "b": c.pk}).status_code == 302
