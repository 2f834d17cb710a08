"""Celery tasks: thin wrappers around pipeline functions. Late acknowledgement means a
worker killed mid-task leaves the message to be delivered again."""
from celery import shared_task
from django.conf import settings

from . import pipeline


@shared_task(acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
             time_limit=settings.CELERY_TASK_TIME_LIMIT)
def analyze_capture(capture_id: int) -> None:
    pipeline.process_capture(capture_id)


@shared_task
def sweep_captures() -> dict:
    return pipeline.sweep()
