"""A service's webhook: on a regression verdict the worker POSTs Slack-compatible JSON
(`{"text": ...}` plus the verdict's fields) to the URL its team set on the service page.

Exactly once per verdict: the notification row is made in the transaction that stores
the verdict (services/analysis_run.py), unique per capture and previous capture, so a
re-run of the analysis or a late attempt (which loses its claim and writes nothing)
makes no second one. Each attempt takes the notification with a conditional UPDATE
that counts it and leases it (not due again until every timeout of the attempt has
passed), so a duplicate message finds it taken, delivered, or not yet due, and does
nothing; no transaction is open while it POSTs. Every attempt is logged
(WebhookDelivery). The one window left is a worker dying between the receiver's answer
and its write: after the lease that attempt is made again, with the same
X-Perfweb-Delivery id, by which a receiver can tell.

Server-side request forgery: only http(s) URLs without credentials are kept; at delivery
the host name is resolved, and unless PERFWEB_WEBHOOK_ALLOW_PRIVATE is set every address
must be a public one (no loopback, private, link-local such as the cloud metadata
address 169.254.169.254, shared, reserved or multicast range); the connection goes to
the address that was checked (no second lookup to rebind), redirects are not followed,
and answers are read to 64 KiB at most.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.urls import reverse
from django.utils import timezone

from .models import Webhook, WebhookDelivery, WebhookNotification

log = logging.getLogger(__name__)

EVENT = "regression"
#: answers worth trying again; any other 4xx (a revoked Slack hook answers 404 or 410,
#: a refused payload 400) will answer the same next time
RETRYABLE = frozenset({408, 425, 429})


class InvalidWebhook(ValueError):
    """A URL we do not POST to; the message says why, for the page."""


class DeliveryError(Exception):
    """An attempt that reached no answer (connection, DNS, timeout): tried again."""


class Refused(DeliveryError):
    """An attempt we would not make (the address is not public): not tried again."""


# ---- the URL ------------------------------------------------------------------------------
def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str, allow_private: bool) -> str:
    """The URL to keep, or InvalidWebhook. Host names are checked again, resolved, at
    each delivery (an address may change); literal addresses and localhost here."""
    url = url.strip()
    if not url:
        raise InvalidWebhook("give the webhook's URL")
    if len(url) > 2000 or any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise InvalidWebhook("the URL is longer than 2,000 characters or holds spaces or "
                             "control characters")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidWebhook(f"only http:// and https:// URLs are allowed, not "
                             f"{(parts.scheme or url)[:20]!r}")
    try:
        host, _ = parts.hostname, parts.port
    except ValueError:
        raise InvalidWebhook("the URL's port is not a number from 0 to 65535") from None
    if not host:
        raise InvalidWebhook("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise InvalidWebhook("the URL may not hold a user name or password (give a "
                             "secret for the signature instead)")
    if not allow_private:
        if host == "localhost" or host.endswith(".localhost"):
            raise InvalidWebhook(f"{host} is this machine: only public addresses are "
                                 f"allowed (PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
        try:
            literal = is_public(host)
        except ValueError:
            try:  # the forms the resolver reads as IPv4 too: 127.1, 0x7f000001, 2130706433
                literal = is_public(socket.inet_ntoa(socket.inet_aton(host)))
            except OSError:
                literal = None  # a name: resolved at delivery
        if literal is False:
            raise InvalidWebhook(f"{host} is not a public address: only public addresses "
                                 f"are allowed (PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
    return url


def shown_url(url: str) -> str:
    """What the page shows of a webhook URL: its scheme and host (a Slack webhook's path
    is its credential)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…" if parts.path.strip("/") or parts.query \
        else f"{parts.scheme}://{parts.netloc}/"


def resolve(host: str, port: int, allow_private: bool) -> list[str]:
    """The addresses to connect to: every address the name has must be public unless
    private ones are allowed (a name with one private address is refused)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise DeliveryError(f"cannot resolve {host}: {e.strerror or e}") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_private:
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise Refused(f"refused: {host} resolves to {private[0]}, not a public address "
                          f"(PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
    return addresses


def _connect(addresses: list[str], port: int, timeout: float) -> socket.socket:
    error = None
    for address in addresses:  # in the resolver's order, as socket.create_connection
        try:
            return socket.create_connection((address, port), timeout)
        except OSError as e:
            error = e
    raise error


class _Pinned(http.client.HTTPConnection):
    """HTTP to addresses already checked (no second lookup a DNS answer could change)."""

    def __init__(self, host, port, addresses, **kwargs):
        super().__init__(host, port, **kwargs)
        self._addresses = addresses

    def connect(self):
        self.sock = _connect(self._addresses, self.port, self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to addresses already checked, with the host name for SNI and for the
    certificate's check."""

    def __init__(self, host, port, addresses, **kwargs):
        super().__init__(host, port, **kwargs)
        self._addresses = addresses

    def connect(self):
        sock = _connect(self._addresses, self.port, self.timeout)
        try:
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def post(url: str, body: bytes, headers: dict, timeout: float, allow_private: bool) -> int:
    """POST `body`; the answer's status code (redirects are answers: not followed), or
    DeliveryError."""
    try:  # again: a row written without the form is held to the same rules
        check_url(url, allow_private)
    except InvalidWebhook as e:
        raise Refused(f"refused: {e}") from None
    parts = urllib.parse.urlsplit(url)
    https = parts.scheme.lower() == "https"
    host, port = parts.hostname, parts.port or (443 if https else 80)
    addresses = resolve(host, port, allow_private)
    if https:
        conn = _PinnedHTTPS(host, port, addresses, timeout=timeout,
                            context=ssl.create_default_context())
    else:
        conn = _Pinned(host, port, addresses, timeout=timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # the timeout bounds each connect and read; this bounds the whole exchange (a
    # receiver sending a byte now and then): the socket is shut at the deadline
    total = 3 * timeout
    cut = threading.Event()

    def shut():
        cut.set()
        with contextlib.suppress(OSError, AttributeError):
            conn.sock.shutdown(socket.SHUT_RDWR)
    timer = threading.Timer(total, shut)
    timer.daemon = True
    timer.start()
    try:
        conn.request("POST", path, body=body, headers=headers)
        answer = conn.getresponse()
        with contextlib.suppress(OSError, http.client.HTTPException):
            answer.read(64 << 10)  # (its status is what counts; the rest may be cut)
        return answer.status
    except (OSError, http.client.HTTPException) as e:
        if cut.is_set():
            raise DeliveryError(f"no whole answer within {total:g} s") from None
        if isinstance(e, socket.timeout):
            raise DeliveryError(f"no answer within {timeout:g} s") from None
        if isinstance(e, ssl.SSLError):
            why = getattr(e, "verify_message", None) or e.reason or str(e)
            raise DeliveryError(f"{host}:{port}: TLS: {why}") from None
        text = (getattr(e, "strerror", None) or str(e)).strip() or type(e).__name__
        raise DeliveryError(f"{host}:{port}: {text}") from None
    finally:
        timer.cancel()
        conn.close()


# ---- the message --------------------------------------------------------------------------
def _slack(text: str) -> str:
    """Slack's mrkdwn reads <...> as links and & as entities: escape what we quote."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def payload(*, service: str, team: str, build: str, previous_build: str, label: str,
            verdict: str, reason: str, link: str, capture: int,
            previous_capture: int) -> dict:
    """The JSON a regression verdict is POSTed as: Slack's `text` (an incoming webhook
    shows it as the message), then the verdict's fields for other receivers."""
    of = f" ({_slack(label)})" if label else ""
    text = (f":warning: *{_slack(service)}* build {_slack(build)} regressed against "
            f"{_slack(previous_build)}{of}: {_slack(reason)} <{link}|Compare the builds>")
    return {"text": text, "event": EVENT, "service": service, "team": team, "build": build,
            "previous_build": previous_build, "label": label, "verdict": verdict,
            "reason": reason, "link": link, "capture": capture,
            "previous_capture": previous_capture}


def body_of(data: dict) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def signature(secret: str, body: bytes) -> str:
    """X-Perfweb-Signature: HMAC-SHA256 of the exact body with the webhook's secret."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def headers_for(note: WebhookNotification, attempt: int, body: bytes) -> dict:
    headers = {"Content-Type": "application/json", "User-Agent": "perfweb-webhook/1",
               "X-Perfweb-Event": EVENT, "X-Perfweb-Delivery": str(note.pk),
               "X-Perfweb-Attempt": str(attempt)}
    if note.webhook.secret:
        headers["X-Perfweb-Signature"] = signature(note.webhook.secret, body)
    return headers


def backoff(attempt: int) -> float:
    """Seconds before the attempt after `attempt` (1, 2, ...): doubling from
    PERFWEB_WEBHOOK_BACKOFF_S."""
    return settings.PERFWEB_WEBHOOK_BACKOFF_S * 2 ** (attempt - 1)


# ---- the orchestration --------------------------------------------------------------------
def notify(capture, comparison: dict | None) -> WebhookNotification | None:
    """Inside the transaction that stores `capture`'s result: the notification of its
    regression verdict, when its service has a webhook and there is none for this pair
    yet; sent once the transaction commits."""
    if not comparison or comparison.get("verdict") != "regression":
        return None
    hook = Webhook.objects.select_related("service__team").filter(
        service_id=capture.build.service_id).first()
    if hook is None:
        return None
    before = comparison["before"]
    site = (settings.PERFWEB_SITE_URL or hook.site_url).rstrip("/")
    data = payload(service=hook.service.name, team=hook.service.team.name,
                   build=capture.build.version, previous_build=before["build"],
                   label=capture.label, verdict=comparison["verdict"],
                   reason=comparison.get("reason") or "",
                   link=site + reverse("compare", args=[before["id"], capture.pk]),
                   capture=capture.pk, previous_capture=before["id"])
    note, created = WebhookNotification.objects.get_or_create(
        capture=capture, before_id=before["id"],
        defaults={"webhook": hook, "payload": data, "next_attempt_at": Now()})
    if not created:
        return None
    pk = note.pk
    transaction.on_commit(lambda: send(pk))
    return note


def send(notification_id: int, countdown: float = 0) -> bool:
    """Queue a delivery attempt; with the broker down the notification stays pending and
    the sweep sends it."""
    from .tasks import deliver_webhook
    try:
        deliver_webhook.apply_async((notification_id,), countdown=countdown or None,
                                    retry=False)
    except Exception:  # noqa: BLE001 - kombu raises many kinds; the sweep sends it later
        log.warning("could not queue webhook notification %s; the sweep will",
                    notification_id, exc_info=True)
        return False
    return True


def _due():
    """Due now, by the database's clock (workers' clocks may differ by a second)."""
    return ExpressionWrapper(Now() + timedelta(seconds=1), output_field=DateTimeField())


def lease_s() -> float:
    """How long an attempt holds its notification: past every timeout it has."""
    return 3 * settings.PERFWEB_WEBHOOK_TIMEOUT_S + 10


def _in(seconds: float):
    return ExpressionWrapper(Now() + timedelta(seconds=seconds), output_field=DateTimeField())


def attempt(notification_id: int) -> float | None:
    """One delivery attempt, logged; the seconds until the next one when it should be
    tried again, else None (delivered, failed for good, or nothing for this message to
    do: another attempt holds it, it is finished, or it is not due yet).

    The attempt takes the notification with one conditional UPDATE (pending and due:
    counted, and not due again until its lease has passed), POSTs outside any
    transaction, then writes what happened if the notification is still at its count."""
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=_due())
    if not WebhookNotification.objects.filter(
            due, pk=notification_id, status=WebhookNotification.PENDING,
            attempts__lt=settings.PERFWEB_WEBHOOK_MAX_ATTEMPTS).update(
            attempts=F("attempts") + 1, next_attempt_at=_in(lease_s())):
        return None
    note = WebhookNotification.objects.select_related("webhook").get(pk=notification_id)
    number = note.attempts
    body = body_of(note.payload)
    started = time.monotonic()
    code, error, refused = None, "", False
    try:
        code = post(note.webhook.url, body, headers_for(note, number, body),
                    settings.PERFWEB_WEBHOOK_TIMEOUT_S,
                    settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE)
    except DeliveryError as e:
        error, refused = str(e), isinstance(e, Refused)
    ms = round(1000 * (time.monotonic() - started))
    ok = code is not None and 200 <= code < 300
    if code is not None and not ok:
        error = (f"answered {code}" if not 300 <= code < 400 else
                 f"answered {code}: redirects are not followed")
    again = not ok and not refused and (
        code is None or code >= 500 or code in RETRYABLE) and \
        number < settings.PERFWEB_WEBHOOK_MAX_ATTEMPTS
    wait = backoff(number) if again else None
    if again:
        fields = {"next_attempt_at": _in(wait)}
    else:
        fields = {"status": WebhookNotification.DELIVERED if ok else
                  WebhookNotification.FAILED, "finished_at": timezone.now(),
                  "next_attempt_at": None}
    with transaction.atomic():
        WebhookDelivery.objects.create(notification=note, attempt=number, status_code=code,
                                       error=error[:500], duration_ms=ms)
        WebhookNotification.objects.filter(
            pk=note.pk, attempts=number, status=WebhookNotification.PENDING).update(**fields)
    if not ok:
        log.warning("webhook notification %s, attempt %s: %s", note.pk, number, error)
    return wait


def sweep() -> int:
    """Send again the pending notifications overdue by PERFWEB_WEBHOOK_GRACE_S (their
    message was lost, or never sent: the broker was down); how many. One whose last
    attempt never finished (its worker stopped) with no attempt left fails, logged."""
    overdue = ExpressionWrapper(Now() - timedelta(seconds=settings.PERFWEB_WEBHOOK_GRACE_S),
                                output_field=DateTimeField())
    late = WebhookNotification.objects.filter(status=WebhookNotification.PENDING,
                                              next_attempt_at__lt=overdue)
    limit = settings.PERFWEB_WEBHOOK_MAX_ATTEMPTS
    for note in late.filter(attempts__gte=limit):
        with transaction.atomic():
            if WebhookNotification.objects.filter(
                    pk=note.pk, status=WebhookNotification.PENDING,
                    attempts=note.attempts).update(status=WebhookNotification.FAILED,
                                                   finished_at=timezone.now(),
                                                   next_attempt_at=None):
                WebhookDelivery.objects.create(
                    notification=note, attempt=note.attempts,
                    error="this attempt never finished (its worker stopped); no attempt "
                          "left")
    ids = list(late.filter(attempts__lt=limit).values_list("pk", flat=True)[:500])
    return sum(send(pk) for pk in ids)


def deliveries_of(service, limit: int = 20):
    """The service page's delivery log: the latest attempts, newest first."""
    return WebhookDelivery.objects.filter(
        notification__webhook__service=service).select_related(
        "notification__capture__build").order_by("-at", "-attempt")[:limit]
