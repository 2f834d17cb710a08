"""A service's webhook: on a regression verdict the worker POSTs Slack-compatible JSON
(`{"text": ...}` plus the verdict's fields) to the URL its team set on the service page.
This module is the message and its delivery's state; the address policy and the HTTP(S)
POST are webhook_transport.py's.

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
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.urls import reverse
from django.utils import timezone

from ..models import Webhook, WebhookDelivery, WebhookNotification
from ..webhook_transport import DeliveryError, Refused, post

log = logging.getLogger(__name__)

EVENT = "regression"
#: answers worth trying again; any other 4xx (a revoked Slack hook answers 404 or 410,
#: a refused payload 400) will answer the same next time
RETRYABLE = frozenset({408, 425, 429})


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


# ---- the delivery -------------------------------------------------------------------------
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
    from ..tasks import deliver_webhook
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
    """How long an attempt holds its notification: past every timeout it has (the POST
    ends within three, its name lookup included: webhook_transport.post)."""
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
    except Exception as e:  # noqa: BLE001 - a fault of ours: logged as a failed attempt,
        # never an exception that leaves the notification leased with nothing logged
        log.exception("webhook notification %s, attempt %s: not sent", note.pk, number)
        error, refused = f"not sent: {type(e).__name__}: {e}", True
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
