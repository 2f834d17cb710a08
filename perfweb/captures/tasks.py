"""Celery tasks: thin wrappers around pipeline functions. Late acknowledgement means a
worker killed mid-task leaves the message to be delivered again."""
from celery import shared_task

from . import pipeline


# No time limits here: they would travel in each message from the sender. The analysis
# has its own deadline (pipeline.deadline); the worker's CELERY_TASK_TIME_LIMIT is behind it
@shared_task(acks_late=True, reject_on_worker_lost=True)
def analyze_capture(capture_id: int) -> None:
    pipeline.process_capture(capture_id)


@shared_task
def sweep_captures() -> dict:
    return pipeline.sweep()
