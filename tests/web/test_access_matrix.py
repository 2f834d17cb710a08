"""Every route, as an owner, a teammate, an outsider and an anonymous visitor.

The table below must name every route the project serves: a new route without a row
fails `test_every_route_is_in_the_table`, so nobody adds a view without deciding who may
use it. CSRF is checked on every form that changes something.
"""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from perfweb.captures import pipeline, services
from perfweb.captures.api_tokens import ADMIN, READ, SCOPES, UPLOAD, create_token
from perfweb.captures.models import (BuildIdEntry, Capture, Membership, ShareLink,
                                     SymbolFile, Team)
from perfweb.captures.uploads import store_upload

from .conftest import SPINPOOL

pytestmark = pytest.mark.django_db(transaction=True)

PUBLIC = {"login", "logout", "shared", "shared-data",  # the share token is the key
          "shared-compare-export",
          "api-schema"}  # describes the API, holds no data


class _File:
    def __init__(self, path):
        self.path = path

    def __enter__(self):
        from django.core.files.uploadedfile import SimpleUploadedFile
        return SimpleUploadedFile(self.path.name, self.path.read_bytes())

    def __exit__(self, *exc):
        return False


@pytest.fixture
def world(django_user_model):
    """Team "inference" (alice owns the uploads, bob is a teammate), mallory elsewhere; two
    builds with an analyzed capture each, a build symbol file with a build-id."""
    def user(name, team):
        u = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        Membership.objects.create(team=team, user=u)
        return u
    inference, elsewhere = Team.objects.create(name="inference"), \
        Team.objects.create(name="elsewhere")
    alice, bob, mallory = user("alice", inference), user("bob", inference), \
        user("mallory", elsewhere)
    captures = []
    for version, name in (("1.0.0", "1.1.0-busy.perf.data"),
                          ("1.1.0", "1.1.0-busy.truth-script.txt")):
        with _File(SPINPOOL / name) as f, _File(SPINPOOL / "symbols-1.1.0.zip") as s:
            capture, _ = store_upload(alice, inference, {
                "service": "private-llm", "version": version, "label": "busy", "capture": f,
                "symbols": [s] if version == "1.0.0" else [], "symbols_for_build": True})
        services.run_analysis(capture.pk)
        captures.append(Capture.objects.get(pk=capture.pk))
    assert all(c.status == "done" for c in captures), [c.error for c in captures]
    a, b = captures
    link = ShareLink.objects.create(capture=a, token="s" * 32, created_by=alice)
    compare_link = ShareLink.objects.create(capture=a, compare_with=b, token="c" * 32,
                                            created_by=alice)
    entry = BuildIdEntry.objects.filter(kind="debuginfo").first()
    return {"alice": alice, "bob": bob, "mallory": mallory, "a": a, "b": b, "link": link,
            "compare_link": compare_link,
            "symbol": SymbolFile.objects.get(build=a.build), "entry": entry,
            # (admin: as every token made before scopes acts)
            "keys": {u.username: create_token(u, "t", ADMIN) for u in (alice, bob, mallory)},
            "scoped": {scope: create_token(alice, scope, scope) for scope in SCOPES}}


def _routes(w):
    """name -> (method, url, data, status for team members, status for outsiders)."""
    a, b, svc = w["a"], w["b"], w["a"].build.service
    key = "{key}"  # replaced per user
    return {
        "home": ("get", reverse("home"), None, 200, 200),
        "upload": ("get", reverse("upload"), None, 200, 200),
        "capture": ("get", reverse("capture", args=[a.pk]), None, 200, 404),
        "capture-status": ("get", reverse("capture-status", args=[a.pk]), None, 200, 404),
        "capture-result": ("get", reverse("capture-result", args=[a.pk]), None, 200, 404),
        "capture-download": ("get", reverse("capture-download", args=[a.pk]), None, 200, 404),
        "capture-folded": ("get", reverse("capture-folded", args=[a.pk]), None, 200, 404),
        "capture-retry": ("post", reverse("capture-retry", args=[a.pk]), {}, 302, 404),
        "capture-comment-create": ("post", reverse("capture-comment-create", args=[a.pk]),
                                   {"kind": "range", "start": "0", "end": "1", "body": "ok"},
                                   302, 404),
        # (no such comment: the member's 404; deleting one's own is in test_comments.py)
        "capture-comment-delete": ("post", reverse("capture-comment-delete",
                                                   args=[a.pk, 999999]), {}, 404, 404),
        # (the confirmation pages; what a POST deletes is tested in the browser)
        "capture-delete": ("get", reverse("capture-delete", args=[a.pk]), None, 200, 404),
        "build-delete": ("get", reverse("build-delete", args=[a.build.pk]), None, 200, 404),
        "service-delete": ("get", reverse("service-delete", args=[svc.pk]), None, 200, 404),
        "data-flame": ("get", reverse("data-flame", args=[a.pk]), None, 200, 404),
        "data-functions": ("get", reverse("data-functions", args=[a.pk]), None, 200, 404),
        "data-threads": ("get", reverse("data-threads", args=[a.pk]), None, 200, 404),
        "data-timeline": ("get", reverse("data-timeline", args=[a.pk]), None, 200, 404),
        "data-states": ("get", reverse("data-states", args=[a.pk]), None, 200, 404),
        "data-stacks": ("get", reverse("data-stacks", args=[a.pk]), None, 200, 404),
        # (no function chosen: the member's 400 says so; the outsider's 404 hides it)
        "data-lines": ("get", reverse("data-lines", args=[a.pk]), None, 400, 404),
        "capture-export": ("get", reverse("capture-export", args=[a.pk, "speedscope"]), None,
                           200, 404),
        "compare-previous": ("get", reverse("compare-previous", args=[b.pk]), None, 302, 404),
        "share-create": ("post", reverse("share-create", args=[a.pk]), {"days": "1"}, 302,
                         404),
        "share-revoke": ("post", reverse("share-revoke", args=[a.pk, 999999]), {}, 302, 404),
        "compare-pick": ("get", reverse("compare-pick") + f"?a={a.pk}&b={b.pk}", None, 302,
                         302),  # the redirect target checks access
        "compare": ("get", reverse("compare", args=[a.pk, b.pk]), None, 200, 404),
        "compare-data": ("get", reverse("compare-data", args=[a.pk, b.pk]), None, 200, 404),
        "compare-export": ("get", reverse("compare-export", args=[a.pk, b.pk, "markdown"]),
                           None, 200, 404),
        "compare-share-create": ("post", reverse("compare-share-create", args=[a.pk, b.pk]),
                                 {"days": "1"}, 302, 404),
        "compare-share-revoke": ("post", reverse("compare-share-revoke",
                                                 args=[a.pk, b.pk, 999999]), {}, 302, 404),
        "service": ("get", reverse("service", args=[svc.pk]), None, 200, 404),
        "service-history": ("get", reverse("service-history", args=[svc.pk]), None, 200, 404),
        "service-webhook": ("post", reverse("service-webhook", args=[svc.pk]),
                            {"action": "remove"}, 302, 404),
        "shared": ("get", reverse("shared", args=[w["link"].url_token]), None, 200, 200),
        "shared-data": ("get", reverse("shared-data", args=[w["link"].url_token, "flame"]), None,
                        200, 200),
        "shared-compare-export": ("get", reverse("shared-compare-export",
                                                 args=[w["compare_link"].url_token, "csv"]),
                                  None, 200, 200),
        "tokens": ("get", reverse("tokens"), None, 200, 200),
        "teams": ("get", reverse("teams"), None, 200, 200),  # the user's own teams only
        "team": ("get", reverse("team", args=[svc.team.pk]), None, 200, 404),
        # (neither alice nor bob is the team's admin here: 403; test_retention_quota.py
        # has an admin change it)
        "team-settings": ("post", reverse("team-settings", args=[svc.team.pk]),
                          {"retention_days": "30"}, 403, 404),
        "debuginfod": ("get", f"/debuginfod/{key}/buildid/{w['entry'].build_id}/debuginfo",
                       None, 200, 404),
        "build": ("get", reverse("build", args=[a.build.pk]), None, 200, 404),
        "build-reanalyze": ("post", reverse("build-reanalyze", args=[a.build.pk]), {}, 302,
                            404),
        "symbol-download": ("get", reverse("symbol-download", args=[w["symbol"].pk]), None,
                            200, 404),
        "login": ("get", reverse("login"), None, 200, 200),
        "logout": ("post", reverse("logout"), {}, 302, 302),
        "api-root": ("get", "/api/v1/", None, 200, 200),
        "api-schema": ("get", "/api/schema/", None, 200, 200),
        "api-service-list": ("get", "/api/v1/services/", None, 200, 200),
        "api-service-detail": ("get", f"/api/v1/services/{svc.pk}/", None, 200, 404),
        "api-service-builds": ("get", f"/api/v1/services/{svc.pk}/builds/", None, 200, 404),
        "api-build-detail": ("get", f"/api/v1/builds/{a.build.pk}/", None, 200, 404),
        "api-service-history": ("get", f"/api/v1/services/{svc.pk}/history/", None, 200,
                                404),
        "api-capture-list": ("get", "/api/v1/captures/", None, 200, 200),
        # a member is told the team holds the build's symbol file; an outsider is told
        # it holds nothing (200 either way: the answer is about the asker's own team)
        "api-held-symbols": ("post", "/api/v1/symbols/held/",
                             {"sha256": [w["symbol"].sha256]}, 200, 200),
        "api-capture-detail": ("get", f"/api/v1/captures/{a.pk}/", None, 200, 404),
        "api-capture-result": ("get", f"/api/v1/captures/{a.pk}/result/", None, 200, 404),
        "api-capture-findings": ("get", f"/api/v1/captures/{a.pk}/findings/", None, 200, 404),
        "api-capture-functions": ("get", f"/api/v1/captures/{a.pk}/functions/", None, 200,
                                  404),
        "api-capture-export": ("get", f"/api/v1/captures/{a.pk}/export/folded/", None, 200,
                               404),
        "api-capture-compare": ("get", f"/api/v1/captures/{b.pk}/compare/", None, 200, 404),
        "api-capture-compare-export": ("get", f"/api/v1/captures/{b.pk}/compare/export/"
                                       f"markdown/?with={a.pk}", None, 200, 404),
        "api-capture-comments": ("get", f"/api/v1/captures/{a.pk}/comments/", None, 200, 404),
        "api-capture-comment": ("delete", f"/api/v1/captures/{a.pk}/comments/999999/", None,
                                404, 404),
    }


def _served_route_names():
    names = set()

    def walk(patterns):
        for p in patterns:
            if isinstance(p, URLResolver):
                if p.app_name != "admin":
                    walk(p.url_patterns)
            elif isinstance(p, URLPattern) and p.name:
                names.add(p.name)
    walk(get_resolver().url_patterns)
    return names


def test_every_route_is_in_the_table(world):
    assert _served_route_names() == set(_routes(world))


def _call(client, method, url, data, **extra):
    return getattr(client, method)(url, data, **extra) if data is not None else \
        getattr(client, method)(url, **extra)


def test_owner_teammate_outsider_anonymous(world):
    routes = _routes(world)
    for who in ("alice", "bob", "mallory"):
        client = Client()
        client.force_login(world[who])
        # reads first: retry and reanalyze queue the captures again
        for name, (method, url, data, member, outsider) in sorted(
                routes.items(), key=lambda kv: kv[1][0] == "post"):
            if name == "logout":
                continue  # would end the session of the loop
            url = url.replace("{key}", world["keys"][who])
            expected = outsider if who == "mallory" else member
            r = _call(client, method, url, data)
            assert r.status_code == expected, (who, name, url, r.status_code)
            if who == "mallory" and r.status_code == 200 and name not in PUBLIC:
                body = b"".join(r.streaming_content) if r.streaming else r.content
                assert b"private-llm" not in body, (name, url)  # lists show none of it
        for capture in (world["a"], world["b"]):
            services.run_analysis(capture.pk)
    anonymous = Client()
    for name, (method, url, data, member, outsider) in routes.items():
        url = url.replace("{key}", "pw_nobody")
        r = _call(anonymous, method, url, data)
        if name in PUBLIC:
            assert r.status_code in (200, 302), (name, r.status_code)
        elif name.startswith("api-"):
            assert r.status_code in (401, 403), (name, r.status_code)
        elif name == "debuginfod":
            assert r.status_code == 404
        else:
            assert r.status_code == 302 and "/login/" in r["Location"], (name, r.status_code)


def test_api_tokens_see_what_their_user_sees(world):
    routes = _routes(world)
    for who in ("alice", "bob", "mallory"):
        client = Client()
        auth = {"HTTP_AUTHORIZATION": f"Token {world['keys'][who]}"}
        for name, (method, url, data, member, outsider) in routes.items():
            if not name.startswith("api-"):
                continue
            r = _call(client, method, url, data, **auth)
            assert r.status_code == (outsider if who == "mallory" else member), (who, name)


def _api_calls(w):
    """Every method of every API route: (route, method, url, data, the scope a token
    needs, what alice's token of that scope gets). Ordered so that what deletes comes
    last, the capture before its build before the service; each call is made with the
    read, then the upload, then the admin token."""
    a, b, svc = w["a"], w["b"], w["a"].build.service
    calls = [(name, method, url, data, READ, member)
             for name, (method, url, data, member, _) in _routes(w).items()
             if name.startswith("api-") and method == "get"]
    return calls + [
        ("api-held-symbols", "post", "/api/v1/symbols/held/",
         {"sha256": [w["symbol"].sha256]}, UPLOAD, 200),
        # (the upload token creates it, the admin token finds it there)
        ("api-service-list", "post", "/api/v1/services/", {"name": "ci"}, UPLOAD, (201, 200)),
        ("api-service-builds", "post", f"/api/v1/services/{svc.pk}/builds/",
         {"version": "2.0"}, UPLOAD, (201, 200)),
        # (no file: a 400 saying so is as far as the scope goes)
        ("api-capture-list", "post", "/api/v1/captures/", {}, UPLOAD, 400),
        ("api-capture-comments", "post", f"/api/v1/captures/{a.pk}/comments/", {}, ADMIN,
         400),
        ("api-capture-comment", "delete", f"/api/v1/captures/{a.pk}/comments/999999/", None,
         ADMIN, 404),
        ("api-capture-detail", "delete", f"/api/v1/captures/{b.pk}/", None, ADMIN, 200),
        ("api-build-detail", "delete", f"/api/v1/builds/{a.build.pk}/", None, ADMIN, 200),
        ("api-service-detail", "delete", f"/api/v1/services/{svc.pk}/", None, ADMIN, 200),
    ]


def _served_api_methods():
    """(route name, method) for every API route and every method its view answers
    (OPTIONS and HEAD aside: they read)."""
    served = set()

    def walk(patterns):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns)
            elif isinstance(p, URLPattern) and (p.name or "").startswith("api-"):
                methods = getattr(p.callback, "actions", None)  # a viewset's
                if methods is None:
                    view = p.callback.view_class
                    methods = [m for m in view.http_method_names if hasattr(view, m)]
                served.update((p.name, m) for m in methods if m not in ("options", "head"))
    walk(get_resolver().url_patterns)
    return served


def test_api_token_scopes(world):
    """A token's scope allows its own calls and those of the scopes under it; anything
    more is a 403 naming the scope needed, and changes nothing."""
    calls = _api_calls(world)
    assert {(name, method) for name, method, *_ in calls} == _served_api_methods()
    client = Client()
    for name, method, url, data, needed, allowed in calls:
        for scope in SCOPES:
            auth = {"HTTP_AUTHORIZATION": f"Token {world['scoped'][scope]}"}
            r = _call(client, method, url, data, **auth)
            if SCOPES.index(scope) >= SCOPES.index(needed):
                assert r.status_code in (allowed if isinstance(allowed, tuple)
                                         else (allowed,)), (scope, name, method, r.status_code)
            else:
                assert r.status_code == 403, (scope, name, method, r.status_code)
                assert r.json() == {"detail": (
                    f"This token's scope is {scope}; {method.upper()} {url} needs a token "
                    f"with the {needed} scope (create one on the API tokens page).")}
    assert not Capture.objects.exists()  # the admin token deleted them, last


def test_debuginfod_takes_a_token_of_any_scope(world):
    """Read is enough (and every scope allows reading)."""
    for scope in SCOPES:
        key = world["scoped"][scope]
        r = Client().get(f"/debuginfod/{key}/buildid/{world['entry'].build_id}/debuginfo")
        assert r.status_code == 200, scope
        assert b"".join(r.streaming_content)


def test_the_browser_session_has_no_scope(world):
    """Session users do what their account may: a DELETE needs no token scope."""
    client = Client()
    client.force_login(world["alice"])
    assert client.delete(f"/api/v1/captures/{world['b'].pk}/").status_code == 200


FORMS = ["service-webhook",
         "upload", "capture-retry", "share-create", "share-revoke", "build",
         "build-reanalyze", "tokens", "logout", "login", "capture-delete", "build-delete",
         "service-delete", "capture-comment-create", "capture-comment-delete",
         "team-settings"]


def test_csrf_on_every_form(world):
    routes = _routes(world)
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["alice"])
    for name in FORMS:
        url = routes[name][1]
        assert client.post(url, {}).status_code == 403, name
    # the API with the browser session needs the CSRF token too; with a token it does not
    assert client.post("/api/v1/services/", {"name": "x"}).status_code == 403
    r = client.post("/api/v1/services/", {"name": "x"},
                    HTTP_AUTHORIZATION=f"Token {world['keys']['alice']}")
    assert r.status_code == 201


def test_shared_link_gives_only_its_capture(world):
    client = Client()
    token = world["link"].url_token
    assert client.get(reverse("shared", args=[token])).status_code == 200
    for kind in ("flame", "functions", "threads", "timeline", "stacks", "status"):
        assert client.get(reverse("shared-data", args=[token, kind])).status_code == 200
    assert client.get(reverse("shared-data", args=[token, "secrets"])).status_code == 404
    pk = world["link"].pk
    for wrong in (f"{pk}.{'s' * 31}", f"{pk}.{'s' * 31}t", f"{pk}.", "s" * 32,
                  f"{pk + 1}.{'s' * 32}"):
        assert client.get(reverse("shared", args=[wrong])).status_code == 410, wrong
    assert client.get(reverse("capture", args=[world["b"].pk])).status_code == 302


def test_deploy_check_is_clean(tmp_path):
    import subprocess
    import sys

    from .conftest import ROOT
    env = {"PATH": "/usr/bin:/bin", "SECRET_KEY": "x" * 60 + "-production-secret-key",
           "ALLOWED_HOSTS": "perfweb.example", "HTTPS": "1",
           "PERFWEB_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "perfweb.settings"}
    r = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level",
                        "WARNING"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout
    assert get_user_model()  # (the check above ran in its own process)


def test_sign_in_is_throttled(world):
    client = Client()
    for _ in range(4):
        r = client.post(reverse("login"), {"username": "alice", "password": "guess"})
        assert r.status_code == 200 and b"correct username and password" in r.content
    r = client.post(reverse("login"), {"username": "alice", "password": "guess"})
    assert r.status_code == 429 and b"Too many sign-in attempts" in r.content  # the 5th
    r = client.post(reverse("login"), {"username": "alice", "password": "pw-alice-123"})
    assert r.status_code == 429 and b"Too many sign-in attempts" in r.content
    # another account from the same address is not locked out
    r = client.post(reverse("login"), {"username": "bob", "password": "pw-bob-123"})
    assert r.status_code == 302
