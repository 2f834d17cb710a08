"""The Celery app. Tasks live in the apps (perfweb/captures/tasks.py) and stay thin."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfweb.settings")

app = Celery("perfweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
