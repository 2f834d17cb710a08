"""The team a user uploads to, and the team of their own that their first upload makes.

Membership rows are the only source of who belongs where. A team is never looked up by
its name on a user's behalf: names outlive accounts, so a new "carol" would otherwise
inherit a deleted carol's "carol's team" (and every capture in it), and a user "dave"
would join whatever team somebody had called "dave's team". Reading the upload page
creates nothing; the team is made inside the transaction that stores the first upload,
so a refused upload leaves no team behind either.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from . import access
from .models import Membership, Team

NAME_LENGTH = Team._meta.get_field("name").max_length
FREE_NAMES = 200  # "carol's team", then "carol's team 2" to "carol's team 199"


def teams_for_upload(user) -> list[Team]:
    """The teams the user is a member of, oldest first; empty before their first upload."""
    return list(access.teams_of(user).order_by("pk"))


def team_for_first_upload(user) -> Team:
    """A new team with the user as its only member, unless a concurrent first upload of
    the same user made one meanwhile (the user's row is locked to decide that). Call it
    inside the upload's transaction."""
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        made_meanwhile = teams_for_upload(user)
        if made_meanwhile:
            return made_meanwhile[0]
        team = _create_team_named_after(user.username)
        Membership.objects.create(team=team, user=user, admin=True)  # its first admin
        return team


def _create_team_named_after(username: str) -> Team:
    """Named "<username>'s team", or that with the lowest free number after it when a
    team (perhaps a deleted account's) has the name already: created, never reused."""
    names = [_name(username, "")] + [_name(username, f" {n}") for n in range(2, FREE_NAMES)]
    for _ in range(10):  # each lost race against another first upload takes one name
        taken = set(Team.objects.filter(name__in=names).values_list("name", flat=True))
        free = [n for n in names if n not in taken]
        if not free:
            break
        try:
            with transaction.atomic():
                return Team.objects.create(name=free[0])
        except IntegrityError:
            continue
    raise RuntimeError(f"no free team name for {username!r}; an administrator must "
                       f"rename some teams")


def _name(username: str, suffix: str) -> str:
    tail = f"'s team{suffix}"
    return username[:NAME_LENGTH - len(tail)] + tail
