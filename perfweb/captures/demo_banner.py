"""The lines `make run` ends its start-up with: where the app is, who to sign in as, and
how to get a password when the one printed on the first run is lost.

The demo user's password is random and stored hashed, so it can be shown only when it is
set: load_demo leaves it in VAR_DIR/demo-password (mode 0600) for the rundev that follows
to show once, then the file is removed. Every later start says how to set a new one.
"""
from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

RESET_COMMAND = "make demo-password"


def _handoff() -> Path:
    return Path(settings.VAR_DIR) / "demo-password"


def leave_password(username: str, password: str) -> None:
    """For the next banner (only its owner can read the file)."""
    path = _handoff()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{username}\n{password}\n")


def take_password() -> tuple[str, str] | None:
    """(username, password) left by load_demo, once."""
    path = _handoff()
    try:
        username, password = path.read_text().split("\n")[:2]
    except (FileNotFoundError, ValueError):
        return None
    path.unlink(missing_ok=True)
    return username, password


def banner(url: str, username: str | None, password: str | None) -> str:
    if username is None:
        who = ("no demo user yet: `python manage.py load_demo` creates one (or "
               "`python manage.py createsuperuser`)")
    elif password is not None:
        who = (f"sign in as {username}, password {password} (shown this once; "
               f"`{RESET_COMMAND}` sets a new one)")
    else:
        who = (f"sign in as {username}; its password was printed when it was set: "
               f"`{RESET_COMMAND}` sets and prints a new one")
    lines = [f"perfweb is running at {url}", who, "stop it with Ctrl-C"]
    width = max(len(x) for x in lines) + 4
    rule = "=" * width
    return "\n".join([rule, *(f"  {x}" for x in lines), rule])
