"""The REST API and the upload CLI against the live server, a Celery worker, PostgreSQL and
Redis: two builds of a service, their comparison, history, exports, debuginfod, and the
walls between teams."""
import io
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from analysis.importers import load
from perfweb.captures.api_tokens import READ, create_token, revoke_token
from perfweb.captures.models import ApiToken, Capture, Membership, Service, SymbolFile, Team

from truth import truth_report
from .conftest import ROOT, SPINPOOL, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

BUSY_NEW = ["symbols-1.0.0.zip", "kernel-symbols.zip", "1.0.0-busy.perf.data.tar.bz2"]
BUSY_OLD = ["symbols-1.1.0.zip", "kernel-symbols.zip", "1.1.0-busy.perf.data.tar.bz2"]


def _auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


def _api_upload(client, key, capture, symbols=(), **fields):
    data = {"service": "llm-api", "version": "1.0.0", "label": "busy", **fields}
    files = [open(capture, "rb")] + [open(SPINPOOL / s, "rb") for s in symbols]
    try:
        data["capture"] = files[0]
        data["symbols"] = files[1:]
        return client.post("/api/v1/captures/", data, **_auth(key))
    finally:
        for f in files:
            f.close()


def _wait_done(client, key, pk):
    def finished():
        body = client.get(f"/api/v1/captures/{pk}/", **_auth(key)).json()
        return body if body["finished"] else None
    body = wait_for(finished)
    assert body["status"] == "done", body["error"]
    return body


def _cli(live_server, key, *args):
    env = dict(os.environ, PERFWEB_TOKEN=key)
    return subprocess.run([sys.executable, "-m", "perfweb_client", "upload", *args,
                           "--url", live_server.url], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_two_builds_via_api_and_cli_then_compare(client, live_server, member,
                                                 worker_factory):
    """The story of a release that made a service slow: 1.1.0 is fine, the next build
    spins on a mutex (the 1.0.0 capture, uploaded as build 1.2.0)."""
    worker_factory()
    key = create_token(member, "ci")

    # both served 400 jobs/s (40 jobs every 100 ms): the rates go with the uploads
    r = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data", BUSY_OLD, version="1.1.0",
                    rate="400", rate_unit="jobs/s")
    assert r.status_code == 201, r.content
    old = _wait_done(client, key, r.json()["id"])
    assert old["service"] == "llm-api" and old["version"] == "1.1.0"
    assert (old["rate"], old["rate_unit"]) == (400.0, "jobs/s")

    cli = _cli(live_server, key, str(SPINPOOL / "1.0.0-busy.perf.data"),
               "--service", "llm-api", "--build", "1.2.0", "--label", "busy",
               "--rate", "400", "--rate-unit", "jobs/s",
               *[a for s in BUSY_NEW for a in ("--symbols", str(SPINPOOL / s))], "--wait")
    assert cli.returncode == 0, cli.stderr
    new_id = int(cli.stdout.split()[1].rstrip(":"))
    assert "uploaded 100%" in cli.stderr and "done" in cli.stderr
    # the findings are printed; the new build regressed against 1.1.0
    assert "[high] Regression against the previous build" in cli.stdout
    assert "pthread_mutex_lock 0.0% -> 14.8%" in cli.stdout

    # the comparison: shares normalised to each capture, as perf report gives them
    cmp = client.get(f"/api/v1/captures/{new_id}/compare/", **_auth(key)).json()
    assert cmp["before"]["id"] == old["id"] and cmp["after"]["id"] == new_id
    assert (cmp["samples_before"], cmp["samples_after"]) == (154, 973)
    samples, truth = truth_report(SPINPOOL / "1.0.0-busy.truth-report.txt")
    movers = {m["name"]: m for m in cmp["movers"]["functions"]}  # by function identity
    for name, perf_name in (("pthread_mutex_lock", "pthread_mutex_lock@@GLIBC_2.2.5"),
                            ("do_syscall_64", "do_syscall_64"),
                            ("__GI___pthread_mutex_unlock_usercnt",
                             "__GI___pthread_mutex_unlock_usercnt")):
        assert movers[name]["self_before"] == 0.0
        assert movers[name]["self_after"] == truth[perf_name]
        assert movers[name]["self_change"] == truth[perf_name]
    invoke = next(m for m in cmp["movers"]["functions"] if "_M_invoke" in m["name"])
    assert (invoke["self_before"], invoke["self_after"]) == (100.0, 15.31)
    dsos = {d["dso"]: d for d in cmp["movers"]["dsos"]}
    assert dsos["libc.so"]["self_after"] > 30 and dsos["libc.so"]["self_before"] == 0
    assert cmp["cpus_before"] < 0.5 and cmp["cpus_after"] > 1.9
    assert "lock-contention" in {f["rule"] for f in cmp["findings_appeared"]}
    assert cmp["findings_gone"] == []
    assert cmp["verdict"] == "regression"
    assert cmp["reason"].startswith("CPU per job +524% (790 µs -> 4.93 ms of CPU per job) "
                                    "at 400 -> 400 jobs/s; lock waits, locking grew")
    assert cmp["rates"] == {"before": {"value": 400.0, "unit": "jobs/s"},
                            "after": {"value": 400.0, "unit": "jobs/s"}}
    assert cmp["cpu_per_unit"]["unit"] == "job"
    assert cmp["regression"]["functions"][0] == "pthread_mutex_lock"
    assert "tree" not in cmp
    tree = client.get(f"/api/v1/captures/{new_id}/compare/?tree=1", **_auth(key)).json()["tree"]
    assert (tree["a"], tree["b"]) == (154, 973)

    # the pipeline stored the same comparison; its regression finding is shown with the
    # findings, while the report stays the capture's own diagnosis
    findings = client.get(f"/api/v1/captures/{new_id}/findings/", **_auth(key)).json()
    assert findings[0]["rule"] == "cpu-use" and findings[1]["rule"] == "regression"
    assert findings[1]["summary"].startswith("CPU per job +524%")
    result = client.get(f"/api/v1/captures/{new_id}/result/", **_auth(key)).json()
    assert result["samples"] == samples == 973
    assert "regression" not in {f["rule"] for f in result["findings"]}
    assert result["compared_with"]["capture"] == old["id"]
    assert result["compared_with"]["verdict"] == "regression"
    assert result["rate"] == {"value": 400.0, "unit": "jobs/s"}
    stored = Capture.objects.get(pk=new_id).latest_result().comparison
    assert (stored["verdict"], stored["reason"]) == (cmp["verdict"], cmp["reason"])

    # history: one point per capture, builds in order
    services = client.get("/api/v1/services/", **_auth(key)).json()["results"]
    assert [s["name"] for s in services] == ["llm-api"]
    hist = client.get(f"/api/v1/services/{services[0]['id']}/history/", **_auth(key)).json()
    assert [(p["capture"], p["build"], p["label"]) for p in hist["points"]] == \
        [(old["id"], "1.1.0", "busy"), (new_id, "1.2.0", "busy")]
    assert [b["version"] for b in hist["builds"]] == ["1.1.0", "1.2.0"]
    assert hist["builds"][1]["rules"]["lock-contention"] > hist["builds"][0]["rules"].get(
        "lock-contention", 0)
    builds = client.get(f"/api/v1/services/{services[0]['id']}/builds/",
                        **_auth(key)).json()["results"]
    assert [(b["version"], b["captures"]) for b in builds] == [("1.1.0", 1), ("1.2.0", 1)]

    # exports of the new capture
    r = client.get(f"/api/v1/captures/{new_id}/export/speedscope/", **_auth(key))
    doc = json.loads(b"".join(r.streaming_content) if r.streaming else r.content)
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert sum(len(p["samples"]) for p in doc["profiles"]) == 973
    assert sum(sum(p["weights"]) for p in doc["profiles"]) == 973 * 10_101_010  # ns
    frames = doc["shared"]["frames"]
    assert all(0 <= i < len(frames) for p in doc["profiles"] for s in p["samples"] for i in s)
    text = client.get(f"/api/v1/captures/{new_id}/export/perf-script/", **_auth(key)).getvalue()
    again = load(io.BytesIO(text))
    assert again.meta.format == "perf-script" and len(again) == 973
    folded = b"".join(client.get(f"/api/v1/captures/{new_id}/export/folded/",
                                 **_auth(key)).streaming_content)
    assert sum(int(line.rsplit(b" ", 1)[1]) for line in folded.splitlines()) == 973
    assert client.get(f"/api/v1/captures/{new_id}/export/pdf/",
                      **_auth(key)).status_code == 400


def test_debuginfod_find_fetches_a_debug_file(client, live_server, member, worker_factory,
                                             tmp_path):
    worker_factory()
    key = create_token(member, "laptop")
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data", ["symbols-1.0.0.zip"],
                    label="idle")
    _wait_done(client, key, r.json()["id"])
    from perfweb.captures.models import BuildIdEntry
    entry = BuildIdEntry.objects.get(member="libqualla.so.debug", kind="debuginfo")
    read_key = create_token(member, "gdb", READ)  # as the tokens page advises
    env = dict(os.environ, DEBUGINFOD_URLS=f"{live_server.url}/debuginfod/{read_key}",
               DEBUGINFOD_CACHE_PATH=str(tmp_path / "cache"), DEBUGINFOD_TIMEOUT="60")
    found = subprocess.run(["debuginfod-find", "debuginfo", entry.build_id], env=env,
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    path = found.stdout.strip()
    import zipfile
    with zipfile.ZipFile(SPINPOOL / "symbols-1.0.0.zip") as z:
        assert open(path, "rb").read() == z.read("libqualla.so.debug")
    # another team's token, or a revoked one, finds nothing
    outsider_key = _outsider_key()
    for bad in (outsider_key, "pw_not-a-token"):
        env["DEBUGINFOD_URLS"] = f"{live_server.url}/debuginfod/{bad}"
        env["DEBUGINFOD_CACHE_PATH"] = str(tmp_path / f"cache-{bad[:6]}")
        miss = subprocess.run(["debuginfod-find", "debuginfo", entry.build_id], env=env,
                              capture_output=True, text=True, timeout=120)
        assert miss.returncode != 0


def _outsider_key():
    from django.contrib.auth import get_user_model
    user = get_user_model().objects.create_user("eve", password="pw-eve-123")
    Membership.objects.create(team=Team.objects.create(name="other"), user=user)
    return create_token(user, "other")


def test_a_token_sees_only_its_teams(client, member):
    key = create_token(member, "ci")
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data", label="idle")
    assert r.status_code == 201
    pk = r.json()["id"]
    other = _outsider_key()
    for path in (f"/api/v1/captures/{pk}/", f"/api/v1/captures/{pk}/result/",
                 f"/api/v1/captures/{pk}/findings/", f"/api/v1/captures/{pk}/compare/",
                 f"/api/v1/captures/{pk}/export/folded/",
                 f"/api/v1/services/{Capture.objects.get().build.service_id}/history/"):
        assert client.get(path, **_auth(other)).status_code == 404, path
    assert client.get("/api/v1/captures/", **_auth(other)).json()["results"] == []
    assert client.get("/api/v1/services/", **_auth(other)).json()["results"] == []
    # the owner sees it; still queued (no worker): results are "not ready", not a 500
    assert client.get(f"/api/v1/captures/{pk}/", **_auth(key)).json()["status"] == "queued"
    r = client.get(f"/api/v1/captures/{pk}/result/", **_auth(key))
    assert r.status_code == 409 and "queued" in r.json()["detail"]
    # no token, a wrong one, a revoked one
    assert client.get("/api/v1/captures/").status_code in (401, 403)
    assert client.get("/api/v1/captures/", **_auth("pw_wrong")).status_code == 401
    revoke_token(member, ApiToken.objects.get(user=member).pk)
    assert client.get("/api/v1/captures/", **_auth(key)).status_code == 401
    assert ApiToken.objects.get(user=member).digest != key  # only a digest is stored


def test_upload_mistakes_get_clear_messages(client, member, settings):
    key = create_token(member, "ci")
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data", service="")
    assert r.status_code == 400 and "service" in r.json()
    settings.PERFWEB_MAX_UPLOAD_BYTES = 50000
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data")
    assert r.status_code == 400
    assert ("1.0.0-idle.perf.data is 103,996 bytes (101.6 KiB); the limit is 50,000 bytes "
            "(48.8 KiB)") in \
        r.json()["capture"][0]
    settings.PERFWEB_MAX_UPLOAD_BYTES = 1000
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data")
    assert r.status_code == 413 and "may be 1,000 bytes each" in r.json()["detail"]
    settings.PERFWEB_MAX_UPLOAD_BYTES = 1 << 30
    Membership.objects.create(team=Team.objects.create(name="second"), user=member)
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data")
    assert r.status_code == 400 and "several teams" in r.json()["team"]
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data", team="nope")
    assert r.status_code == 400 and "not a member" in r.json()["team"]
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data", team="second")
    assert r.status_code == 201
    assert Capture.objects.get().build.service.team.name == "second"
    # the same bytes again: the existing capture, 200
    r = _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data", team="second")
    assert r.status_code == 200 and r.json()["duplicate"] is True


def test_cli_reports_refusals_and_failures(client, live_server, member, worker_factory,
                                           tmp_path):
    key = create_token(member, "ci")
    r = _cli(live_server, "pw_wrong", str(SPINPOOL / "1.0.0-idle.perf.data"),
             "--service", "s", "--build", "1")
    assert r.returncode == 2 and "invalid or revoked token" in r.stderr
    r = _cli(live_server, key, str(tmp_path), "--service", "s", "--build", "1")
    assert r.returncode == 2 and "is not a file" in r.stderr
    worker_factory()
    # a file of no format perfweb reads is refused before anything is made for it
    garbage = tmp_path / "notes.txt"
    garbage.write_text("this is not a profile\n")
    r = _cli(live_server, key, str(garbage), "--service", "s", "--build", "1", "--wait")
    assert r.returncode == 2 and "this file is not a capture perfweb can read: not perf " \
        "script, perf report or folded-stack text" in r.stderr, r.stderr
    assert not Capture.objects.exists() and not Service.objects.filter(name="s").exists()
    # a capture cut short is one, and its analysis fails with perf's reason
    cut = tmp_path / "cut.perf.data"
    cut.write_bytes((SPINPOOL / "1.0.0-idle.perf.data").read_bytes()[:300])
    r = _cli(live_server, key, str(cut), "--service", "s", "--build", "1", "--wait")
    assert r.returncode == 1 and "analysis failed" in r.stderr and "cut short" in r.stderr


def test_the_cli_states_the_files_limit(live_server, member, tmp_path):
    """An upload holds at most 100 files: the CLI says so before sending a byte of a
    101st (the server would stop reading there only after the 100 files before it), and
    sends 100."""
    key = create_token(member, "ci")
    maps = []
    for i in range(100):
        maps.append(tmp_path / f"perf-{2000 + i}.map")
        maps[-1].write_text(f"401000 10 handler_{i}\n")
    args = [str(SPINPOOL / "1.0.0-idle.perf.data"), "--service", "many", "--build", "1"]
    r = _cli(live_server, key, *args, *[a for m in maps for a in ("--symbols", str(m))])
    assert r.returncode == 2 and r.stderr == (
        "perfweb: upload refused: an upload holds at most 100 files (the capture, symbol "
        "files and source archives together); this one has 101. Put the symbol files in a "
        ".zip or .tar.gz archive (its members are read).\n")
    assert not Capture.objects.exists()
    r = _cli(live_server, key, *args, *[a for m in maps[:99] for a in ("--symbols", str(m))])
    assert r.returncode == 0, r.stderr
    assert Capture.objects.count() == 1 and SymbolFile.objects.count() == 99
    help_text = subprocess.run([sys.executable, "-m", "perfweb_client", "upload", "--help"],
                               cwd=ROOT, capture_output=True, text=True).stdout
    assert "at most 100 files in one upload" in " ".join(help_text.split())


def test_openapi_schema(client, member):
    key = create_token(member, "ci")
    r = client.get("/api/schema/", **_auth(key))
    assert r.status_code == 200
    schema = yaml.safe_load(r.content)
    paths = schema["paths"]
    for p in ("/api/v1/captures/", "/api/v1/captures/{id}/result/",
              "/api/v1/captures/{id}/compare/", "/api/v1/services/{id}/builds/"):
        assert p in paths
    for p in ("/api/v1/captures/{id}/", "/api/v1/builds/{id}/", "/api/v1/services/{id}/"):
        answer = paths[p]["delete"]["responses"]["200"]["content"]["application/json"]
        assert answer["schema"] == {"$ref": "#/components/schemas/Deleted"}
    assert "multipart/form-data" in paths["/api/v1/captures/"]["post"]["requestBody"]["content"]
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_tokens_page_creates_shows_once_and_revokes(client, member):
    client.force_login(member)
    page = client.post("/account/tokens/", {"name": "ci upload"}).content.decode()
    key = re.search(r'id="new-token">(pw_[\w-]+)<', page).group(1)
    assert len(key) >= 40
    assert key not in client.get("/account/tokens/").content.decode()  # shown once
    client.logout()
    assert client.get("/api/v1/services/", **_auth(key)).status_code == 200
    client.force_login(member)
    token = ApiToken.objects.get(user=member)
    assert token.name == "ci upload" and token.last_used_at is not None
    client.post("/account/tokens/", {"revoke": str(token.pk)})
    client.logout()
    assert client.get("/api/v1/services/", **_auth(key)).status_code == 401


def test_a_rate_must_be_a_positive_number(client, live_server, member):
    key = create_token(member, "ci")
    r = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data", rate="0")
    assert r.status_code == 400 and "rate" in r.json()
    r = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data", rate="fast")
    assert r.status_code == 400 and "rate" in r.json()
    assert not Capture.objects.exists()
    cli = _cli(live_server, key, str(SPINPOOL / "1.1.0-busy.perf.data"), "--service", "s",
               "--build", "1", "--rate", "-5")
    assert cli.returncode == 2 and "a rate must be a positive number" in cli.stderr
    client.force_login(member)
    page = client.get("/upload/").content.decode()
    assert 'name="rate"' in page and 'name="rate_unit"' in page and "CPU per unit" in page


def test_a_rate_measured_several_times_keeps_its_runs(client, live_server, member):
    """Several runs' throughputs (issue 38): through the API (a string or a list), the
    CLI and the form, the capture keeps their mean and every run; the comparison reads
    them as one rate with its spread."""
    from perfweb.captures.services.history import rate_of
    from .test_pipeline import _upload
    key = create_token(member, "ci")
    r = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data", rate="7.5, 7.9, 8.1",
                    rate_unit="MB/s")
    assert r.status_code == 201, r.content[:300]
    api = Capture.objects.get()
    assert (api.rate, api.rate_values) == (pytest.approx(7.8333, abs=1e-4), [7.5, 7.9, 8.1])
    got = client.get(f"/api/v1/captures/{api.pk}/", **_auth(key)).json()
    assert got["rate_values"] == [7.5, 7.9, 8.1]
    rate = rate_of(api)
    assert (rate.values, rate.unit, rate.per) == ((7.5, 7.9, 8.1), "MB/s", "MB")
    r = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data", rate="7.5, x")
    assert r.status_code == 400
    assert r.json()["rate"] == ["'7.5, x' is not a number, or numbers separated by commas"]
    cli = _cli(live_server, key, str(SPINPOOL / "1.1.0-busy.perf.data"), "--service", "s",
               "--build", "2", "--rate", "9.0,9.2,9.4", "--rate-unit", "MB/s")
    assert cli.returncode == 0, cli.stderr
    assert Capture.objects.get(build__version="2").rate_values == [9.0, 9.2, 9.4]
    # a mean with its spread: three equivalent runs (mean 9.2, deviation 0.2)
    cli = _cli(live_server, key, str(SPINPOOL / "1.1.0-busy.perf.data"), "--service", "s",
               "--build", "2b", "--rate", "9.2±0.2 n=3", "--rate-unit", "MB/s")
    assert cli.returncode == 0, cli.stderr
    assert Capture.objects.get(build__version="2b").rate_values == \
        pytest.approx([9.4, 9.0, 9.2])
    cli = _cli(live_server, key, str(SPINPOOL / "1.1.0-busy.perf.data"), "--service", "s",
               "--build", "2c", "--rate", "9.2±0.2 n=1")
    assert cli.returncode == 2 and "over 2 runs or more" in cli.stderr
    client.force_login(member)
    r = _upload(client, SPINPOOL / "1.1.0-busy.perf.data", version="3", rate="100 110",
                rate_unit="req/s")
    assert r.status_code == 302, r.content[:300]
    form = Capture.objects.get(build__version="3")
    assert (form.rate, form.rate_values) == (105.0, [100.0, 110.0])
    one = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data", version="4",
                      rate="53556")
    assert one.status_code == 201
    single = Capture.objects.get(build__version="4")
    assert (single.rate, single.rate_values) == (53556.0, [])


def test_repeated_captures_of_a_build_are_repeated_measurements(client, live_server, member,
                                                                worker_factory):
    """Two captures of build 1.0.0 under one label, at 400 and 410 jobs/s, then 1.1.0 at
    380 and 385 (one capture, two runs): the comparison reads each build's throughput
    from all its runs, and judges the -5% change by their spread (issue 38)."""
    worker_factory()
    key = create_token(member, "ci")
    # (three files of one recording: an upload of the same file is the same capture)
    for name, rate in (("1.1.0-busy.perf.data", "400"), ("1.1.0-busy.truth-script.txt", "410")):
        r = _api_upload(client, key, SPINPOOL / name, rate=rate, rate_unit="jobs/s")
        assert r.status_code == 201, r.content[:300]
        _wait_done(client, key, r.json()["id"])
    r = _api_upload(client, key, SPINPOOL / "1.1.0-busy.script-raw.txt", version="1.1.0",
                    rate="380, 385", rate_unit="jobs/s")
    assert r.status_code == 201, r.content[:300]
    new = _wait_done(client, key, r.json()["id"])
    cmp = client.get(f"/api/v1/captures/{new['id']}/compare/", **_auth(key)).json()
    before, after = cmp["rates"]["before"], cmp["rates"]["after"]
    assert sorted(before["values"]) == [400.0, 410.0] and before["value"] == 405.0
    assert after == {"value": 382.5, "unit": "jobs/s", "values": [380.0, 385.0]}
    assert cmp["throughput"]["measured"] == [2, 2]
    assert cmp["reason"].endswith("(2 and 2 measurements).")
    assert new["verdict"]["verdict"] == cmp["verdict"]
    # and what moved by both captures of 1.0.0 (the pipeline's stored comparison too)
    assert cmp["movers"]["captures"] == [2, 1]
    stored = Capture.objects.get(pk=new["id"]).latest_result().comparison
    assert stored["movers"]["captures"] == [2, 1]
    client.force_login(member)
    page = client.get(f"/compare/{cmp['before']['id']}/{new['id']}/").content.decode()
    assert "shares are the mean of the 2 and 1 captures of each build" in page
