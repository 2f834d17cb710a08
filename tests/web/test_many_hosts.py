"""Workers on many hosts (issue 18, item 1): with STORAGE_BACKEND=s3 every file is in the
bucket, and a worker needs nothing from the web host's disk.

A real S3-compatible server (moto in server mode, a separate process on a loopback port,
shared by the module) holds the bucket; two real Celery worker processes stand for two
hosts, each with its own MEDIA_ROOT, PERFWEB_CACHE_DIR and temporary folder. The uploads
go through the web app (Django's test client in this process, which stores to the same
bucket). Each worker analyses at least one capture, whose files only the bucket holds;
the results are the exact sample counts perf report gives for those captures; each
worker's symbol cache was built from the symbol file it downloaded; deleting removes the
bucket's objects; nothing was written under any MEDIA_ROOT."""
import hashlib
import io
import socket
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import boto3
import pytest
from django.urls import reverse

from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Capture
from perfweb.captures.uploads import human_size

from .conftest import SPINPOOL, _free_port, stop, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = {"access_key": "perfweb-test", "secret_key": "perfweb-test-secret"}
REGION = "us-east-1"
#: perf report's "# Samples:" line of each capture (1.x.x-busy.report-raw.txt)
SAMPLES = {"1.0.0-busy": 973, "1.0.0-idle": 975, "1.1.0-busy": 154}
LIBQUALLA_1_1_0 = "b003e2d278a9f11abd84cd09db74060508f7db93"  # in 1.1.0-busy.perf.data


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """moto's S3 server on a free loopback port, for every test of this module."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                 "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"moto server exited: {log_path.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > end:
                raise AssertionError(f"moto server not up: {log_path.read_text()}")
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", log_path
    stop([proc])


@pytest.fixture
def bucket(s3_server, settings):
    """A new bucket as this process's default storage; the environment that gives the
    same storage to the processes a test starts (as the deployment's env vars do)."""
    s3_server, _ = s3_server
    name = f"perfweb-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_server, region_name=REGION,
                          aws_access_key_id=KEYS["access_key"],
                          aws_secret_access_key=KEYS["secret_key"])
    client.create_bucket(Bucket=name)
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "perfweb.object_storage.BucketStorage", "OPTIONS": {
            "bucket_name": name, "endpoint_url": s3_server, "region_name": REGION,
            "addressing_style": "path", "file_overwrite": False,
            "default_acl": "private", **KEYS}}}
    env = {"STORAGE_BACKEND": "s3", "AWS_STORAGE_BUCKET_NAME": name,
           "AWS_S3_ENDPOINT_URL": s3_server, "AWS_S3_REGION_NAME": REGION,
           "AWS_S3_ADDRESSING_STYLE": "path", "AWS_ACCESS_KEY_ID": KEYS["access_key"],
           "AWS_SECRET_ACCESS_KEY": KEYS["secret_key"]}

    def keys() -> list[str]:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=name)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", ()))

    return env, keys


def _files_under(folder) -> list[Path]:
    return [p for p in Path(folder).rglob("*") if p.is_file()]


def _upload(client, capture: str, version: str, label: str, symbols: str | None = None):
    files = [open(SPINPOOL / capture, "rb")]
    data = {"service": "llm-api", "version": version, "label": label, "capture": files[0]}
    if symbols:
        files.append(open(SPINPOOL / symbols, "rb"))
        data.update(symbols=files[1], symbols_for_build="on")
    try:
        r = client.post(reverse("upload"), data, HTTP_ACCEPT="application/json")
    finally:
        for f in files:
            f.close()
    assert r.status_code == 200, r.content
    return r.json()["capture"]


def _done(pk: int) -> Capture:
    def finished():
        c = Capture.objects.get(pk=pk)
        return c.finished and c
    c = wait_for(finished, timeout=60)
    assert c.status == "done", c.error
    return c


def test_two_hosts_analyse_captures_only_the_bucket_holds(client, member, bucket, s3_server,
                                                          worker_factory, tmp_path,
                                                          settings):
    env, keys = bucket
    hosts = {}
    for name in ("host-a", "host-b"):
        dirs = {d: tmp_path / name / d for d in ("media", "cache", "tmp")}
        for d in dirs.values():
            d.mkdir(parents=True)
        log = tmp_path / f"worker-{len(hosts)}.log"  # worker_factory's name for it
        worker_factory({**env, "MEDIA_ROOT": str(dirs["media"]),
                        "PERFWEB_CACHE_DIR": str(dirs["cache"]), "TMPDIR": str(dirs["tmp"]),
                        # each analysis holds its worker 2 s or more: a capture queued
                        # while one worker has one goes to the other (prefetch 1, late
                        # acks)
                        "PERFWEB_STAGE_DELAY_S": "0.5"})
        hosts[name] = dirs, log
    for _, log in hosts.values():
        wait_for(lambda: log.exists() and b" ready." in log.read_bytes(), timeout=60)

    client.force_login(member)
    busy = _upload(client, "1.0.0-busy.perf.data", "1.0.0", "busy", "symbols-1.0.0.zip")
    wait_for(lambda: Capture.objects.filter(pk=busy, status__in=Capture.ACTIVE).exists(),
             every=0.05)  # one worker has it
    idle = _upload(client, "1.0.0-idle.perf.data", "1.0.0", "idle")  # the build's symbols
    done = {busy: _done(busy), idle: _done(idle)}
    # compared with 1.0.0's busy capture: its saved profile read back from the bucket
    newer = _upload(client, "1.1.0-busy.perf.data", "1.1.0", "busy", "symbols-1.1.0.zip")
    done[newer] = _done(newer)

    # who did what: each capture analysed once, on one of the two hosts, and each host
    # analysed at least one
    by_host = {name: {pk for pk in done if f"capture {pk} done on".encode() in
                      log.read_bytes()} for name, (_, log) in hosts.items()}
    assert sorted(pk for pks in by_host.values() for pk in pks) == sorted(done), by_host
    assert all(by_host.values()), by_host
    # the symbol cache of each host was built there, from the files it downloaded, and
    # each keeps the 1.0.0 symbol file it downloaded (both analysed a 1.0.0 capture)
    zip_1_0_0 = hashlib.sha256((SPINPOOL / "symbols-1.0.0.zip").read_bytes()).hexdigest()
    for name, (dirs, _) in hosts.items():
        assert list((dirs["cache"] / "symbols").glob("*.idx")), name
        kept = dirs["cache"] / "stored" / zip_1_0_0[:2] / zip_1_0_0
        assert kept.read_bytes() == (SPINPOOL / "symbols-1.0.0.zip").read_bytes(), name

    # nothing on any host's disk: not the web's MEDIA_ROOT, not the workers'
    assert _files_under(settings.MEDIA_ROOT) == []
    for name, (dirs, _) in hosts.items():
        assert _files_under(dirs["media"]) == [], name
        assert _files_under(dirs["tmp"] / "perfweb-work") == [], name  # work folders gone
    stored = keys()
    assert [k.split("/")[0] for k in stored].count("captures") == 3, stored
    assert [k.split("/")[0] for k in stored].count("symbols") == 2, stored
    assert [k.split("/")[0] for k in stored].count("results") == 6, stored  # 2 each

    # the results, through the web app, read from the bucket
    for pk, case in ((busy, "1.0.0-busy"), (idle, "1.0.0-idle"), (newer, "1.1.0-busy")):
        report = client.get(reverse("capture-result", args=[pk])).json()
        assert report["samples"] == SAMPLES[case], case
        rows = client.get(reverse("data-functions", args=[pk])).json()["functions"]
        assert sum(r["s"] for r in rows) == SAMPLES[case], case
        assert "qualla::ThreadPool::loop" in {r["n"] for r in rows}, case  # symbolized
        folded = b"".join(client.get(reverse("capture-folded", args=[pk])).streaming_content)
        assert sum(int(line.rsplit(b" ", 1)[1]) for line in folded.splitlines()) == \
            SAMPLES[case], case
        r = client.get(reverse("capture-download", args=[pk]))
        assert b"".join(r.streaming_content) == (SPINPOOL / f"{case}.perf.data").read_bytes()
    assert done[newer].latest_result().report["compared_with"]["capture"] == busy

    # analysed again (retry), on either host: the capture is downloaded again, the build's
    # symbol file is not (the host kept it)
    symbol_key = Capture.objects.get(pk=busy).build.symbol_files.get().file.name
    capture_key = Capture.objects.get(pk=busy).file.name
    moto_log = s3_server[1]

    def gets(key):
        return moto_log.read_text().count(f'"GET /{env["AWS_STORAGE_BUCKET_NAME"]}/{key} ')
    symbol_gets, capture_gets = gets(symbol_key), gets(capture_key)
    assert symbol_gets == 2  # one per host
    assert client.post(reverse("capture-retry", args=[busy])).status_code == 302
    done[busy] = _done(busy)
    assert done[busy].latest_result().report["samples"] == SAMPLES["1.0.0-busy"]
    assert (gets(symbol_key), gets(capture_key)) == (symbol_gets, capture_gets + 1)
    # the replaced result's two files are gone from the bucket, the new result's are in it;
    # they go once the new result's transaction commits, just after the capture reads
    # "done", so the bucket is given a moment to show it
    new = {f.name for f in (done[busy].latest_result().folded,
                            done[busy].latest_result().profile)}
    wait_for(lambda: len(keys()) == len(stored), timeout=10)
    now = keys()
    assert len(now) == len(stored) and set(now) - set(stored) == new
    stored = now

    # debuginfod serves a member of a symbol file that is in the bucket only
    key = create_token(member, "debuginfod")
    r = client.get(f"/debuginfod/{key}/buildid/{LIBQUALLA_1_1_0}/debuginfo")
    assert r.status_code == 200
    with zipfile.ZipFile(SPINPOOL / "symbols-1.1.0.zip") as z:
        assert b"".join(r.streaming_content) == z.read("libqualla.so.debug")

    # deleting a capture removes its objects from the bucket (its upload, its results)
    mine = [Capture.objects.get(pk=idle).file.name,
            *(f.name for res in done[idle].results.all() for f in (res.folded, res.profile))]
    assert set(mine) <= set(stored)
    sizes = [Capture.objects.get(pk=idle).size] + [
        len(b"".join(f.open("rb").chunks())) for res in done[idle].results.all()
        for f in (res.folded, res.profile)]
    r = client.get(reverse("capture-delete", args=[idle]))  # the confirmation: its sizes
    assert r.status_code == 200 and human_size(sum(sizes)) in r.content.decode(), sizes
    r = client.post(reverse("capture-delete", args=[idle]))
    assert r.status_code == 302
    assert keys() == sorted(set(stored) - set(mine))
    assert len(keys()) == len(stored) - 3


def _bucket_unreachable(settings):
    """This process's storage pointed at a port nobody listens on, asked once (boto3
    would retry a refused connection 4 times, with back-off)."""
    from botocore.config import Config
    options = {**settings.STORAGES["default"]["OPTIONS"],
               "endpoint_url": f"http://127.0.0.1:{_free_port()}",
               "client_config": Config(s3={"addressing_style": "path"},
                                       retries={"total_max_attempts": 1})}
    settings.STORAGES = {**settings.STORAGES, "default": {
        **settings.STORAGES["default"], "OPTIONS": options}}


def test_a_bucket_out_of_reach_is_a_sentence_not_a_500(client, member, bucket, settings):
    """Upload, download, explorer data and an analysis while the bucket is out of reach:
    a 503 saying so (form and API), the analysis fails with a sentence, retryable;
    nothing of the refused upload is kept."""
    from perfweb.captures import services
    from perfweb.store_errors import MESSAGE
    _, keys = bucket
    client.force_login(member)
    pk = _upload(client, "1.1.0-busy.perf.data", "1.1.0", "busy")
    services.run_analysis(pk)
    assert Capture.objects.get(pk=pk).status == "done"
    stored = keys()

    _bucket_unreachable(settings)
    with open(SPINPOOL / "1.0.0-busy.perf.data", "rb") as f:
        r = client.post(reverse("upload"), {"service": "llm-api", "version": "1.0.0",
                                            "label": "busy", "capture": f})
    assert r.status_code == 503 and MESSAGE in r.content.decode()
    key = create_token(member, "ci")
    with open(SPINPOOL / "1.0.0-busy.perf.data", "rb") as f:
        r = client.post("/api/v1/captures/", {"service": "llm-api", "version": "1.0.0",
                                              "label": "busy", "capture": f},
                        HTTP_AUTHORIZATION=f"Token {key}")
    assert (r.status_code, r.json()) == (503, {"detail": MESSAGE})
    assert Capture.objects.count() == 1 and keys() == stored
    assert client.get(reverse("capture-download", args=[pk])).status_code == 503
    r = client.get(reverse("data-functions", args=[pk]), HTTP_ACCEPT="application/json")
    assert (r.status_code, r.json()) == (503, {"detail": MESSAGE})

    Capture.objects.filter(pk=pk).update(status="queued", claim="", attempts=0)
    services.run_analysis(pk)
    c = Capture.objects.get(pk=pk)
    assert (c.status, c.retryable) == ("failed", True)
    assert c.error == ("the file store (the bucket) could not be reached from the worker; "
                       "retrying may help once it is back")


def test_ensure_bucket_makes_the_bucket_once(s3_server, bucket, settings):
    """docker-compose's web service runs it before migrating: a new MinIO has no bucket."""
    from django.core.management import call_command
    s3_server, _ = s3_server
    name = f"perfweb-new-{uuid.uuid4().hex[:8]}"
    options = {**settings.STORAGES["default"]["OPTIONS"], "bucket_name": name}
    settings.STORAGES = {**settings.STORAGES, "default": {
        **settings.STORAGES["default"], "OPTIONS": options}}
    out = io.StringIO()
    call_command("ensure_bucket", stdout=out)
    call_command("ensure_bucket", stdout=out)
    assert out.getvalue().splitlines() == [f"bucket {name} created", f"bucket {name} exists"]
    client = boto3.client("s3", endpoint_url=s3_server, region_name=REGION,
                          aws_access_key_id=KEYS["access_key"],
                          aws_secret_access_key=KEYS["secret_key"])
    assert name in {b["Name"] for b in client.list_buckets()["Buckets"]}
