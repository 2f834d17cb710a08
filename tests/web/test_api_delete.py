"""Deleting through the API and `perfweb delete`: DELETE on a capture, a build or a
service removes it with every file it owns (deletion.py, as the delete pages do), a
capture's build with it when nothing else is in it; another team gets 404 and nothing
goes; share links and anonymous callers cannot delete; a second DELETE is 404."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from perfweb.captures import services
from perfweb.captures.api_tokens import ADMIN, UPLOAD, create_token
from perfweb.captures.models import Build, Capture, Membership, Service, ShareLink
from perfweb.captures.uploads import store_upload

from .conftest import ROOT, SPINPOOL

pytestmark = pytest.mark.django_db(transaction=True)


def _file(path):
    return SimpleUploadedFile(path.name, path.read_bytes())


def _upload(user, version, capture, symbols=(), for_build=True):
    team = Membership.objects.get(user=user).team
    capture, _ = store_upload(user, team, {
        "service": "private-llm", "version": version, "label": "busy",
        "capture": _file(capture), "symbols": [_file(s) for s in symbols],
        "symbols_for_build": for_build})
    services.run_analysis(capture.pk)
    capture = Capture.objects.get(pk=capture.pk)
    assert capture.status == "done", capture.error
    return capture


def _stored(captures=(), builds=()):
    """The paths of every file the captures and builds own."""
    captures = list(captures) + [c for b in builds for c in b.captures.all()]
    paths = [Path(c.file.path) for c in captures]
    paths += [Path(f.path) for c in captures for r in c.results.all()
              for f in (r.folded, r.profile) if f]
    paths += [Path(sf.file.path) for c in captures for sf in c.symbol_files.all()]
    paths += [Path(sf.file.path) for b in builds for sf in b.symbol_files.all()]
    assert paths and all(p.exists() for p in paths)
    return paths


def _delete(client, url, key):
    return client.delete(url, HTTP_AUTHORIZATION=f"Token {key}")


@pytest.fixture
def world(member, outsider, django_user_model):
    """alice's team "inference" (bob a teammate): build 1.0.0 with a capture and the
    build's symbols, 1.1.0 with one capture and its own symbols, 1.2.0 with one capture."""
    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    Membership.objects.create(team=Membership.objects.get(user=member).team, user=bob)
    a = _upload(member, "1.0.0", SPINPOOL / "1.1.0-busy.perf.data",
                [SPINPOOL / "symbols-1.1.0.zip"])
    b = _upload(member, "1.1.0", SPINPOOL / "1.1.0-busy.truth-script.txt",
                [SPINPOOL / "kernel-symbols.zip"], for_build=False)
    c = _upload(member, "1.2.0", SPINPOOL / "1.0.0-busy.truth-script.txt")
    return {"a": a, "b": b, "c": c, "service": a.build.service,
            "keys": {u.username: create_token(u, "t", ADMIN) for u in (member, bob, outsider)}}


def test_delete_captures_builds_and_services_with_their_files(world):
    a, b, c, service, keys = world["a"], world["b"], world["c"], world["service"], \
        world["keys"]
    client = Client()
    urls = {"capture": f"/api/v1/captures/{b.pk}/", "build": f"/api/v1/builds/{a.build_id}/",
            "service": f"/api/v1/services/{service.pk}/"}
    everything = _stored([a, b, c], [a.build])

    # another team's token: not found, and nothing goes
    for url in urls.values():
        r = _delete(client, url, keys["mallory"])
        assert r.status_code == 404, (url, r.content)
    # no token, or a share link's token in its place: not signed in; the link's own
    # URLs answer only GET
    link = ShareLink.objects.create(capture=b, token="s" * 32)
    assert client.get(f"/s/{link.url_token}/").status_code == 200
    assert client.delete(f"/s/{link.url_token}/").status_code == 405
    assert client.delete(f"/s/{link.url_token}/data/flame.json").status_code == 405
    for url in urls.values():
        assert client.delete(url).status_code in (401, 403)
        assert _delete(client, url, link.url_token).status_code == 401
        assert _delete(client, url, "s" * 32).status_code == 401
    assert Capture.objects.count() == 3 and Build.objects.count() == 3
    assert all(p.exists() for p in everything)

    # a teammate deletes 1.1.0's only capture: with its own symbols, its results, and
    # the build it leaves empty
    files = _stored([b])
    assert len(files) == 1 + 2 + 1  # the upload, the folded stacks and profile, symbols
    r = _delete(client, urls["capture"], keys["bob"])
    assert r.status_code == 200, r.content
    assert r.json() == {"deleted": {"services": 0, "builds": 1, "captures": 1, "files": 4},
                        "summary": "1 build, 1 capture, 4 stored files"}
    assert not any(p.exists() for p in files)
    assert not Capture.objects.filter(pk=b.pk).exists()
    assert not Build.objects.filter(pk=b.build_id).exists()
    assert _delete(client, urls["capture"], keys["bob"]).status_code == 404
    assert all(p.exists() for p in everything if p not in files)

    # a build: its capture, the build's symbol files and the results
    got = client.get(urls["build"], HTTP_AUTHORIZATION=f"Token {keys['alice']}").json()
    assert (got["id"], got["service"], got["version"], got["captures"]) == \
        (a.build_id, service.pk, "1.0.0", 1)
    files = _stored(builds=[a.build])
    assert len(files) == 1 + 2 + 1
    r = _delete(client, urls["build"], keys["alice"])
    assert r.status_code == 200, r.content
    assert r.json() == {"deleted": {"services": 0, "builds": 1, "captures": 1, "files": 4},
                        "summary": "1 build, 1 capture, 4 stored files"}
    assert not any(p.exists() for p in files)
    assert not Capture.objects.filter(pk=a.pk).exists()
    assert _delete(client, urls["build"], keys["alice"]).status_code == 404
    assert client.get(urls["build"], HTTP_AUTHORIZATION=f"Token {keys['alice']}") \
        .status_code == 404

    # the service, with the build and capture still in it
    files = _stored([c])
    r = _delete(client, urls["service"], keys["alice"])
    assert r.status_code == 200, r.content
    assert r.json() == {"deleted": {"services": 1, "builds": 1, "captures": 1, "files": 3},
                        "summary": "1 service, 1 build, 1 capture, 3 stored files"}
    assert not any(p.exists() for p in everything)
    assert not Service.objects.exists() and not Build.objects.exists() and \
        not Capture.objects.exists()
    assert _delete(client, urls["service"], keys["alice"]).status_code == 404


def test_deleting_a_capture_keeps_a_build_that_holds_more(world):
    a, keys = world["a"], world["keys"]
    files = _stored([a])
    r = _delete(Client(), f"/api/v1/captures/{a.pk}/", keys["alice"])
    assert r.json() == {"deleted": {"services": 0, "builds": 0, "captures": 1, "files": 3},
                        "summary": "1 capture, 3 stored files"}
    assert not any(p.exists() for p in files)
    build = Build.objects.get(pk=a.build_id)  # its symbol files are still there
    assert [Path(sf.file.path).exists() for sf in build.symbol_files.all()] == [True]


def _cli(live_server, key, *args):
    env = dict(os.environ, PERFWEB_TOKEN=key)
    return subprocess.run([sys.executable, "-m", "perfweb_client", "delete", *args,
                           "--url", live_server.url], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_perfweb_delete_capture(world, live_server):
    b, keys = world["b"], world["keys"]
    files = _stored([b])
    outsider = _cli(live_server, keys["mallory"], "capture", str(b.pk))
    assert outsider.returncode == 2
    assert outsider.stderr == f"perfweb: deleting capture {b.pk} refused (404): " \
                              "No Capture matches the given query.\n"
    assert all(p.exists() for p in files)
    # the token `perfweb upload` needs cannot delete: the server says which one can
    upload_key = create_token(b.uploaded_by, "ci", UPLOAD)
    refused = _cli(live_server, upload_key, "capture", str(b.pk))
    assert refused.returncode == 2
    assert refused.stderr == (
        f"perfweb: deleting capture {b.pk} refused (403): This token's scope is upload; "
        f"DELETE /api/v1/captures/{b.pk}/ needs a token with the admin scope (create one "
        "on the API tokens page).\n")
    assert all(p.exists() for p in files)
    done = _cli(live_server, keys["alice"], "capture", str(b.pk))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deleted 1 build, 1 capture, 4 stored files\n"
    assert not any(p.exists() for p in files)
    again = _cli(live_server, keys["alice"], "capture", str(b.pk))
    assert again.returncode == 2 and "refused (404)" in again.stderr
    service = _cli(live_server, keys["alice"], "service", str(world["service"].pk))
    assert service.returncode == 0, service.stderr
    assert service.stdout == "deleted 1 service, 2 builds, 2 captures, 7 stored files\n"
    assert not Capture.objects.exists()
