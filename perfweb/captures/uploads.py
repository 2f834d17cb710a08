"""Storing uploaded files: hashed while they are copied to storage in chunks, never read
into memory whole."""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from . import access, pipeline
from .models import Build, Capture, Membership, Service, SymbolFile, Team


class UploadTooLarge(ValueError):
    pass


def check_size(f) -> None:
    """Uploads stream to temporary files, so the limit is on what we keep, per file."""
    limit = settings.PERFWEB_MAX_UPLOAD_BYTES
    if f is not None and f.size > limit:
        raise UploadTooLarge(
            f"{f.name} is {human_size(f.size)}; the limit is {human_size(limit)}")


def sha256_of(upload: UploadedFile) -> str:
    h = hashlib.sha256()
    for chunk in upload.chunks(1 << 20):
        h.update(chunk)
    upload.seek(0)
    return h.hexdigest()


def teams_for_upload(user) -> list:
    """The user's teams; a user without a team gets one of their own on first upload."""
    teams = list(access.teams_of(user))
    if not teams:
        team, _ = Team.objects.get_or_create(name=f"{user.username}'s team")
        Membership.objects.get_or_create(team=team, user=user)
        teams = [team]
    return teams


def store_upload(user, team, d) -> tuple[Capture, bool]:
    """Store an upload (form or API): service and build made on first use, the capture
    deduplicated by content within its build, symbol files attached, analysis queued."""
    service, _ = Service.objects.get_or_create(team=team, name=d["service"].strip())
    build, _ = Build.objects.get_or_create(
        service=service, version=d["version"].strip(),
        defaults={"git_revision": d.get("git_revision", "")})
    upload = d["capture"]
    digest = sha256_of(upload)
    existing = Capture.objects.filter(build=build, sha256=digest).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            capture = Capture(build=build, original_name=upload.name[:255], sha256=digest,
                              size=upload.size, label=d.get("label", ""),
                              notes=d.get("notes", ""), uploaded_by=user)
            capture.file.save(upload.name, upload, save=False)
            capture.save()
            for f in d.get("symbols") or []:
                store_symbol(f, user, build=build if d.get("symbols_for_build") else None,
                              capture=None if d.get("symbols_for_build") else capture)
            pipeline.enqueue(capture)
    except IntegrityError:  # the same file uploaded twice at once
        return Capture.objects.get(build=build, sha256=digest), False
    return capture, True


def store_symbol(f, user, build=None, capture=None) -> SymbolFile:
    sf = SymbolFile(build=build, capture=capture, original_name=f.name[:255],
                    sha256=sha256_of(f), size=f.size, uploaded_by=user)
    sf.file.save(f.name, f, save=False)
    sf.save()
    return sf


def human_size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
