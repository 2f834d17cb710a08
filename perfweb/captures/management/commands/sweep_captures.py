"""Take back stuck captures once (the worker's beat does it every minute)."""
from django.core.management.base import BaseCommand

from perfweb.captures import pipeline


class Command(BaseCommand):
    help = "Requeue captures whose worker died or whose queue message was lost."

    def handle(self, *args, **options):
        self.stdout.write(str(pipeline.sweep()))
