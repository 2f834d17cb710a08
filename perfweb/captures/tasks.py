"""Celery tasks: they only hand a capture to services.run_analysis, which claims it and
owns every write. Late acknowledgement means a worker killed mid-task leaves the message
to be delivered again; the claim makes that delivery harmless."""
from celery import shared_task
from django.db import InterfaceError, OperationalError

from . import pipeline, services


# No time limits here: they would travel in each message from the sender. The analysis
# has its own deadline (worker_limits.deadline); CELERY_TASK_TIME_LIMIT is behind it.
# A database that is away or locked (SQLite) when the claim is taken retries the task
# instead of dropping it.
@shared_task(acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2,
             retry_backoff_max=60, max_retries=10)
def analyze_capture(capture_id: int) -> str:
    return services.run_analysis(capture_id)


# A source archive is read when it is uploaded, never by a request (issue 33); reading
# it twice is harmless (index_archive records it once), so a duplicate message is too.
@shared_task(acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=2,
             retry_backoff_max=60, max_retries=10)
def index_source_archive(symbol_file_id: int) -> None:
    from .services import source_index
    source_index.index_uploaded(symbol_file_id)


@shared_task
def sweep_captures() -> dict:
    return pipeline.sweep()


@shared_task
def purge_expired_captures() -> dict:
    """The teams' retention (services/retention.py decides what has expired)."""
    from .services import retention
    return retention.purge().as_dict()


# A webhook attempt takes and leases its notification before it POSTs; the notification
# says how many attempts were made (PERFWEB_WEBHOOK_MAX_ATTEMPTS bounds them, not the
# message), so a duplicate message or a late retry does nothing (services/webhooks.py).
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def deliver_webhook(self, notification_id: int) -> str:
    from django.conf import settings

    from .services import webhooks
    wait = webhooks.attempt(notification_id)
    if wait is None:
        return "finished"
    raise self.retry(countdown=wait, max_retries=settings.PERFWEB_WEBHOOK_MAX_ATTEMPTS)


@shared_task
def sweep_webhooks() -> int:
    from .services import webhooks
    return webhooks.sweep()
