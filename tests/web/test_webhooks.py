"""Service webhooks against a real HTTP receiver (http.server on loopback, in a thread)
and a real Celery worker: the regression verdict of spinpool 1.1.0 idle -> 1.0.0 idle
(0.00 -> 1.97 CPUs busy) POSTed once, Slack-compatible and signed, through failures and
retries, logged on the service page; bounded attempts; URLs and addresses refused."""
import hashlib
import hmac
import html
import http.server
import json
import logging
import re
import socket
import ssl
import subprocess
import threading
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from perfweb.captures import pipeline, webhook_transport as transport
from perfweb.captures.services import webhooks
from perfweb.captures.models import (AnalysisResult, Capture, Service, Webhook,
                                     WebhookDelivery, WebhookNotification)

from .conftest import SPINPOOL, wait_for
from .conftest import analysed as analysed_here

WITH_WORKER = pytest.mark.django_db(transaction=True)

IDLE_FIXED, IDLE_SPIN = SPINPOOL / "1.1.0-idle.perf.data", SPINPOOL / "1.0.0-idle.perf.data"
REASON = ("Both captures are idle (no work), so every CPU used is waste: CPUs busy 0.00 "
          "-> 1.97.")
BAD_LINE = "<img src=x onerror=alert(1)>"


class Receiver:
    """An HTTP server on 127.0.0.1 answering each POST by the next item of `script`
    (a status code, "hang" to answer nothing for 3 s, "garbage" for a status line that is
    no HTTP, "drip" for one sent a byte every 0.2 s, "slow" for a 200 after 0.5 s), then
    200; it records every request (headers and body) and its path."""

    def __init__(self, script=(), tls=None):
        self.script, self.requests, self.sni, self.paths = list(script), [], [], []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                receiver.paths.append(self.path)
                what = receiver.script.pop(0) if receiver.script else 200
                if what == "hang":
                    time.sleep(3)
                    return
                if what == "garbage":
                    self.wfile.write(f"{BAD_LINE}\r\n\r\n".encode())
                    return
                if what == "drip":  # the status line, a byte every 0.2 s
                    try:
                        for byte in b"HTTP/1.1 200 OK\r\n\r\n":
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        pass
                    return
                if what == "slow":
                    time.sleep(0.5)
                    what = 200
                self.send_response(what)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/perf?channel=ci"
        if tls:  # (certificate, key)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            ctx.sni_callback = lambda sock, name, c: self.sni.append(name)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://localhost:{self.server.server_port}/hooks/perf"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(script=(), tls=None):
        made.append(Receiver(script, tls))
        return made[-1]
    yield make
    for r in made:
        r.close()


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _member_client(user):
    c = Client()
    c.force_login(user)
    return c


def _service(member, name):
    from perfweb.captures.models import Team
    return Service.objects.create(team=Team.objects.get(name="inference"), name=name)


def analysed(user, path, service, version, label):
    """Uploaded to the "inference" team and analysed by the test's worker."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from perfweb.captures.models import Team
    from perfweb.captures.uploads import store_upload
    c, _ = store_upload(user, Team.objects.get(name="inference"), {
        "service": service, "version": version, "label": label,
        "capture": SimpleUploadedFile(path.name, path.read_bytes())})
    capture = wait_for(lambda: (x := Capture.objects.get(pk=c.pk)).finished and x,
                       timeout=60)
    assert capture.status == "done", capture.error
    return capture


def _worker_env(**extra):
    return {"PERFWEB_WEBHOOK_ALLOW_PRIVATE": "1", "PERFWEB_WEBHOOK_BACKOFF_S": "0.3",
            "PERFWEB_WEBHOOK_TIMEOUT_S": "1", **extra}


# ---- pure parts ---------------------------------------------------------------------------
def test_payload_is_slack_text_plus_the_verdicts_fields():
    data = webhooks.payload(service="llm-api", team="inference", build="1.2.0",
                            previous_build="1.1.0", label="idle", verdict="regression",
                            reason="lock waits grew (under std::vector<T>::push & pop)",
                            link="https://perfweb.example/compare/1/2/", capture=2,
                            previous_capture=1)
    assert data == {
        "text": ":warning: *llm-api* build 1.2.0 regressed against 1.1.0 (idle): lock "
                "waits grew (under std::vector&lt;T&gt;::push &amp; pop) "
                "<https://perfweb.example/compare/1/2/|Compare the builds>",
        "event": "regression", "service": "llm-api", "team": "inference", "build": "1.2.0",
        "previous_build": "1.1.0", "label": "idle", "verdict": "regression",
        "reason": "lock waits grew (under std::vector<T>::push & pop)",
        "link": "https://perfweb.example/compare/1/2/", "capture": 2,
        "previous_capture": 1}
    # HMAC-SHA256's published example (key "key", the quick brown fox)
    assert webhooks.signature("key", b"The quick brown fox jumps over the lazy dog") == \
        "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    assert [webhooks.backoff(n) for n in (1, 2, 3, 4)] == [15, 30, 60, 120]


@pytest.mark.parametrize("url, why", [
    ("ftp://example.com/hook", "only http:// and https:// URLs are allowed, not 'ftp'"),
    ("file:///etc/passwd", "only http:// and https:// URLs are allowed, not 'file'"),
    ("javascript:alert(1)", "only http:// and https:// URLs are allowed, not 'javascript'"),
    ("example.com/hook", "only http:// and https:// URLs are allowed"),
    ("https://", "the URL has no host"),
    ("https://user:pw@example.com/", "may not hold a user name or password"),
    ("https://example.com:99999/", "port is not a number from 0 to 65535"),
    ("https://exa mple.com/", "spaces or control characters"),
    ("http://127.0.0.1:8000/", "127.0.0.1 is not a public address"),
    ("http://[::1]/", "::1 is not a public address"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is not a public address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is not a public address"),
    ("http://10.1.2.3/", "10.1.2.3 is not a public address"),
    ("http://192.168.0.10/", "192.168.0.10 is not a public address"),
    ("http://100.64.0.1/", "100.64.0.1 is not a public address"),
    ("http://0.0.0.0/", "0.0.0.0 is not a public address"),
    ("http://127.1:8000/", "127.1 is not a public address"),
    ("http://2130706433/", "2130706433 is not a public address"),
    ("http://0x7f000001/", "0x7f000001 is not a public address"),
    ("http://localhost:8080/", "localhost is this machine"),
    ("http://db.localhost/", "db.localhost is this machine"),
    # IPv6 forms that carry an IPv4 address, and IPv6 outside global unicast
    ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe is not a public address"),
    ("http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1 is not a public address"),
    ("http://[64:ff9b::10.0.0.8]/", "64:ff9b::10.0.0.8 is not a public address"),
    ("http://[64:ff9b:1::a9fe:a9fe]/", "64:ff9b:1::a9fe:a9fe is not a public address"),
    ("http://[64:ff9b:1::5db8:d822]/", "64:ff9b:1::5db8:d822 is not a public address"),
    ("http://[2002:a9fe:a9fe::1]/", "2002:a9fe:a9fe::1 is not a public address"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1:: is not a public address"),
    ("http://[2002:c0a8:a::1]/", "2002:c0a8:a::1 is not a public address"),
    ("http://[::127.0.0.1]/", "::127.0.0.1 is not a public address"),
    ("http://[::a9fe:a9fe]/", "::a9fe:a9fe is not a public address"),
    ("http://[::5db8:d822]/", "::5db8:d822 is not a public address"),
    ("http://[::ffff:0:7f00:1]/", "::ffff:0:7f00:1 is not a public address"),
    ("http://[::ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe is not a public address"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo, client 127.0.0.1
     "2001:0:4136:e378:8000:63bf:80ff:fffe is not a public address"),
    ("http://[fec0::1]/", "fec0::1 is not a public address"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254 is not a public address"),
    ("http://[fe80::1%25eth0]/", "fe80::1%25eth0 is not a public address"),
    ("http://[ff02::1]/", "ff02::1 is not a public address"),
    ("http://[100::1]/", "100::1 is not a public address"),
    ("http://[2001:db8::1]/", "2001:db8::1 is not a public address"),
])
def test_urls_refused(url, why):
    with pytest.raises(transport.InvalidWebhook) as e:
        transport.check_url(url, allow_private=False)
    assert why in str(e.value)


def test_urls_kept_and_private_ones_when_allowed():
    slack = "https://hooks.slack.com/services/T000/B000/XXXX"
    assert transport.check_url(f"  {slack} ", allow_private=False) == slack
    assert transport.check_url("http://93.184.216.34:8080/x", allow_private=False)
    assert transport.check_url("http://127.0.0.1:9/x", allow_private=True)
    # public IPv6, and the 6to4 and NAT64 forms of a public IPv4 address (93.184.216.34)
    for host in ("2606:4700:4700::1111", "2002:5db8:d822::1", "64:ff9b::5db8:d822",
                 "64:ff9b::93.184.216.34", "::ffff:93.184.216.34"):
        assert transport.check_url(f"https://[{host}]/hook", allow_private=False)
        assert transport.is_public(host)
    assert transport.check_url("http://[64:ff9b::a9fe:a9fe]/", allow_private=True)
    assert transport.shown_url(slack) == "https://hooks.slack.com/…"
    assert transport.shown_url("http://93.184.216.34:8080") == "http://93.184.216.34:8080/"


@pytest.mark.parametrize("url, kept", [
    # an IRI is kept as its URI: the path, query and fragment UTF-8 percent-encoded ...
    ("https://hooks.example/services/café?canal=déploiements#ü",
     "https://hooks.example/services/caf%C3%A9?canal=d%C3%A9ploiements#%C3%BC"),
    ("https://hooks.example/%C3%A9/é", "https://hooks.example/%C3%A9/%C3%A9"),  # once
    # ... the host name IDNA-encoded (UTS #46: case folded, punycode), the port kept
    ("https://Bücher.example:8443/hook", "https://xn--bcher-kva.example:8443/hook"),
    ("https://straße.example/", "https://xn--strae-oqa.example/"),  # (IDNA 2008: not ss)
    ("http://[2606:4700::1111]:81/ä", "http://[2606:4700::1111]:81/%C3%A4"),
])
def test_international_urls_are_kept_in_ascii(url, kept):
    assert transport.check_url(url, allow_private=False) == kept
    assert transport.check_url(kept, allow_private=False) == kept


@pytest.mark.parametrize("url, why", [
    ("https://☃.example/hook", "the host name '☃.example' cannot be written as an "
                               "international domain name (Codepoint U+2603"),
    ("https://\u0301x.example/", "the host name '\u0301x.example' cannot be written"),
    ("https://hooks.example/\ud800", "the URL holds characters that have no UTF-8 "
                                     "encoding"),
    ("https://hooks.example/" + "é" * 900, "longer than 2,000 characters once encoded "
                                           "(5,422:"),
    ("https://hooks\u3000example/", "holds spaces or control characters"),
    ("https://hooks.example/a\x85b", "holds spaces or control characters"),
    ("https://[::1é]/", "the URL's host in brackets is not an IPv6 address"),
    ("https://[::1/", "the URL's host in brackets is not an IPv6 address"),
    # full-width digits are 127.0.0.1 once encoded: judged as that address
    ("http://１２７.０.０.１/", "127.0.0.1 is not a public address"),
    ("http://ｌｏｃａｌｈｏｓｔ/", "localhost is this machine"),
])
def test_international_urls_refused_with_a_sentence(url, why):
    with pytest.raises(transport.InvalidWebhook) as e:
        transport.check_url(url, allow_private=False)
    assert why in str(e.value)


def test_a_name_resolving_to_loopback_is_refused_before_connecting(receiver):
    r = receiver()
    with pytest.raises(transport.Refused) as e:  # what delivery checks after the URL's
        transport.resolve("localhost", r.server.server_port, allow_private=False)
    assert str(e.value).startswith("refused: localhost resolves to ")
    assert "not a public address (PERFWEB_WEBHOOK_ALLOW_PRIVATE)" in str(e.value)
    assert "127.0.0.1" in transport.resolve("localhost", 80, allow_private=True)
    with pytest.raises(transport.Refused) as e:
        transport.post(r.url.replace("127.0.0.1", "localhost"), b"{}", {}, 1,
                      allow_private=False)
    assert str(e.value).startswith("refused: localhost is this machine")
    assert r.requests == []  # no connection was made
    for url, why in (("file:///etc/passwd", "only http:// and https:// URLs are allowed"),
                     ("http://169.254.169.254/latest/", "169.254.169.254 is not a public")):
        with pytest.raises(transport.Refused) as e:  # (a row written without the form)
            transport.post(url, b"{}", {}, 1, allow_private=False)
        assert str(e.value).startswith("refused: ") and why in str(e.value)
    assert transport.post(r.url, b"{}", {}, 1, allow_private=True) == 200
    assert len(r.requests) == 1


def test_a_receiver_dripping_its_answer_is_cut_at_the_deadline(receiver):
    """The timeout (0.5 s) bounds each read; a byte every 0.2 s passes it, so the whole
    exchange has 3 timeouts (1.5 s), then the socket is shut."""
    r = receiver(["drip"])
    started = time.monotonic()
    with pytest.raises(transport.DeliveryError) as e:
        transport.post(r.url, b"{}", {}, 0.5, allow_private=True)
    assert str(e.value) == "no whole answer within 1.5 s"
    assert 1.5 <= time.monotonic() - started < 2.5


@pytest.fixture
def silent_addresses():
    """Four loopback addresses (127.0.0.2 to .5) on one port whose listeners' queues are
    full (listen(0), one connection never accepted): a connect there is never answered
    (the SYN is dropped), as with a firewall that drops."""
    listeners, fillers = [], []
    first = socket.create_server(("127.0.0.2", 0), backlog=0)
    port = first.getsockname()[1]
    listeners.append(first)
    addresses = [f"127.0.0.{n}" for n in (2, 3, 4, 5)]
    for address in addresses[1:]:
        listeners.append(socket.create_server((address, port), backlog=0))
    for address in addresses:
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex((address, port))
        fillers.append(filler)
    time.sleep(0.1)
    yield addresses, port
    for s in fillers + listeners:
        s.close()


def test_the_lookup_and_every_address_share_the_deadline(silent_addresses, monkeypatch):
    """A name whose four addresses never answer a connect: each has the timeout (0.5 s)
    but all of them the exchange's three (1.5 s), not 4 x 0.5 s; a name lookup that does
    not answer ends after the timeout (getaddrinfo has none: the system resolver's, the
    one thing faked here, sleeps 3 s)."""
    addresses, port = silent_addresses
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, p, *a, **k: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, p)) for a in addresses])
    started = time.monotonic()
    with pytest.raises(transport.DeliveryError) as e:
        transport.post(f"http://silent.example:{port}/hook", b"{}", {}, 0.5,
                       allow_private=True)
    took = time.monotonic() - started
    assert str(e.value) == "no whole answer within 1.5 s"  # (not "no answer within 0.5 s")
    assert 1.5 <= took < 2.0, took  # (4 x 0.5 s would be 2 s)

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: time.sleep(3) or [])
    started = time.monotonic()
    with pytest.raises(transport.DeliveryError) as e:
        transport.post("http://slow.example/hook", b"{}", {}, 0.5, allow_private=True)
    took = time.monotonic() - started
    assert str(e.value) == "cannot resolve slow.example within 0.5 s"
    assert 0.5 <= took < 1.2, took  # (the lookup would take 3 s)


def test_https_is_checked_against_the_name_at_the_checked_address(receiver, tmp_path,
                                                                 monkeypatch):
    """The connection goes to the address resolved and checked, and TLS still checks the
    certificate against the URL's host name (SNI too)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    r = receiver(tls=(str(cert), str(key)))
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted by this process only
    assert transport.post(r.url, b"{}", {"Content-Type": "application/json"}, 2,
                         allow_private=True) == 200
    assert r.sni == ["localhost"] and len(r.requests) == 1
    assert r.requests[0][0]["Host"] == f"localhost:{r.server.server_port}"
    with pytest.raises(transport.DeliveryError) as e:  # the certificate names localhost
        transport.post(r.url.replace("localhost", "127.0.0.1"), b"{}", {}, 2,
                      allow_private=True)
    assert "TLS: IP address mismatch, certificate is not valid for '127.0.0.1'" in \
        str(e.value)
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(transport.DeliveryError) as e:  # a certificate nobody vouches for
        transport.post(r.url, b"{}", {}, 2, allow_private=True)
    assert "TLS: self" in str(e.value) and "signed certificate" in str(e.value)
    assert len(r.requests) == 1


# ---- the service page ---------------------------------------------------------------------
@pytest.mark.django_db
def test_the_form_is_for_team_members_and_checks_the_url(member, outsider, settings):
    svc = _service(member, "llm-api")
    url = f"/services/{svc.pk}/webhook/"
    slack = "https://hooks.slack.com/services/T000/B000/XXXX"
    alice = _member_client(member)

    r = alice.post(url, {"url": "gopher://example.com/", "secret": ""}, follow=True)
    assert "Webhook not saved: only http:// and https:// URLs are allowed, not 'gopher'." \
        in _text(r)
    r = alice.post(url, {"url": "http://10.0.0.8/hook"}, follow=True)
    assert "Webhook not saved: 10.0.0.8 is not a public address" in _text(r)
    r = alice.post(url, {"url": slack, "secret": "s" * 201}, follow=True)
    assert "the secret is longer than 200 characters" in _text(r)
    assert not Webhook.objects.exists()

    r = alice.post(url, {"url": slack, "secret": "hush-123"})
    assert r.status_code == 302 and r["Location"] == f"/services/{svc.pk}/#webhook"
    hook = Webhook.objects.get(service=svc)
    assert (hook.url, hook.secret, hook.site_url) == (slack, "hush-123", "http://testserver/")
    page = alice.get(f"/services/{svc.pk}/").content.decode()
    assert "Sends to <code>https://hooks.slack.com/…</code>, signed" in page
    assert "T000/B000" not in page and "hush-123" not in page  # neither shown back

    # an outsider finds nothing and changes nothing; anonymous visitors sign in first
    mallory = _member_client(outsider)
    assert mallory.post(url, {"url": "https://evil.example/"}).status_code == 404
    assert mallory.post(url, {"action": "remove"}).status_code == 404
    assert mallory.get(f"/services/{svc.pk}/").status_code == 404
    r = Client().post(url, {"url": "https://evil.example/"})
    assert r.status_code == 302 and r["Location"].startswith("/login/")
    assert alice.get(url).status_code == 405
    assert Webhook.objects.get(service=svc).url == slack

    # the card's forms carry the CSRF token (the tag renders them outside the view)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member)
    page = strict.get(f"/services/{svc.pk}/").content.decode()
    token = re.search(r'id="webhook-form">\s*<input type="hidden" '
                      r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert strict.post(url, {"url": slack + "Y"}).status_code == 403
    assert strict.post(url, {"url": slack + "Y", "csrfmiddlewaretoken": token}
                       ).status_code == 302
    assert Webhook.objects.get(service=svc).url == slack + "Y"

    settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE = True  # a receiver inside the network
    alice.post(url, {"url": "http://10.0.0.8/hook"})
    assert Webhook.objects.get(service=svc).url == "http://10.0.0.8/hook"
    r = alice.post(url, {"action": "remove"}, follow=True)
    assert "Webhook removed, with its delivery log." in _text(r)
    assert not Webhook.objects.exists()


# ---- deliveries through a worker ----------------------------------------------------------
@WITH_WORKER
def test_a_regression_is_posted_once_through_failures(member, receiver, worker_factory,
                                                      settings):
    """The receiver fails three ways (a status line that is no HTTP, no answer within
    the 1 s timeout, 503), then takes it: four attempts, one notification, logged."""
    settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE = True
    r = receiver(["garbage", "hang", 503])
    svc = _service(member, "llm-api")
    alice = _member_client(member)
    alice.post(f"/services/{svc.pk}/webhook/", {"url": r.url, "secret": "hush-123"})
    worker_factory(_worker_env())

    before = analysed(member, IDLE_FIXED, "llm-api", "1.1.0", "idle")
    assert not WebhookNotification.objects.exists()  # no previous build: no verdict
    after = analysed(member, IDLE_SPIN, "llm-api", "1.2.0", "idle")
    assert after.verdict()["verdict"] == "regression"
    note = WebhookNotification.objects.get()
    wait_for(lambda: WebhookNotification.objects.get().status != "pending", timeout=60)
    note.refresh_from_db()
    assert (note.status, note.attempts) == ("delivered", 4)

    assert len(r.requests) == 4
    link = f"http://testserver/compare/{before.pk}/{after.pk}/"
    expected = {"text": f":warning: *llm-api* build 1.2.0 regressed against 1.1.0 (idle): "
                        f"{REASON.replace('>', '&gt;')} <{link}|Compare the builds>",
                "event": "regression", "service": "llm-api", "team": "inference",
                "build": "1.2.0", "previous_build": "1.1.0", "label": "idle",
                "verdict": "regression", "reason": REASON, "link": link,
                "capture": after.pk, "previous_capture": before.pk}
    for n, (headers, body) in enumerate(r.requests, 1):
        assert json.loads(body) == expected
        assert headers["Content-Type"] == "application/json"
        assert headers["X-Perfweb-Event"] == "regression"
        assert headers["X-Perfweb-Delivery"] == str(note.pk)
        assert headers["X-Perfweb-Attempt"] == str(n)
        assert headers["X-Perfweb-Signature"] == "sha256=" + hmac.new(
            b"hush-123", body, hashlib.sha256).hexdigest()

    log = list(WebhookDelivery.objects.order_by("attempt").values_list(
        "attempt", "status_code", "error"))
    assert [(a, code) for a, code, _ in log] == [(1, None), (2, None), (3, 503), (4, 200)]
    assert BAD_LINE in log[0][2]
    assert log[1][2] == "no answer within 1 s"
    assert (log[2][2], log[3][2]) == ("answered 503", "")

    # the service page shows the log, escaped
    page = alice.get(f"/services/{svc.pk}/").content.decode()
    table = page[page.index('id="webhook-deliveries"'):]
    assert table.count("<tr class=") == 4
    assert "&lt;img src=x onerror=alert(1)&gt;" in table and BAD_LINE not in page
    assert "no answer within 1 s" in table and "answered 503" in table

    # exactly once: a duplicate message, then the analysis run again (same verdict);
    # the one worker takes them in order, so when the capture is done again both ran
    webhooks.send(note.pk)
    finished = Capture.objects.get(pk=after.pk).finished_at
    assert pipeline.retry(Capture.objects.get(pk=after.pk))
    wait_for(lambda: (c := Capture.objects.get(pk=after.pk)).status == "done" and
             c.finished_at != finished, timeout=60)
    time.sleep(0.5)
    assert len(r.requests) == 4
    assert WebhookNotification.objects.count() == 1 and WebhookDelivery.objects.count() == 4

    # the fix, the next build: an improvement, nothing sent
    fixed = analysed(member, IDLE_FIXED, "llm-api", "1.3.0", "idle")
    assert fixed.verdict()["verdict"] == "improvement"
    assert WebhookNotification.objects.count() == 1 and len(r.requests) == 4


@WITH_WORKER
def test_a_url_with_a_non_ascii_path_is_encoded_and_delivered(member, receiver,
                                                              worker_factory, settings):
    """The form keeps `/hooks/café?canal=déploiements` as its URI, the worker POSTs to
    it and the receiver gets the encoded path (before: saved as typed, and every attempt
    raised UnicodeEncodeError inside http.client, leaving the notification leased until
    the sweep logged "its worker stopped"). A row written without the form is encoded at
    delivery, and one that cannot be is a failed attempt, logged, not an exception."""
    settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE = True
    r = receiver()
    svc = _service(member, "llm-api")
    url = r.url.replace("/hooks/perf?channel=ci", "/hooks/café?canal=déploiements")
    page = _text(_member_client(member).post(f"/services/{svc.pk}/webhook/", {"url": url},
                                             follow=True))
    assert f"Webhook saved: regression verdicts of llm-api are POSTed to " \
           f"http://127.0.0.1:{r.server.server_port}/…." in page
    encoded = "/hooks/caf%C3%A9?canal=d%C3%A9ploiements"
    assert Webhook.objects.get(service=svc).url == \
        f"http://127.0.0.1:{r.server.server_port}{encoded}"
    worker_factory(_worker_env())
    analysed(member, IDLE_FIXED, "llm-api", "1.1.0", "idle")
    analysed(member, IDLE_SPIN, "llm-api", "1.2.0", "idle")
    wait_for(lambda: WebhookNotification.objects.get().status != "pending", timeout=60)
    note = WebhookNotification.objects.get()
    assert (note.status, note.attempts) == ("delivered", 1)
    assert r.paths == [encoded]
    assert json.loads(r.requests[0][1])["service"] == "llm-api"

    def again(hook_url):  # the same notification made pending again, attempted here
        Webhook.objects.filter(pk=note.webhook_id).update(url=hook_url)
        WebhookNotification.objects.filter(pk=note.pk).update(
            status="pending", attempts=0, next_attempt_at=None)
        WebhookDelivery.objects.all().delete()
        assert webhooks.attempt(note.pk) is None
        note.refresh_from_db()
        return note.status, note.deliveries.get().error

    assert again(url) == ("delivered", "")  # saved as typed (before this fix)
    assert r.paths == [encoded, encoded]
    status, error = again(f"http://☃.example:{r.server.server_port}/hooks/")
    assert status == "failed" and error.startswith(
        "refused: the host name '☃.example' cannot be written as an international domain "
        "name")
    assert len(r.paths) == 2


@WITH_WORKER
def test_attempts_are_bounded_and_refusals_final(member, receiver, worker_factory,
                                                settings):
    """A receiver answering 500 gets PERFWEB_WEBHOOK_MAX_ATTEMPTS (3) attempts, then the
    notification fails; a 404 and an address that is not public are not tried again."""
    settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE = True
    r = receiver([500] * 10)
    svc = _service(member, "search")
    _member_client(member).post(f"/services/{svc.pk}/webhook/", {"url": r.url})
    worker_factory(_worker_env(PERFWEB_WEBHOOK_MAX_ATTEMPTS="3"))
    analysed(member, IDLE_FIXED, "search", "7.0", "idle")
    analysed(member, IDLE_SPIN, "search", "7.1", "idle")
    wait_for(lambda: WebhookNotification.objects.get().status != "pending", timeout=60)
    note = WebhookNotification.objects.get()
    assert (note.status, note.attempts) == ("failed", 3)
    assert list(note.deliveries.order_by("attempt").values_list(
        "attempt", "status_code", "error")) == [(n, 500, "answered 500") for n in (1, 2, 3)]
    assert len(r.requests) == 3
    assert "X-Perfweb-Signature" not in r.requests[0][0]  # no secret: unsigned

    # (the same notification made pending again, attempted in this process)
    def again(**settings_):
        for k, v in settings_.items():
            setattr(settings, k, v)
        WebhookNotification.objects.filter(pk=note.pk).update(
            status="pending", attempts=0, next_attempt_at=None)
        WebhookDelivery.objects.all().delete()
        return webhooks.attempt(note.pk)

    r.script[:] = [404]
    assert again() is None  # not tried again
    note.refresh_from_db()
    assert (note.status, note.attempts) == ("failed", 1)
    assert note.deliveries.get().error == "answered 404"

    Webhook.objects.filter(pk=note.webhook_id).update(
        url=r.url.replace("127.0.0.1", "localhost"))
    seen = len(r.requests)
    assert again(PERFWEB_WEBHOOK_ALLOW_PRIVATE=False) is None
    note.refresh_from_db()
    delivery = note.deliveries.get()
    assert (note.status, delivery.status_code) == ("failed", None)
    assert delivery.error == ("refused: localhost is this machine: only public addresses "
                              "are allowed (PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
    assert len(r.requests) == seen  # nothing reached the receiver

    # a 503 is tried again: the wait until the next attempt is returned
    Webhook.objects.filter(pk=note.webhook_id).update(url=r.url)
    r.script[:] = [503]
    assert again(PERFWEB_WEBHOOK_ALLOW_PRIVATE=True, PERFWEB_WEBHOOK_BACKOFF_S=5) == 5
    note.refresh_from_db()
    assert (note.status, note.attempts) == ("pending", 1)
    assert webhooks.attempt(note.pk) is None  # a duplicate before it is due: nothing
    assert note.deliveries.count() == 1

    # its message lost: the sweep sends it again once it is overdue, and the worker
    # delivers it
    r.script[:] = [200]
    assert webhooks.sweep() == 0  # due in 5 s: not overdue
    WebhookNotification.objects.filter(pk=note.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=settings.PERFWEB_WEBHOOK_GRACE_S
                                                   + 1))
    assert webhooks.sweep() == 1
    wait_for(lambda: WebhookNotification.objects.get(pk=note.pk).status == "delivered",
             timeout=30)
    assert list(note.deliveries.order_by("attempt").values_list(
        "attempt", "status_code")) == [(1, 503), (2, 200)]

    # a worker that stopped during the last attempt allowed: after its lease and the
    # grace, the sweep fails the notification and says so in the log
    WebhookNotification.objects.filter(pk=note.pk).update(
        status="pending", attempts=3, next_attempt_at=timezone.now() - timedelta(
            seconds=settings.PERFWEB_WEBHOOK_GRACE_S + 1))
    settings.PERFWEB_WEBHOOK_MAX_ATTEMPTS = 3
    assert webhooks.attempt(note.pk) is None  # no attempt left to take
    assert webhooks.sweep() == 0
    note.refresh_from_db()
    assert note.status == "failed"
    assert note.deliveries.order_by("-id").first().error == (
        "this attempt never finished (its worker stopped); no attempt left")


@WITH_WORKER
def test_two_attempts_at_once_post_once(member, receiver, settings):
    """Two attempts on one pending, due notification started at the same moment (two
    threads, each with its own database connection, released by a barrier) against a
    receiver that takes 0.5 s to answer: one POST, one logged attempt, delivered."""
    settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE = True
    r = receiver(["slow", "slow"])
    svc = _service(member, "llm-api")
    Webhook.objects.create(service=svc, url=r.url, created_by=member,
                           site_url="http://testserver/")
    analysed_here(member, IDLE_FIXED, "llm-api", "1.1.0", "idle")
    analysed_here(member, IDLE_SPIN, "llm-api", "1.2.0", "idle")
    note = WebhookNotification.objects.get()
    assert (note.status, note.attempts, len(r.requests)) == ("pending", 0, 0)

    from django.db import connection
    start, returned = threading.Barrier(2), []

    def attempt():
        try:
            connection.ensure_connection()
            start.wait(timeout=10)
            returned.append(webhooks.attempt(note.pk))
        finally:
            connection.close()
    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert returned == [None, None]
    time.sleep(0.2)  # (a second POST, had one been sent, has arrived)
    assert len(r.requests) == 1
    note.refresh_from_db()
    assert (note.status, note.attempts) == ("delivered", 1)
    assert list(note.deliveries.values_list("attempt", "status_code")) == [(1, 200)]


@WITH_WORKER
def test_a_notification_that_fails_loses_the_message_not_the_result(member, receiver,
                                                                    caplog):
    """The notification's INSERT fails (a trigger raising, as a full disk or a broken
    constraint would): the regression's analysis is stored and done all the same, the
    failure logged, nothing sent."""
    from django.db import connection
    r = receiver()
    svc = _service(member, "llm-api")
    Webhook.objects.create(service=svc, url=r.url, created_by=member,
                           site_url="http://testserver/")
    table = WebhookNotification._meta.db_table
    with connection.cursor() as c:
        c.execute("CREATE FUNCTION pw_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
                  "$$ BEGIN RAISE EXCEPTION 'no room for notifications (test)'; END $$")
        c.execute(f"CREATE TRIGGER pw_test_refuse BEFORE INSERT ON {table} FOR EACH ROW "
                  f"EXECUTE FUNCTION pw_test_refuse()")
    try:
        analysed_here(member, IDLE_FIXED, "llm-api", "1.1.0", "idle")
        with caplog.at_level(logging.ERROR,
                             logger="perfweb.captures.services.analysis_run"):
            after = analysed_here(member, IDLE_SPIN, "llm-api", "1.2.0", "idle")
    finally:
        with connection.cursor() as c:
            c.execute(f"DROP TRIGGER IF EXISTS pw_test_refuse ON {table}")
            c.execute("DROP FUNCTION IF EXISTS pw_test_refuse()")
    assert (after.status, after.error) == ("done", "")
    assert after.verdict()["verdict"] == "regression"
    assert AnalysisResult.objects.filter(capture=after).count() == 1
    assert not WebhookNotification.objects.exists() and r.requests == []
    [record] = [x for x in caplog.records if "webhook notification" in x.getMessage()]
    assert record.getMessage() == \
        f"capture {after.pk}: its webhook notification was not made"
    assert "no room for notifications (test)" in record.exc_text
