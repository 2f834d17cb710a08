"""Symbol files the team holds are named by digest, not sent again (held_symbols): the
upload CLI asks, sends only the rest, and the analysis reads the held files as if they
had been sent; another team's files are never held; a shared file is deleted with its
last row, and counted once in the quota."""
import hashlib
import io
import os
import re
import subprocess
import sys

import pytest

from perfweb.captures.api_tokens import ADMIN, create_token
from perfweb.captures.models import Build, Capture, Membership, SymbolFile, Team
from perfweb.captures.uploads import sent_by, stored_bytes, team_usage
from perfweb_client import cli

from truth import truth_report
from .conftest import ROOT, SPINPOOL
from .test_api import _auth, _wait_done

pytestmark = pytest.mark.django_db(transaction=True)

BUILD_FILES = ["symbols-1.0.0.zip", "kernel-symbols.zip"]


def _digest(name: str) -> str:
    return hashlib.sha256((SPINPOOL / name).read_bytes()).hexdigest()


def _cli(live_server, key, capture: str, build: str, symbols, *more):
    env = dict(os.environ, PERFWEB_TOKEN=key)
    return subprocess.run(
        [sys.executable, "-m", "perfweb_client", "upload", str(SPINPOOL / capture),
         "--service", "llm-api", "--build", build, "--label", "idle", "--url",
         live_server.url, *[a for s in symbols for a in ("--symbols", str(SPINPOOL / s))],
         *more], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _held(client, key, digests):
    r = client.post("/api/v1/symbols/held/", {"sha256": digests},
                    content_type="application/json", **_auth(key))
    assert r.status_code == 200, r.content
    return r.json()["held"]


def test_held_files_are_named_not_sent_and_analysed_alike(client, live_server, member,
                                                           outsider, worker_factory,
                                                           django_user_model):
    worker_factory()
    key = create_token(member, "ci")
    digests = [_digest(n) for n in BUILD_FILES]
    assert _held(client, key, digests) == []

    first = _cli(live_server, key, "1.0.0-busy.perf.data", "1.0.0",
                 [*BUILD_FILES, "1.0.0-busy.perf.data.tar.bz2"])
    assert first.returncode == 0, first.stderr
    assert "held by the team" not in first.stderr
    assert _held(client, key, digests + ["0" * 64]) == digests

    # the next build: the same symbol bundle, kernel symbols and perf archive (its bytes
    # are the busy capture's: the same DSOs), and the process's maps, which are new
    second = _cli(live_server, key, "1.0.0-idle.perf.data", "1.0.1",
                  [*BUILD_FILES, "1.0.0-idle.perf.data.tar.bz2", "1.0.0-idle.maps"])
    assert second.returncode == 0, second.stderr
    assert _digest("1.0.0-idle.perf.data.tar.bz2") == _digest("1.0.0-busy.perf.data.tar.bz2")
    sizes = {n: (SPINPOOL / n).stat().st_size for n in
             [*BUILD_FILES, "1.0.0-idle.perf.data.tar.bz2"]}
    assert (f"3 of 4 symbol files are held by the team already: not sent "
            f"({sum(sizes.values()) / (1 << 20):.1f} MiB)") in second.stderr
    # only the capture and the maps were sent
    sent = (SPINPOOL / "1.0.0-idle.perf.data").stat().st_size + \
        (SPINPOOL / "1.0.0-idle.maps").stat().st_size
    body = float(re.search(r"uploaded 100% \(([0-9.]+) MiB\)", second.stderr).group(1))
    assert sent < 110_000 and body == round(sent / (1 << 20), 1) == 0.1  # not 6 MiB
    pk = int(second.stdout.split()[1].rstrip(":"))
    new = Capture.objects.get(pk=pk)
    rows = {sf.original_name: sf for sf in SymbolFile.objects.filter(build=new.build)}
    assert sorted(rows) == sorted([*sizes, "1.0.0-idle.maps"])
    old_rows = {sf.original_name.replace("busy", "idle"): sf for sf in
                SymbolFile.objects.filter(build__version="1.0.0")}
    for name in sizes:  # the same stored file, not a copy
        assert rows[name].file.name == old_rows[name].file.name
        assert (rows[name].sha256, rows[name].size) == (_digest(name), sizes[name])
        assert rows[name].uploaded_by == member

    # the analysis read the held files: perf report's numbers for the idle capture,
    # kernel functions (kernel-symbols.zip, held) and libc's (symbols-1.0.0.zip, held)
    _wait_done(client, key, pk)
    result = client.get(f"/api/v1/captures/{pk}/result/", **_auth(key)).json()
    samples, truth = truth_report(SPINPOOL / "1.0.0-idle.truth-report.txt")
    assert result["samples"] == samples == 975
    share = {f["name"]: round(100 * f["self"] / samples, 2) for f in result["functions"]}
    # kernel functions (kernel-symbols.zip), libc's (the perf archive) and the service's
    # own (symbols-1.0.0.zip): every file the analysis read was a held one but the maps
    for name, pct in (("pthread_mutex_lock@@GLIBC_2.2.5", 18.36), ("do_syscall_64", 13.85),
                      ("futex_hash", 6.36), ("qualla::ThreadPool::loop", 5.33)):
        assert share[name] == truth[name] == pct, name
    assert "missing-symbols" not in {f["rule"] for f in result["findings"]}

    # the team's quota counts each stored file once
    team = Team.objects.get(name="inference")
    distinct = {sf.file.name: sf.size for sf in SymbolFile.objects.all()}
    assert len(distinct) == 4 and SymbolFile.objects.count() == 7
    assert team_usage(team) == sum(c.size for c in Capture.objects.all()) + \
        sum(distinct.values())
    # and the user's quota counts the files they sent, not those they named
    assert stored_bytes(sent_by(member)) == sum(distinct.values())
    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    Membership.objects.create(team=team, user=bob)
    r = _upload(client, create_token(bob, "ci"), "1.0.3", [], held=BUILD_FILES)
    assert r.status_code == 201, r.content
    assert SymbolFile.objects.filter(uploaded_by=bob).count() == 2
    assert stored_bytes(sent_by(bob)) == 0 and stored_bytes(sent_by(member)) == \
        sum(distinct.values())
    assert team_usage(team) == sum(c.size for c in Capture.objects.all()) + \
        sum(distinct.values())

    # --resend-symbols sends them all again: new stored files
    third = _cli(live_server, key, "1.1.0-idle.perf.data", "1.0.2", BUILD_FILES,
                 "--resend-symbols")
    assert third.returncode == 0, third.stderr
    assert "held by the team" not in third.stderr
    names = {sf.file.name for sf in SymbolFile.objects.filter(build__version="1.0.2")}
    assert len(names) == 2 and not names & set(distinct)

    # another team holds none of them, and cannot name them in an upload
    other = create_token(outsider, "ci")
    assert _held(client, other, digests) == []
    with open(SPINPOOL / "1.0.0-idle.perf.data", "rb") as f:
        r = client.post("/api/v1/captures/", {
            "service": "stolen", "version": "1", "capture": f,
            "symbols_held": [f"{digests[0]}:symbols.zip"]}, **_auth(other))
    assert r.status_code == 409, r.content
    assert r.json()["missing"] == [digests[0]]
    assert r.json()["detail"].startswith("1 symbol file named by digest is not held by "
                                         "the team; send it: ")
    assert not Capture.objects.filter(build__service__name="stolen").exists()
    assert not Build.objects.filter(service__team__name="elsewhere").exists()


def test_named_files_are_checked(client, member):
    key = create_token(member, "ci")
    for entries, message in (
            (["abc:x.zip"], "'abc:x.zip' is not DIGEST:NAME (a SHA-256 in 64 hex digits, "
                            "a colon, the file's name)"),
            ([f"{'a' * 64}:"], f"'{'a' * 64}:': the name must have 1 to 255 characters")):
        with open(SPINPOOL / "1.0.0-idle.perf.data", "rb") as f:
            r = client.post("/api/v1/captures/", {"service": "s", "version": "1",
                                                   "capture": f, "symbols_held": entries},
                            **_auth(key))
        assert r.status_code == 400 and r.json()["symbols_held"] == [message], r.content
    r = client.post("/api/v1/symbols/held/", {"sha256": ["not-a-digest"]},
                    content_type="application/json", **_auth(key))
    assert r.status_code == 400 and "sha256" in r.json()
    assert client.post("/api/v1/symbols/held/", {"sha256": []},
                       content_type="application/json").status_code in (401, 403)
    assert Capture.objects.count() == 0


def _upload(client, key, version, names, held=()):
    files = [open(SPINPOOL / n, "rb") for n in ["1.0.0-idle.perf.data", *names]]
    try:
        return client.post("/api/v1/captures/", {
            "service": "llm-api", "version": version, "capture": files[0],
            "symbols": files[1:], "symbols_held": [f"{_digest(n)}:{n}" for n in held]},
            **_auth(key))
    finally:
        for f in files:
            f.close()


def test_a_shared_file_goes_with_its_last_row(client, member):
    key = create_token(member, "ci", ADMIN)
    assert _upload(client, key, "1", BUILD_FILES).status_code == 201
    r = _upload(client, key, "2", [], held=BUILD_FILES)
    assert r.status_code == 201, r.content
    one, two = (Build.objects.get(version=v) for v in ("1", "2"))
    stored = {sf.file.name for sf in SymbolFile.objects.filter(build=two)}
    storage = SymbolFile.objects.first().file.storage
    assert len(stored) == 2 and all(storage.exists(n) for n in stored)

    r = client.delete(f"/api/v1/builds/{one.pk}/", **_auth(key))
    assert r.status_code == 200, r.content
    assert r.json()["deleted"]["files"] == 1  # the capture's; the symbol files stay
    assert all(storage.exists(n) for n in stored)
    assert _held(client, key, [_digest(n) for n in BUILD_FILES]) == \
        [_digest(n) for n in BUILD_FILES]

    r = client.delete(f"/api/v1/builds/{two.pk}/", **_auth(key))
    assert r.status_code == 200 and r.json()["deleted"]["files"] == 3
    assert not any(storage.exists(n) for n in stored)
    assert _held(client, key, [_digest(n) for n in BUILD_FILES]) == []


def test_the_client_sends_what_went_missing_since_it_asked(client, live_server, member):
    """Between the question and the upload the team's files may be deleted: the server
    answers 409 with the missing digests, and the client sends those files."""
    key = create_token(member, "ci", ADMIN)
    assert _upload(client, key, "1", BUILD_FILES).status_code == 201
    digests = {str(SPINPOOL / n): _digest(n) for n in BUILD_FILES}
    api = cli.Client(live_server.url, key)
    held = set(digests.values())
    assert set(_held(client, key, list(held))) == held  # what the client was told
    build = Build.objects.get(version="1")
    assert client.delete(f"/api/v1/builds/{build.pk}/", **_auth(key)).status_code == 200

    args = cli.parser().parse_args(
        ["upload", str(SPINPOOL / "1.0.0-idle.perf.data"), "--service", "llm-api",
         "--build", "2", "-q", *[a for s in digests for a in ("--symbols", s)]])
    status, data = cli.send(api, {"service": "llm-api", "version": "2"}, args, digests,
                            held, io.StringIO())
    assert status == 201, data
    rows = SymbolFile.objects.filter(build__version="2")
    assert sorted((sf.original_name, sf.sha256) for sf in rows) == \
        sorted((n, _digest(n)) for n in BUILD_FILES)
    assert all(sf.file.read() == (SPINPOOL / sf.original_name).read_bytes() for sf in rows)
