"""Resource limits and faults, against the real services: quotas, a full disk under
gunicorn, workers over their memory and time limits, Redis restarted in the middle of a
burst of uploads, PostgreSQL stopped and started under a running server."""
import os
import random
import resource
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Capture

from .conftest import ROOT, SPINPOOL, service_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _cli(url, key, path, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "perfweb_client", "upload", str(path),
                           "--url", url, "-q", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PERFWEB_TOKEN=key))


def _auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


def _api_upload(client, key, path, **fields):
    with open(path, "rb") as f:
        return client.post("/api/v1/captures/", {"service": "svc", "version": "1",
                                                 "capture": f, **fields}, **_auth(key))


def _heavy_capture(tmp_path, lines):
    """Folded stacks where every frame is unique: the most memory per byte of input."""
    rnd = random.Random(7)
    path = tmp_path / f"heavy-{lines}.folded"
    with open(path, "w") as f:
        for i in range(lines):
            f.write(";".join(f"fn_{i}_{d}_{rnd.randrange(1 << 30):x}" for d in range(20)))
            f.write(" 1\n")
    return path


def test_quota_per_user(client, member, settings):
    settings.PERFWEB_USER_QUOTA_BYTES = 150_000
    key = create_token(member, "ci")
    assert _api_upload(client, key, SPINPOOL / "1.0.0-idle.perf.data").status_code == 201
    assert _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data").status_code == 201
    r = _api_upload(client, key, SPINPOOL / "1.0.0-busy.perf.data")  # 101,460 bytes more
    assert r.status_code == 400
    assert "over your quota of 150,000 bytes (146.5 KiB)" in r.json()["detail"]
    client.force_login(member)
    with open(SPINPOOL / "1.0.0-busy.perf.data", "rb") as f:
        page = client.post("/upload/", {"service": "svc", "version": "2", "capture": f})
    assert page.status_code == 400 and "over your quota" in page.content.decode()
    assert Capture.objects.count() == 2


def test_disk_full_during_upload(member, server_factory, tmp_path):
    """gunicorn may write files of at most 1 MiB (RLIMIT_FSIZE, as a full disk): a 5 MiB
    upload is refused with a message, nothing is kept, and the server goes on."""
    key = create_token(member, "ci")
    limit = 1 << 20
    url = server_factory(
        {"FILE_UPLOAD_TEMP_DIR": str(tmp_path)},
        preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    big = SPINPOOL / "1.0.0-busy.perf.data.tar.bz2"  # 5.2 MiB
    r = _cli(url, key, big, "--service", "svc", "--build", "1")
    assert r.returncode == 2, r.stderr
    assert "refused (507): The server's storage is full; nothing of this upload was kept" \
        in r.stderr
    assert Capture.objects.count() == 0
    media = os.environ["MEDIA_ROOT"]
    assert not os.path.exists(media) or not any(files for _, _, files in os.walk(media))
    assert [p.name for p in tmp_path.iterdir() if p.is_file() and
            not p.name.startswith("gunicorn-")] == []  # no temporary file left either
    r = _cli(url, key, SPINPOOL / "1.1.0-busy.perf.data", "--service", "svc", "--build", "1")
    assert r.returncode == 0, r.stderr
    assert Capture.objects.count() == 1


def _wait_finished(pk, timeout=120):
    return wait_for(lambda: (c := Capture.objects.get(pk=pk)).finished and c, timeout)


@pytest.mark.parametrize("env, pool, lines, message", [
    ({"PERFWEB_WORKER_MEMORY_MB": "64"}, "solo", 6000,
     "the analysis needed more memory than a worker may use (64 MB, "
     "PERFWEB_WORKER_MEMORY_MB)"),
    ({"PERFWEB_ANALYSIS_TIME_LIMIT_S": "2"}, "prefork", 30000,
     "processing took longer than the 2-second limit (PERFWEB_ANALYSIS_TIME_LIMIT_S)"),
], ids=["memory", "time"])
def test_worker_over_a_limit_fails_that_capture_only(client, member, worker_factory,
                                                     tmp_path, env, pool, lines, message):
    worker_factory(env, pool=pool)
    key = create_token(member, "ci")
    heavy = _api_upload(client, key, _heavy_capture(tmp_path, lines)).json()["id"]
    small = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data").json()["id"]
    failed = _wait_finished(heavy)
    assert failed.status == "failed" and failed.error.startswith(message), failed.error
    done = _wait_finished(small)
    assert done.status == "done", done.error  # the same worker, the next capture


def test_time_limit_during_a_query_still_fails_the_capture(client, member, worker_factory):
    """The deadline's alarm lands while the worker waits on the database (here: the
    capture's row, locked by this test while the worker sleeps between two stages). The
    interrupted query leaves that connection busy (psycopg cancels only on Ctrl-C); the
    failure must still be written, on a fresh connection, not left "parsing" for ever."""
    from django.db import connections
    from django.db.utils import ConnectionHandler
    worker_factory({"PERFWEB_ANALYSIS_TIME_LIMIT_S": "3", "PERFWEB_STAGE_DELAY_S": "2"},
                   pool="prefork")
    key = create_token(member, "ci")
    pk = _api_upload(client, key, SPINPOOL / "1.1.0-busy.perf.data").json()["id"]
    wait_for(lambda: Capture.objects.get(pk=pk).status == Capture.Status.PARSING, 60, 0.05)
    other = ConnectionHandler({"default": connections["default"].settings_dict})["default"]
    try:
        with other.cursor() as cur:  # a transaction of its own, holding the row 6 s
            cur.execute("BEGIN")
            cur.execute("SELECT id FROM captures_capture WHERE id = %s FOR UPDATE", [pk])
            time.sleep(6)
            cur.execute("COMMIT")
    finally:
        other.close()
    failed = _wait_finished(pk, 60)
    assert failed.status == "failed" and failed.error.startswith(
        "processing took longer than the 3-second limit"), failed.error


def _private_redis(port, data_dir):
    return subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(data_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _redis_up(port):
    import redis
    try:
        return redis.Redis(port=port).ping()
    except redis.RedisError:
        return False


def test_redis_restart_during_a_burst_loses_nothing(member, server_factory, worker_factory,
                                                    tmp_path):
    """Twelve uploads while Redis (a private one, without persistence) is killed and
    started again: queued messages are lost with it; the database still says "queued",
    so the sweep queues them again and every capture finishes."""
    from .conftest import _free_port
    port = _free_port()
    redis_proc = _private_redis(port, tmp_path)
    wait_for(lambda: _redis_up(port), timeout=20)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "PERFWEB_QUEUED_GRACE_S": "3",
           "CELERY_BROKER_CONNECTION_MAX_RETRIES": "0"}
    url = server_factory(env)
    key = create_token(member, "ci")
    files = [SPINPOOL / "1.1.0-busy.perf.data", SPINPOOL / "1.1.0-idle.perf.data",
             SPINPOOL / "1.1.0-busy.truth-script.txt", SPINPOOL / "1.1.0-busy.script-raw.txt"]
    uploads = []
    try:
        for i in range(12):
            if i == 6:  # Redis goes away with the queued messages, and comes back
                redis_proc.kill()
                redis_proc.wait()
                redis_proc = _private_redis(port, tmp_path)
                wait_for(lambda: _redis_up(port), timeout=20)
            r = _cli(url, key, files[i % 4], "--service", "svc", "--build", f"b{i}")
            uploads.append(r)
        assert all(r.returncode == 0 for r in uploads), [r.stderr for r in uploads]
        assert Capture.objects.count() == 12
        worker_factory(env)  # a worker on the restarted Redis: it sees only what survived
        time.sleep(4)  # past PERFWEB_QUEUED_GRACE_S
        sweep = subprocess.run([sys.executable, "manage.py", "sweep_captures"], cwd=ROOT,
                               env=service_env(env), capture_output=True, text=True,
                               timeout=120)
        assert sweep.returncode == 0, sweep.stderr
        wait_for(lambda: Capture.objects.filter(status="done").count() == 12, timeout=180)
    finally:
        redis_proc.kill()
        redis_proc.wait()


PG_BIN = "/usr/lib/postgresql"


def _pg(tool):
    versions = sorted(os.listdir(PG_BIN)) if os.path.isdir(PG_BIN) else []
    if not versions:
        pytest.fail("PostgreSQL server binaries are missing")
    return os.path.join(PG_BIN, versions[-1], "bin", tool)


def _as_postgres(*cmd, **kw):
    return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True,
                          capture_output=True, text=True, **kw)


def test_postgres_restart_fails_requests_cleanly_then_recovers(member, server_factory,
                                                               tmp_path):
    """A private PostgreSQL cluster under a running gunicorn: while it is down, pages and
    the API answer 503 with a message (no traceback); when it is back, they work."""
    import tempfile
    from pathlib import Path

    from .conftest import _free_port
    data = Path(tempfile.mkdtemp(prefix="perfweb-pg-"))  # pytest's tmp is private to root
    shutil.chown(data, "postgres", "postgres")
    _as_postgres(_pg("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    port = _free_port()
    ctl = [_pg("pg_ctl"), "-D", str(data), "-o", f"-p {port} -k {data} -c fsync=off", "-w"]
    _as_postgres(*ctl, "-l", str(data / "log"), "start")
    try:
        _as_postgres(_pg("createdb"), "-h", "127.0.0.1", "-p", str(port), "perfweb")
        env = {"DATABASE_URL": f"postgres://postgres@127.0.0.1:{port}/perfweb"}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT,
                       env=service_env(env), check=True, timeout=300)
        url = server_factory(env)
        shared, api = url + "/s/1.not-a-link/", url + "/api/v1/services/"
        token = {"Authorization": "Token pw_unknown"}
        assert _status(shared) == 410 and _status(api, token) == 401  # both read the db

        _as_postgres(*ctl, "-m", "fast", "stop")
        for target, headers, kind in ((shared, {}, "text/html"),
                                      (api, token, "application/json")):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(urllib.request.Request(target, headers=headers),
                                       timeout=10)
            assert e.value.code == 503
            body = e.value.read().decode()
            assert e.value.headers["Content-Type"].startswith(kind)
            assert "database is unavailable" in body and "Traceback" not in body

        _as_postgres(*ctl, "-l", str(data / "log"), "start")
        wait_for(lambda: _status(shared) == 410, timeout=30)
        assert _status(api, token) == 401
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", *ctl, "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def _status(url, headers=None):
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                      timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None
