"""Load the spinpool demo: an idle inference API burning ~2 CPUs in 1.0.0, fixed in 1.1.0.

Creates the demo user (printing its password, and leaving it for `make run`'s banner;
--reset-password gives it a new one) and, if they are in no team, a team of
their own, the `llm-api` service with builds 1.0.0 and 1.1.0, their captures and symbol
bundles from the corpus, and analyzes them at once so a newcomer sees a diagnosis on
first sign-in. Running it again changes nothing.
"""
from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from perfweb.captures import demo_banner, pipeline, services
from perfweb.captures.models import Build, Capture, Service
from perfweb.captures.own_teams import team_for_first_upload, teams_for_upload
from perfweb.captures.uploads import sha256_of, store_symbol

#: the throughput the demo's captures were taken at: the busy recordings ran 40 jobs every
#: 100 ms (../shared/corpus/cases/spinpool/README.md); idle ones did no work
DEMO_RATES = {"busy": (400.0, "jobs/s")}
DEFAULT_CORPUS = Path(settings.BASE_DIR).parent / "shared" / "corpus" / "cases" / "spinpool"


class Command(BaseCommand):
    help = "Create the demo user and load the spinpool captures."

    def add_arguments(self, parser):
        parser.add_argument("--path", default=str(DEFAULT_CORPUS),
                            help="folder with the spinpool case files")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--queue", action="store_true",
                            help="queue the captures for a worker instead of analyzing now")
        parser.add_argument("--reset-password", action="store_true",
                            help="give the demo user a new password and print it")

    def handle(self, *args, path, username, queue, reset_password=False, **options):
        folder = Path(path)
        if not (folder / "1.0.0-idle.perf.data").exists():
            raise CommandError(f"spinpool case files not found in {folder}")
        user, password = self._user(username)
        if reset_password and password is None:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.save(update_fields=["password"])
        if password:
            demo_banner.leave_password(username, password)
        with transaction.atomic():
            team = self._team(user)
            service, _ = Service.objects.get_or_create(team=team, name="llm-api")
        todo = []
        for version in ("1.0.0", "1.1.0"):
            build, _ = Build.objects.get_or_create(
                service=service, version=version,
                defaults={"notes": "thread pool spins on a mutex" if version == "1.0.0"
                          else "thread pool waits on a condition variable"})
            for name in (f"symbols-{version}.zip", "kernel-symbols.zip",
                         f"{version}-busy.perf.data.tar.bz2"):
                self._symbols(build, folder / name, user)
            for label in ("idle", "busy"):
                capture = self._capture(build, folder / f"{version}-{label}.perf.data",
                                        label, user)
                if capture is not None:
                    todo.append(capture)
        for capture in todo:
            if queue:
                with transaction.atomic():
                    pipeline.enqueue(capture)
            else:
                services.run_analysis(capture.pk)
        self.stdout.write(f"demo loaded: {len(todo)} new capture(s)")
        if password:
            self.stdout.write(self.style.SUCCESS(
                f"demo user: {username} / password: {password}"))
        else:
            self.stdout.write(f"demo user: {username} (its password was printed when it "
                              f"was set; `{demo_banner.RESET_COMMAND}` sets a new one)")

    def _user(self, username):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is not None:
            return user, None
        password = secrets.token_urlsafe(12)
        return User.objects.create_user(username, password=password), password

    def _team(self, user):
        """The user's first team, else a new one of their own; never a team found by
        name, which could be anybody's (a deleted "demo" account's, for one)."""
        teams = teams_for_upload(user)
        return teams[0] if teams else team_for_first_upload(user)

    def _symbols(self, build, path: Path, user) -> None:
        if not path.exists() or build.symbol_files.filter(original_name=path.name).exists():
            return
        with path.open("rb") as f:
            store_symbol(File(f, name=path.name), user, build=build)

    def _capture(self, build, path: Path, label: str, user) -> Capture | None:
        if build.captures.filter(original_name=path.name).exists():
            return None
        with path.open("rb") as f:
            wrapped = File(f, name=path.name)
            rate, unit = DEMO_RATES.get(label, (None, ""))
            capture = Capture(build=build, original_name=path.name, label=label,
                              sha256=sha256_of(wrapped), size=path.stat().st_size,
                              rate=rate, rate_unit=unit, uploaded_by=user)
            capture.file.save(path.name, wrapped, save=False)
            capture.save()
        return capture
