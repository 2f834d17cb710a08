"""`make run`: a Celery worker (with the periodic sweep) and the web server, together,
stopping together."""
from __future__ import annotations

import os
import subprocess
import sys

from django.core.management import call_command
from django.core.management.base import BaseCommand


def worker_args(var_dir: str) -> list[str]:
    """The worker's flags in `make run` (one process, the periodic sweep inside)."""
    return ["--beat", "--pool=solo", "--schedule", os.path.join(var_dir, "celerybeat-schedule")]


class Command(BaseCommand):
    help = "Run the web server and a Celery worker for local use."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "perfweb", "worker", "--loglevel=INFO",
             *worker_args(os.environ.get("PERFWEB_VAR_DIR", "var"))])
        self.stdout.write(f"worker started (pid {worker.pid}); web on http://{addrport}/")
        try:
            call_command("runserver", addrport, use_reloader=False)
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
