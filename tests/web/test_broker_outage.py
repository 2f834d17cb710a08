"""The broker goes away and comes back: workers keep running, uploads keep their
captures, and every capture is analysed (a private Redis, killed and started again)."""
import os
import subprocess
import sys
import time

import pytest

from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Capture

from .conftest import ROOT, SPINPOOL, _free_port, wait_for
from .test_limits_and_faults import _private_redis, _redis_up

pytestmark = pytest.mark.django_db(transaction=True)


def _cli(url, key, path, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "perfweb_client", "upload", str(path),
                           "--url", url, "-q", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PERFWEB_TOKEN=key))


@pytest.mark.parametrize("flags", [
    ["--beat", "--concurrency=2", "--schedule", "{tmp}/beat"],
    ["--pool=solo"],
], ids=["deployed", "solo"])
def test_worker_survives_redis_dying_mid_task(member, server_factory, worker_factory,
                                              tmp_path, flags):
    port = _free_port()
    redis_proc = _private_redis(port, tmp_path)
    wait_for(lambda: _redis_up(port), timeout=20)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "PERFWEB_STAGE_DELAY_S": "4"}
    url = server_factory(env)
    worker = worker_factory(env, args=[f.format(tmp=tmp_path) for f in flags])
    key = create_token(member, "ci")
    try:
        r = _cli(url, key, SPINPOOL / "1.1.0-busy.perf.data", "--service", "svc",
                 "--build", "b1")
        assert r.returncode == 0, r.stderr
        wait_for(lambda: Capture.objects.filter(status__in=Capture.ACTIVE).exists())
        redis_proc.kill()
        redis_proc.wait()
        time.sleep(float(os.environ.get('OUTAGE', 8)))
        redis_proc = _private_redis(port, tmp_path)
        wait_for(lambda: _redis_up(port), timeout=20)
        wait_for(lambda: Capture.objects.filter(status="done").count() == 1, timeout=120)
        time.sleep(3)
        assert worker.poll() is None, (tmp_path / "worker-0.log").read_text()[-3000:]
        r = _cli(url, key, SPINPOOL / "1.1.0-idle.perf.data", "--service", "svc",
                 "--build", "b2")
        assert r.returncode == 0, r.stderr
        wait_for(lambda: Capture.objects.filter(status="done").count() == 2, timeout=120)
        assert worker.poll() is None, (tmp_path / "worker-0.log").read_text()[-3000:]
    finally:
        redis_proc.kill()
        redis_proc.wait()
