"""Purge the captures past their team's retention once (the worker's beat does it every
PERFWEB_PURGE_EVERY_S), for deployments that run it from cron instead."""
from django.core.management.base import BaseCommand

from perfweb.captures.models import Team
from perfweb.captures.services import retention
from perfweb.captures.uploads import human_size


class Command(BaseCommand):
    help = ("Delete the captures older than their team's retention (with their files), "
            "except those a live share link shows.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="list what would be deleted, delete nothing")

    def handle(self, *args, dry_run=False, **options):
        if dry_run:
            from django.utils import timezone
            now = timezone.now()
            for team in Team.objects.filter(retention_days__isnull=False).order_by("pk"):
                for c in retention.expired(team, now).select_related("build__service"):
                    self.stdout.write(f"would delete capture {c.pk} ({team.name} / "
                                      f"{c.build.service.name} {c.build.version}, uploaded "
                                      f"{c.created_at:%Y-%m-%d})")
            return
        done = retention.purge()
        self.stdout.write(
            f"purged {done.captures} capture{'s' if done.captures != 1 else ''} "
            f"({done.files} stored file{'s' if done.files != 1 else ''}, "
            f"{human_size(done.bytes)}), {done.builds} empty "
            f"build{'s' if done.builds != 1 else ''}; {done.kept_by_links} kept by live "
            f"share links")
