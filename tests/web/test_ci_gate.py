"""`perfweb upload --wait --fail-on regression` as a subprocess against the live server
and a real Celery worker: no previous build passes, spinpool 1.1.0 idle -> 1.0.0 idle
(0.00 -> 1.97 CPUs busy) fails with exit 4 and the verdict's reason, the fix after it
passes; a timeout, a failed analysis and a wrong --fail-on keep their own codes."""
import os
import subprocess
import sys

import pytest

from perfweb.captures.api_tokens import create_token

from .conftest import ROOT, SPINPOOL

pytestmark = pytest.mark.django_db(transaction=True)

IDLE_FIXED, IDLE_SPIN = SPINPOOL / "1.1.0-idle.perf.data", SPINPOOL / "1.0.0-idle.perf.data"


def _upload(live_server, key, path, build, *flags):
    env = dict(os.environ, PERFWEB_TOKEN=key)
    return subprocess.run(
        [sys.executable, "-m", "perfweb_client", "upload", str(path), "--service", "llm-api",
         "--build", build, "--label", "idle", "--url", live_server.url, "-q", *flags],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _id(run) -> int:
    return int(run.stdout.split()[1].rstrip(":"))


def test_the_gate_fails_a_regression_and_passes_its_fix(client, live_server, member,
                                                        worker_factory):
    worker_factory()
    key = create_token(member, "ci")
    auth = {"HTTP_AUTHORIZATION": f"Token {key}"}

    first = _upload(live_server, key, IDLE_FIXED, "1.1.0", "--wait", "--fail-on",
                    "regression")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == (
        "verdict: none (no analysed labelled 'idle' capture of an earlier build of "
        "llm-api to compare with); passing")
    a = _id(first)
    assert client.get(f"/api/v1/captures/{a}/", **auth).json()["verdict"] is None

    bad = _upload(live_server, key, IDLE_SPIN, "1.2.0", "--wait", "--fail-on", "regression")
    assert bad.returncode == 4, (bad.stdout, bad.stderr)
    b = _id(bad)
    reason = ("Both captures are idle (no work), so every CPU used is waste: CPUs busy "
              "0.00 -> 1.97.")
    assert bad.stderr.splitlines()[-1] == \
        f"perfweb: failing (--fail-on regression): regression against build 1.1.0: {reason}"
    lines = bad.stdout.splitlines()
    assert lines[-2:] == [f"verdict: regression against build 1.1.0 (capture {a}): {reason}",
                          f"    {live_server.url}/compare/{a}/{b}/"]
    assert "[medium] Regression against the previous build" in bad.stdout  # the findings
    assert client.get(f"/api/v1/captures/{b}/", **auth).json()["verdict"] == {
        "verdict": "regression", "reason": reason,
        "before": {"id": a, "build": "1.1.0", "label": "idle"},
        "url": f"http://testserver/compare/{a}/{b}/"}

    # the fix: --fail-on waits by itself
    fixed = _upload(live_server, key, IDLE_FIXED, "1.3.0", "--fail-on", "regression")
    assert fixed.returncode == 0, fixed.stderr
    c = _id(fixed)
    assert fixed.stdout.splitlines()[-3:] == [
        f"verdict: improvement against build 1.2.0 (capture {b}): Both captures are idle "
        f"(no work), so every CPU used is waste: CPUs busy 1.97 -> 0.00.",
        f"    {live_server.url}/compare/{b}/{c}/",
        "improvement: not a regression; passing"]
    assert "done" in fixed.stderr

    # the same capture again as the next build: no significant change, which passes
    # (the gate and the webhook fire on a significant regression only)
    same = _upload(live_server, key, IDLE_FIXED, "1.4.0", "--fail-on", "regression")
    assert same.returncode == 0, same.stderr
    assert same.stdout.splitlines()[-1] == "no significant change: not a regression; passing"


def test_timeouts_failures_and_mistakes_have_their_own_codes(live_server, member,
                                                             worker_factory, tmp_path):
    key = create_token(member, "ci")
    # no worker yet: the capture stays queued past --wait-timeout
    late = _upload(live_server, key, IDLE_FIXED, "2.0.0", "--fail-on", "regression",
                   "--wait-timeout", "0")
    assert late.returncode == 3, late.stderr
    assert "perfweb: still queued after 0 s; see " in late.stderr

    worker_factory()
    garbage = tmp_path / "not-a-profile.txt"
    garbage.write_bytes(b"\x00\x01 this is no profile \xff\n" * 50)
    refused = _upload(live_server, key, garbage, "2.1.0", "--wait", "--fail-on", "regression")
    assert refused.returncode == 2 and "not a capture perfweb can read" in refused.stderr
    cut = tmp_path / "cut.perf.data"  # a capture whose analysis fails
    cut.write_bytes(IDLE_FIXED.read_bytes()[:300])
    failed = _upload(live_server, key, cut, "2.1.0", "--wait", "--fail-on", "regression")
    assert failed.returncode == 1, failed.stderr
    assert failed.stderr.splitlines()[-1].startswith("perfweb: analysis failed: ")
    assert "verdict" not in failed.stdout

    wrong = _upload(live_server, key, IDLE_FIXED, "2.2.0", "--fail-on", "regresion")
    assert wrong.returncode == 2
    assert "argument --fail-on: 'regresion' is not a verdict to fail on (choose from " \
           "regression)" in wrong.stderr
