"""Who may see what: everything belongs to a team, and only its members see it.

Every view and download goes through these querysets, so an object of another team is
simply not found (404), never "forbidden" (which would confirm it exists).
"""
from __future__ import annotations

from django.db.models import QuerySet

from .models import Build, Capture, Service, SymbolFile, Team


def teams_of(user) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(membership__user=user)


def services_of(user) -> QuerySet[Service]:
    return Service.objects.filter(team__in=teams_of(user))


def builds_of(user) -> QuerySet[Build]:
    return Build.objects.filter(service__team__in=teams_of(user))


def captures_of(user) -> QuerySet[Capture]:
    return Capture.objects.filter(build__service__team__in=teams_of(user))


def symbol_files_of(user) -> QuerySet[SymbolFile]:
    teams = teams_of(user)
    return SymbolFile.objects.filter(build__service__team__in=teams) | \
        SymbolFile.objects.filter(capture__build__service__team__in=teams)
