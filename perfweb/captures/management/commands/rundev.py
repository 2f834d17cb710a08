"""`make run`: a Celery worker (with the periodic sweep) and the web server, together,
stopping together. A worker that dies (killed, out of memory) is started again, as
docker-compose's restart policy does in deployment: with no worker, nothing would run
the sweep that takes its capture back."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

from perfweb.captures import demo_banner

RESTART_AFTER_S = 1.0
BANNER_WAIT_S = 120.0  # for the server to answer
BANNER_SETTLE_S = 3.0  # then for the worker's start-up lines


def worker_args(var_dir: str) -> list[str]:
    """The worker's flags in `make run` (one process, the periodic sweep inside)."""
    return ["--beat", "--pool=solo", "--schedule", os.path.join(var_dir, "celerybeat-schedule")]


class Supervisor:
    """Keeps one worker process running until stopped."""

    def __init__(self, command: list[str], say):
        self.command, self.say = command, say
        self.stopping = threading.Event()
        self.lock = threading.Lock()  # no new worker once stop() has begun
        self.proc: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._run, name="worker-supervisor",
                                       daemon=True)

    def start(self) -> None:
        self.proc = subprocess.Popen(self.command)
        self.say(f"worker started (pid {self.proc.pid})")
        self.thread.start()

    def _run(self) -> None:
        while True:
            code = self.proc.wait()
            if self.stopping.wait(RESTART_AFTER_S):
                return
            with self.lock:
                if self.stopping.is_set():
                    return
                self.proc = subprocess.Popen(self.command)
            self.say(f"worker exited ({code}); started another (pid {self.proc.pid})")

    def stop(self) -> None:
        with self.lock:
            self.stopping.set()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Command(BaseCommand):
    help = "Run the web server and a Celery worker for local use."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        worker = Supervisor(
            [sys.executable, "-m", "celery", "-A", "perfweb", "worker", "--loglevel=INFO",
             *worker_args(os.environ.get("PERFWEB_VAR_DIR", "var"))],
            lambda line: (self.stdout.write(line), self.stdout.flush()))
        worker.start()
        # a TERM (from a terminal closing, a test, a supervisor) stops both, the worker
        # with its warm shutdown, instead of ending this process alone
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        self.stdout.write(f"web on http://{addrport}/")
        threading.Thread(target=self._banner_when_up, args=(addrport,), daemon=True,
                         name="banner").start()
        try:
            call_command("runserver", addrport, use_reloader=False)
        finally:
            worker.stop()

    def _banner_when_up(self, addrport: str) -> None:
        """The banner, once the server answers (after the start-up logs of both)."""
        host, _, port = addrport.rpartition(":")
        deadline = time.monotonic() + BANNER_WAIT_S
        while time.monotonic() < deadline:
            try:
                socket.create_connection((host or "127.0.0.1", int(port)), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            return
        time.sleep(BANNER_SETTLE_S)  # the worker's own start-up lines come first
        left = demo_banner.take_password()
        try:
            username = left[0] if left else (
                "demo" if get_user_model().objects.filter(username="demo").exists() else None)
        finally:
            connection.close()  # this thread's own
        self.stdout.write(demo_banner.banner(f"http://{addrport}/", username,
                                             left[1] if left else None))
        self.stdout.flush()
