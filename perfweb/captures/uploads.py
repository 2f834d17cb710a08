"""Storing uploaded files: hashed while they are copied to storage in chunks, never read
into memory whole."""
from __future__ import annotations

import hashlib
import statistics

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from . import held_symbols, pipeline
from .models import Build, Capture, Service, SymbolFile
from .own_teams import team_for_first_upload


class UploadTooLarge(ValueError):
    pass


def check_size(f) -> None:
    """Uploads stream to temporary files, so the limit is on what we keep, per file."""
    limit = settings.PERFWEB_MAX_UPLOAD_BYTES
    if f is not None and f.size > limit:
        raise UploadTooLarge(f"{f.name} is {exact_size(f.size)}; the limit is "
                             f"{exact_size(limit)}")


class QuotaExceeded(ValueError):
    pass


def check_quota(user, files) -> None:
    """A user's uploads (captures and symbol files) fit PERFWEB_USER_QUOTA_BYTES."""
    from django.db.models import Sum
    quota = settings.PERFWEB_USER_QUOTA_BYTES
    used = (Capture.objects.filter(uploaded_by=user).aggregate(n=Sum("size"))["n"] or 0) + \
        stored_bytes(sent_by(user))
    incoming = sum(f.size for f in files if f is not None)
    if used + incoming > quota:
        raise QuotaExceeded(
            f"This upload of {exact_size(incoming)} would take your uploads to "
            f"{exact_size(used + incoming)}, over your quota of {exact_size(quota)}. "
            f"Delete old captures or ask an administrator for more room.")


class TeamQuotaExceeded(QuotaExceeded):
    pass


def team_quota(team) -> int:
    """The team's own quota, else PERFWEB_TEAM_QUOTA_BYTES."""
    own = getattr(team, "quota_bytes", None)
    return settings.PERFWEB_TEAM_QUOTA_BYTES if own is None else own


def team_usage(team) -> int:
    """The bytes of the team's captures and symbol files (of its builds and captures)."""
    from django.db.models import Q, Sum
    if team is None:
        return 0
    return (Capture.objects.filter(build__service__team=team)
            .aggregate(n=Sum("size"))["n"] or 0) + \
        stored_bytes(SymbolFile.objects.filter(Q(build__service__team=team) |
                                               Q(capture__build__service__team=team)))


def sent_by(user):
    """The user's symbol file rows whose file they sent: not those naming a file the team
    held (held_symbols), which count for whoever sent it first."""
    from django.db.models import Exists, OuterRef
    earlier = SymbolFile.objects.filter(file=OuterRef("file"), pk__lt=OuterRef("pk"))
    return SymbolFile.objects.filter(uploaded_by=user).exclude(Exists(earlier))


def stored_bytes(symbol_files) -> int:
    """The bytes of the stored files these rows name, each file once: builds that name a
    file the team holds (held_symbols) share it, and it is on disk once."""
    return sum(size for _, size in symbol_files.order_by().values_list("file", "size")
               .distinct())


def check_team_quota(team, files) -> None:
    """The team's uploads fit its quota (team None: the user's first upload, which makes
    a new, empty team under the default quota)."""
    quota = team_quota(team)
    used = team_usage(team)
    incoming = sum(f.size for f in files if f is not None)
    if used + incoming > quota:
        who = f"team “{team.name}”" if team is not None else "your new team"
        raise TeamQuotaExceeded(
            f"This upload of {exact_size(incoming)} would take the uploads of {who} to "
            f"{exact_size(used + incoming)}, over its quota of {exact_size(quota)}. "
            f"Delete old captures or ask an administrator for more room.")


def sha256_of(upload: UploadedFile) -> str:
    """The file's digest: the one taken as it arrived (upload_limits), or read now."""
    known = getattr(upload, "perfweb_sha256", None)
    if known is not None:
        return known
    h = hashlib.sha256()
    for chunk in upload.chunks(1 << 20):
        h.update(chunk)
    upload.seek(0)
    return h.hexdigest()


def store_upload(user, team, d) -> tuple[Capture, bool]:
    """Store an upload (form or API): service and build made on first use, the capture
    deduplicated by content within its build, symbol files attached, analysis queued.
    `team` None: the user has none yet, and this upload makes one of their own. Nothing
    is created before the quota check passes, and everything in one transaction, so a
    refused or failed upload leaves no team, service, build or file behind."""
    upload = d["capture"]
    files = [upload, *(d.get("symbols") or []), *(d.get("sources") or [])]
    check_quota(user, files)
    check_team_quota(team, files)
    digest = sha256_of(upload)
    stored: list = []  # (storage, name) of every file written, removed if anything fails
    try:
        with transaction.atomic():
            if team is None:
                team = team_for_first_upload(user)
            service, _ = Service.objects.get_or_create(team=team, name=d["service"].strip())
            build, _ = Build.objects.get_or_create(
                service=service, version=d["version"].strip(),
                defaults={"git_revision": d.get("git_revision", "")})
            existing = Capture.objects.filter(build=build, sha256=digest).first()
            if existing is not None:
                return existing, False
            try:
                with transaction.atomic():
                    capture = _store_capture(user, build, digest, d, stored)
            except IntegrityError:  # the same file uploaded twice at once
                _remove(stored)
                return Capture.objects.get(build=build, sha256=digest), False
    except OSError as e:
        _remove(stored)
        raise _storage_error(e) from e
    except Exception:  # e.g. held_symbols.NotHeld: nothing of the upload is kept
        _remove(stored)
        raise
    return capture, True


def _store_capture(user, build, digest: str, d, stored: list) -> Capture:
    upload = d["capture"]
    rates = d.get("rate") or ()  # the measurements (forms and API parse them)
    capture = Capture(build=build, original_name=upload.name[:255], sha256=digest,
                      size=upload.size, label=d.get("label", ""), notes=d.get("notes", ""),
                      rate=statistics.fmean(rates) if rates else None,
                      rate_values=list(rates) if len(rates) > 1 else [],
                      rate_unit=(d.get("rate_unit") or "req/s")[:32] if rates else "",
                      uploaded_by=user)
    _store_file(capture.file, upload, stored)
    capture.save()
    owner = {"build": build} if d.get("symbols_for_build") else {"capture": capture}
    for f in d.get("symbols") or []:
        store_symbol(f, user, stored=stored, **owner)
    held_symbols.attach(d.get("symbols_held") or [], user, build.service.team, **owner)
    for f in d.get("sources") or []:  # the source tree is the build's
        store_symbol(f, user, build=build, stored=stored, kind=SymbolFile.SOURCE)
    pipeline.enqueue(capture)
    return capture


def store_symbol(f, user, build=None, capture=None, stored: list | None = None,
                 kind: str = SymbolFile.SYMBOLS) -> SymbolFile:
    sf = SymbolFile(build=build, capture=capture, original_name=f.name[:255],
                    sha256=sha256_of(f), size=f.size, uploaded_by=user, kind=kind)
    mine = [] if stored is None else stored
    try:
        _store_file(sf.file, f, mine)
        sf.save()
        if kind == SymbolFile.SOURCE:  # read by a worker now, never by a request
            pipeline.index_source(sf.pk)
    except OSError as e:
        if stored is None:  # on its own: clean up here; in an upload: the caller does
            _remove(mine)
            raise _storage_error(e) from e
        raise
    return sf


def store_build_symbols(files, user, build, sources=()) -> None:
    """More symbol files (and source archives) for a build: all of them, or none (files
    and rows)."""
    check_quota(user, [*files, *sources])
    check_team_quota(build.service.team, [*files, *sources])
    stored: list = []
    try:
        with transaction.atomic():
            for f in files:
                store_symbol(f, user, build=build, stored=stored)
            for f in sources:
                store_symbol(f, user, build=build, stored=stored, kind=SymbolFile.SOURCE)
    except OSError as e:
        _remove(stored)
        raise _storage_error(e) from e


class StorageFull(OSError):
    def __str__(self) -> str:
        return self.strerror


def _storage_error(e: OSError) -> OSError:
    from .upload_limits import FULL, STORAGE_FULL
    return StorageFull(e.errno, STORAGE_FULL) if e.errno in FULL else e


def _store_file(field_file, upload, stored: list) -> None:
    """Save under a name chosen first, so a write that fails half-way can be removed."""
    name = field_file.field.generate_filename(field_file.instance, upload.name)
    stored.append((field_file.storage, name))
    field_file.name = field_file.storage.save(name, upload,
                                              max_length=field_file.field.max_length)
    stored[-1] = (field_file.storage, field_file.name)


def _remove(stored: list) -> None:
    for storage, name in stored:
        try:
            storage.delete(name)
        except OSError:
            pass


def exact_size(n: int) -> str:
    """The bytes, and from 1 KiB up the rounded size beside them: a file one byte over a
    2 GiB limit and the limit both round to "2.0 GiB", which explains nothing."""
    return f"{n:,} bytes" if n < 1024 else f"{n:,} bytes ({human_size(n)})"


def human_size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
