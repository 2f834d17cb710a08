"""The teams' retention: which captures have expired, and purging them.

A team that keeps captures N days (Team.retention_days; null keeps them for ever) has a
capture expire N days after its upload. Two things still show a capture to somebody:

- a live share link (neither revoked nor expired) shows it to people outside the team,
  who could not be told why it vanished: such a capture is **kept** while any of its
  links is live, and purged by the first purge after its last link expires or is revoked;
- a comparison (the compare page, a later capture's verdict against it) shows it to the
  team: a purged capture leaves a PurgedCapture row, and those pages say "capture X was
  deleted on <date> by the retention policy (N days)" instead of "not found". Keeping
  every capture a later one was compared with would keep them all (each build's capture
  is the previous one of the next build's).

Each capture goes through deletion.delete_capture, with its files (upload, symbol files,
saved results), and its build when it was the build's only content, as a Delete on the
page would. The deletion and the PurgedCapture row are one transaction.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from ..ids import parse_id
from ..models import Capture, PurgedCapture, ShareLink, Team
from . import deletion


def live_links(now: datetime):
    return ShareLink.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now),
                                    revoked_at__isnull=True)


def _past_retention(team: Team, now: datetime, linked: bool):
    """The team's captures older than its retention (none when it keeps them for ever)
    that a live share link shows (`linked`: as its capture or as either side of its
    comparison) or that none does."""
    if team.retention_days is None:
        return Capture.objects.none()
    cutoff = now - timedelta(days=team.retention_days)
    shown = Exists(live_links(now).filter(Q(capture=OuterRef("pk")) |
                                          Q(compare_with=OuterRef("pk"))))
    return Capture.objects.filter(build__service__team=team, created_at__lt=cutoff) \
        .filter(shown if linked else ~shown)


def expired(team: Team, now: datetime):
    """The team's captures past its retention, without those a live share link shows
    (oldest first). None of them when the team keeps captures for ever."""
    return _past_retention(team, now, linked=False).order_by("created_at", "pk")


def pinned(team: Team, now: datetime):
    """The team's captures past its retention that a live share link keeps."""
    return _past_retention(team, now, linked=True)


@dataclass
class Purge:
    captures: int = 0
    builds: int = 0
    files: int = 0
    bytes: int = 0
    kept_by_links: int = 0
    ids: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"captures": self.captures, "builds": self.builds, "files": self.files,
                "bytes": self.bytes, "kept_by_links": self.kept_by_links}


def purge(now: datetime | None = None, teams=None) -> Purge:
    """Delete every expired capture of every team that has a retention (or of `teams`)."""
    now = now or timezone.now()
    out = Purge()
    qs = Team.objects.filter(retention_days__isnull=False)
    if teams is not None:
        qs = qs.filter(pk__in=[t.pk for t in teams])
    for team in qs.order_by("pk"):
        out.kept_by_links += pinned(team, now).count()
        for pk in list(expired(team, now).values_list("pk", flat=True)):
            done = purge_capture(pk, team, now)
            if done is not None:
                plan, size = done
                out.captures += 1
                out.builds += plan.builds
                out.files += len(plan.files)
                out.bytes += size
                out.ids.append(pk)
    return out


def purge_capture(pk: int, team: Team, now: datetime) -> tuple[deletion.Deletion, int] | None:
    """One capture, if it is still expired once locked (a share link made meanwhile keeps
    it): its PurgedCapture row and its deletion in one transaction. With the bytes its
    files held (measured before they go, once the transaction commits)."""
    with transaction.atomic():
        capture = expired(team, now).select_for_update(of=("self",)) \
            .select_related("build__service").filter(pk=pk).first()
        if capture is None:
            return None
        PurgedCapture.objects.create(
            capture_id=capture.pk, team=team, service=capture.build.service.name,
            build=capture.build.version, label=capture.label,
            original_name=capture.original_name, uploaded_at=capture.created_at,
            deleted_at=now, retention_days=team.retention_days)
        plan = deletion.delete_capture(capture)
        size = plan.bytes
    return plan, size


def purged_in(teams, capture_id) -> PurgedCapture | None:
    """What the retention left of capture `capture_id` (as a URL spells it: a malformed
    id is None, see ids.py) if it was one of `teams`' (a team's id, or a queryset)."""
    pk = parse_id(capture_id)
    if pk is None:
        return None
    qs = PurgedCapture.objects.filter(capture_id=pk)
    qs = qs.filter(team__in=teams) if hasattr(teams, "model") else qs.filter(team_id=teams)
    return qs.first()


def purged_of(user, capture_id) -> PurgedCapture | None:
    """What the retention left of a capture of one of the user's teams, if it purged it."""
    from ..access import teams_of
    return purged_in(teams_of(user), capture_id)


def capture_or_purged(user, capture_id, captures=None) -> tuple[Capture | None,
                                                                PurgedCapture | None]:
    """The pages' and the API's one lookup of a capture id from a URL: (the capture, None)
    when the user may see it (in `captures`, by default access.captures_of(user)),
    (None, what the retention left) when the policy deleted one of their teams' (410),
    and (None, None) for anything else, malformed ids and other teams' captures alike
    (404: an outsider learns nothing)."""
    from ..access import captures_of
    pk = parse_id(capture_id)
    if pk is None:
        return None, None
    capture = (captures_of(user) if captures is None else captures).filter(pk=pk).first()
    if capture is not None:
        return capture, None
    return None, purged_of(user, pk)
