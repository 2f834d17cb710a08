"""Queue the captures whose stored result was computed by an older analysis engine (new
rules, new importers), so their findings follow the current version."""
from django.core.management.base import BaseCommand
from django.db import transaction

from perfweb.captures import pipeline
from perfweb.captures.services import ANALYSIS_VERSION
from perfweb.captures.models import Capture


class Command(BaseCommand):
    help = "Re-analyze captures analyzed by an older engine version."

    def handle(self, *args, **options):
        outdated = Capture.objects.filter(status=Capture.Status.DONE).exclude(
            results__analysis_version=ANALYSIS_VERSION)
        with transaction.atomic():
            n = pipeline.retry_all(outdated)
        self.stdout.write(f"{n} capture(s) queued for analysis version {ANALYSIS_VERSION}")
