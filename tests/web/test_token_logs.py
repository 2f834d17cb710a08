"""API tokens never reach a log or an error report (perfweb/token_scrub.py,
perfweb/error_reports.py, perfweb/gunicorn_conf.py): gunicorn started with the deployed
command line's options is sent requests that carry a token in their URL (a debuginfod
miss, a 404, a 405, a 403 for CSRF, a share link that is no longer valid, a token in a query string) and
in their headers (a refused scope), and its whole output, gunicorn's access and error
logs with Django's, is read back; Django's error report and e-mail for an exception in
a request that carries a token are read; Celery's logging, which replaces Django's
handlers, is set up as its worker sets it up."""
import logging
import shlex
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import yaml
from django.core import mail
from django.test import RequestFactory
from django.views.debug import get_exception_reporter_class

from perfweb.captures.api_tokens import ADMIN, READ, create_token
from perfweb.token_scrub import REDACTED, scrub

from .conftest import ROOT, service_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _deployed_gunicorn_options():
    """The web service's gunicorn options in docker-compose.yml, without its address
    (the test binds its own) and the application."""
    command = yaml.safe_load((ROOT / "docker-compose.yml").read_text())[
        "services"]["web"]["command"]
    words = shlex.split(shlex.split(command)[-1].split("&&")[-1])
    assert words[0] == "gunicorn" and "perfweb.wsgi" in words, words
    options, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word == "--bind":
            skip = True
        elif word != "perfweb.wsgi":
            options.append(word)
    return options


def _request(url, method="GET", headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(
                url, method=method, headers=headers or {}), timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _leaks(text: str, secret: str) -> list[str]:
    """The lines of `text` holding any 12 characters of `secret` after its shown
    prefix."""
    pieces = {secret[i:i + 12] for i in range(8, len(secret) - 11)}
    return [line for line in text.splitlines() if any(p in line for p in pieces)]


def test_tokens_never_reach_gunicorn_or_django_logs(server_factory, member, tmp_path):
    read_key, admin_key = create_token(member, "laptop", READ), create_token(member, "ci",
                                                                             ADMIN)
    share = "s" * 32  # no such link
    base = server_factory(args=_deployed_gunicorn_options())
    build_id = "ab" * 20
    assert _request(f"{base}/debuginfod/{read_key}/buildid/{build_id}/debuginfo") == 404
    assert _request(f"{base}/debuginfod/{admin_key}/nonsense/{build_id}") == 404
    assert _request(f"{base}/debuginfod/{read_key}/buildid/{build_id}/debuginfo",
                    method="HEAD") == 405
    assert _request(f"{base}/debuginfod/{read_key}/buildid/{build_id}/debuginfo",
                    method="POST") == 403  # (no CSRF cookie)
    assert _request(f"{base}/api/v1/captures/?token={admin_key}") in (401, 403)
    assert _request(f"{base}/api/v1/services/1/", method="DELETE",
                    headers={"Authorization": f"Token {read_key}"}) == 403
    assert _request(f"{base}/s/12.{share}/") == 410
    # (gunicorn writes an access line once the response is sent)
    log = wait_for(lambda: (lambda text: '" 410 ' in text and text)(
        (tmp_path / "gunicorn-0.log").read_text()), timeout=30)
    for secret in (read_key, admin_key, share):
        assert _leaks(log, secret) == [], secret
    # the lines were written, with what an operator may see of the token: its prefix
    shown = f"/debuginfod/{read_key[:8]}{REDACTED}/buildid/{build_id}/debuginfo"
    assert f"Not Found: {shown}" in log  # Django's
    assert f"Method Not Allowed (HEAD): {shown}" in log
    assert f"Forbidden (CSRF cookie not set.): {shown}" in log
    assert f'"GET {shown} HTTP/1.1" 404' in log  # gunicorn's access log
    assert f'"GET /api/v1/captures/?token={admin_key[:8]}{REDACTED} HTTP/1.1"' in log
    assert f'"GET /s/12.{REDACTED}/ HTTP/1.1" 410' in log


def _raise_with(key):
    secret = {"token": key}  # a frame's local variables are in the report
    raise RuntimeError(f"could not serve {secret['token']}")


def test_error_reports_and_admin_emails_hold_no_token(settings, member):
    key = create_token(member, "laptop", READ)
    settings.ADMINS = [("ops", "ops@perfweb.example")]
    request = RequestFactory().get(
        f"/debuginfod/{key}/buildid/{'ab' * 20}/debuginfo?again={key}",
        HTTP_AUTHORIZATION=f"Token {key}", HTTP_REFERER=f"https://x.example/{key}")
    request.user = member
    try:
        _raise_with(key)
    except RuntimeError:
        exc_info = sys.exc_info()
    reporter = get_exception_reporter_class(request)(request, *exc_info)
    text, html = reporter.get_traceback_text(), reporter.get_traceback_html()
    for report in (text, html):
        assert _leaks(report, key) == []
        assert f"/debuginfod/{key[:8]}{REDACTED}/buildid/" in report
        assert "could not serve" in report and "_raise_with" in report
    # as Django logs a 500: to the console and in an e-mail to ADMINS
    logging.getLogger("django.request").error(
        "Internal Server Error: %s", request.path, exc_info=exc_info,
        extra={"status_code": 500, "request": request})
    assert len(mail.outbox) == 1
    email = mail.outbox[0]
    for part in (email.subject, email.body):
        assert _leaks(part, key) == []
    assert f"{key[:8]}{REDACTED}" in email.subject


def test_every_django_and_celery_handler_scrubs(member):
    """Each handler that Django's LOGGING sets up, and each that Celery's worker puts in
    their place (it takes over the root logger), writes a token scrubbed."""
    key = create_token(member, "laptop", READ)
    code = f"""
import logging, django
django.setup()
key = {key!r}
for name in ("django.request", "django.server", "django.security", "perfweb", ""):
    logging.getLogger(name).warning("django %s /debuginfod/%s/buildid/ab/debuginfo", name, key)
from perfweb.celery import app
app.log.setup(loglevel="INFO", redirect_stdouts=False)
for name in ("celery.worker", "celery.app.trace", "perfweb.captures.tasks", ""):
    logging.getLogger(name).warning("celery %s %s", name, key)
from celery.utils.log import get_task_logger
get_task_logger("perfweb.captures.tasks").warning("task %s", key)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=service_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert _leaks(text, key) == []
    assert text.count(f"{key[:8]}{REDACTED}") == 10, text


@pytest.mark.parametrize("text, scrubbed", [
    ("Not Found: /debuginfod/pw_AbCdEfGhIjKl-_12/buildid/ab/debuginfo",
     "Not Found: /debuginfod/pw_AbCdE[redacted]/buildid/ab/debuginfo"),
    # a segment that is no token of ours is hidden whole
    ('"GET /debuginfod/hunter2/buildid/ab HTTP/1.1"', '"GET /debuginfod/[redacted]/buildid/ab HTTP/1.1"'),
    ("DEBUGINFOD_URLS=https://h/debuginfod/pw_AbCdEfGh", "DEBUGINFOD_URLS=https://h/debuginfod/pw_AbCdE[redacted]"),
    ("Authorization: Token pw_AbCdEfGhIjKl", "Authorization: Token pw_AbCdE[redacted]"),
    ("/s/17.abcdefabcdef/data/flame.json", "/s/17.[redacted]/data/flame.json"),
    ("GET /static/app.css 200", "GET /static/app.css 200"),
])
def test_scrub(text, scrubbed):
    assert scrub(text) == scrubbed
    assert scrub(scrubbed) == scrubbed  # scrubbing again changes nothing
