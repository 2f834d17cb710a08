"""Deleting what a team uploaded: a capture, a build or a service, with every file they
own (the upload, its symbol files, the saved results), and the build a capture was the
only content of (an upload that failed leaves none behind on the service), and the
service that build was the only content of.

Rows go first, in one transaction; the files after it commits, so a deletion that fails
keeps everything, and no page ever points at a file that is gone. A worker analysing a
capture being deleted loses its claim (its row is gone) and removes what it wrote.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from ..models import AnalysisResult, Build, Capture, Service, SymbolFile
from . import export_cache


@dataclass
class Deletion:
    """What a deletion removes, for the confirmation page and the message after it."""
    services: int = 0
    builds: int = 0
    captures: int = 0
    files: list = field(default_factory=list)  # (storage, name) of each stored file

    @property
    def bytes(self) -> int:
        total = 0
        for storage, name in self.files:
            try:
                total += storage.size(name)
            except OSError:
                pass
        return total

    def summary(self) -> str:
        parts = [f"{n} {what}{'s' if n != 1 else ''}" for n, what in
                 ((self.services, "service"), (self.builds, "build"),
                  (self.captures, "capture")) if n]
        parts.append(f"{len(self.files)} stored file{'s' if len(self.files) != 1 else ''}")
        return ", ".join(parts)


def _files(symbols, captures) -> list:
    out, shared = [], _shared(symbols)
    for sf in symbols:
        if sf.file.name not in shared:
            out.append((sf.file.storage, sf.file.name))
    for r in AnalysisResult.objects.filter(capture__in=captures):
        for f in (r.folded, r.profile):
            if f:
                out.append((f.storage, f.name))
    for c in captures:
        if c.file:
            out.append((c.file.storage, c.file.name))
    return out


def _shared(symbols) -> set:
    """The stored names among `symbols` that other rows name too (a build that reused a
    file the team held, perfweb.captures.held_symbols): those files stay. In a deletion
    the rows being deleted are locked first, so an upload reusing one of their files
    either waits and finds them gone, or committed first and its row is seen here."""
    if not symbols:
        return set()
    ids = [sf.pk for sf in symbols]
    if transaction.get_connection().in_atomic_block:
        list(SymbolFile.objects.select_for_update().filter(pk__in=ids).values_list("pk"))
    names = {sf.file.name for sf in symbols}
    return set(SymbolFile.objects.filter(file__in=names).exclude(pk__in=ids)
               .values_list("file", flat=True))


def plan_capture(capture: Capture) -> Deletion:
    """The capture, its symbol files and results, its build when nothing else is in it
    (no other capture, no symbol file of the build), and then its service when that
    build was all it had (a service whose one capture was deleted stayed on the services
    page with empty charts)."""
    captures = [capture]
    symbols = list(SymbolFile.objects.filter(capture=capture))
    build = capture.build
    lone = not build.captures.exclude(pk=capture.pk).exists() and \
        not build.symbol_files.exists()
    alone = lone and not build.service.builds.exclude(pk=build.pk).exists()
    return Deletion(services=int(alone), builds=int(lone), captures=1,
                    files=_files(symbols, captures))


def plan_build(build: Build) -> Deletion:
    captures = list(build.captures.all())
    symbols = list(SymbolFile.objects.filter(build=build)) + \
        list(SymbolFile.objects.filter(capture__in=captures))
    return Deletion(builds=1, captures=len(captures), files=_files(symbols, captures))


def plan_service(service: Service) -> Deletion:
    captures = list(Capture.objects.filter(build__service=service))
    symbols = list(SymbolFile.objects.filter(build__service=service)) + \
        list(SymbolFile.objects.filter(capture__in=captures))
    return Deletion(services=1, builds=service.builds.count(), captures=len(captures),
                    files=_files(symbols, captures))


def delete_capture(capture: Capture) -> Deletion:
    with transaction.atomic():
        capture = Capture.objects.select_for_update().select_related("build").get(
            pk=capture.pk)
        plan = plan_capture(capture)
        build = capture.build
        capture.delete()
        if plan.services:
            build.service.delete()  # (its one build with it)
        elif plan.builds:
            build.delete()
        transaction.on_commit(lambda: remove_files(plan.files))
    return plan


def delete_build(build: Build) -> Deletion:
    return _delete(Build, build.pk, plan_build)


def delete_service(service: Service) -> Deletion:
    return _delete(Service, service.pk, plan_service)


def _delete(model, pk: int, plan_of) -> Deletion:
    """The row (locked), with what cascades from it; its files once that commits."""
    with transaction.atomic():
        row = model.objects.select_for_update().get(pk=pk)
        plan = plan_of(row)
        row.delete()
        transaction.on_commit(lambda: remove_files(plan.files))
    return plan


def remove_files(files) -> None:
    """Delete stored files, (storage, name) each, and the exports this host made of
    them (a result's profile); one already gone is no error."""
    for storage, name in files:
        export_cache.forget(name)
        try:
            storage.delete(name)
        except OSError:
            pass  # already gone; the row that named it is
