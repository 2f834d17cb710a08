"""Symbol files a team already holds, named by digest instead of sent again.

Every capture of a service maps the same libc, interpreter, kernel and, for an inference
server, a libtorch of 400 MB; an upload that sends them all again each time costs the
user their bandwidth and the team its quota for bytes the server has. The upload client
asks which of its files' SHA-256 digests the team holds (`held`), sends only the others,
and names the held ones as `DIGEST:NAME` (`attach`): the new build gets a row of its own
that points at the stored file of the earlier one. This is what Sentry's debug-file
upload does with its chunk digests (sentry-cli's "missing chunks" query).

Only the team's own files count: a digest held by another team is "not held" (a team
must not learn what another uploaded, nor reach its files by guessing a digest).

A shared file is removed only with the last row naming it (`services.deletion`). Both
sides lock the rows naming the file (SELECT ... FOR UPDATE), so a deletion and an
upload that reuses the file are ordered: either the upload sees the rows gone and asks
for the file, or the deletion sees the new row and keeps the file.
"""
from __future__ import annotations

import re

from django.db.models import Q

from .models import SymbolFile

DIGEST = re.compile(r"[0-9a-f]{64}")
#: at most this many digests in one question (an upload names a few hundred at most)
MAX_DIGESTS = 2000


class NotHeld(ValueError):
    """Files named by digest that the team does not hold (any more): send them."""

    def __init__(self, missing: list[str]):
        self.missing = missing
        super().__init__(f"{len(missing)} symbol file{'s' if len(missing) != 1 else ''} "
                         f"named by digest {'are' if len(missing) != 1 else 'is'} not held "
                         f"by the team; send {'them' if len(missing) != 1 else 'it'}: "
                         + ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))


def parse_entry(text: str) -> tuple[str, str]:
    """`DIGEST:NAME` -> (digest, name); ValueError with the reason otherwise."""
    digest, sep, name = text.partition(":")
    digest = digest.strip().lower()
    if not sep or not DIGEST.fullmatch(digest):
        raise ValueError(f"{text[:80]!r} is not DIGEST:NAME (a SHA-256 in 64 hex digits, "
                         f"a colon, the file's name)")
    name = name.strip()
    if not name or len(name) > 255:
        raise ValueError(f"{text[:80]!r}: the name must have 1 to 255 characters")
    return digest, name


def _sources(team, digests, lock: bool = False) -> dict:
    """digest -> the team's newest symbol file row of it whose file is stored; with
    `lock`, the rows read are locked (SELECT ... FOR UPDATE) until the transaction ends."""
    if team is None:
        return {}
    rows = SymbolFile.objects.filter(
        Q(build__service__team=team) | Q(capture__build__service__team=team),
        kind=SymbolFile.SYMBOLS, sha256__in=list(digests))
    if lock:
        rows = rows.select_for_update(of=("self",))
    found = {}
    for sf in rows.order_by("-created_at"):
        if sf.sha256 not in found and _present(sf):
            found[sf.sha256] = sf
    return found


def held(team, digests) -> list[str]:
    """Those of `digests` the team holds a stored symbol file of, in the order asked."""
    found = _sources(team, set(digests))
    return [d for d in dict.fromkeys(digests) if d in found]


def _present(sf: SymbolFile) -> bool:
    try:
        return sf.file.storage.exists(sf.file.name)
    except OSError:
        return False


def attach(entries, user, team, build=None, capture=None) -> list[SymbolFile]:
    """A new row for each (digest, name), on `build` or `capture`, sharing the stored
    file of a row of the team with that digest; NotHeld names the digests it has none
    of. Called inside the upload's transaction: the rows it reads stay locked until
    the upload commits, so no deletion can remove their file meanwhile."""
    if not entries:
        return []
    digests = {d for d, _ in entries}
    # locked: a deletion of these rows waits for this upload, and sees its new rows
    source = _sources(team, digests, lock=True)
    missing = sorted(d for d in digests if d not in source)
    if missing:
        raise NotHeld(missing)
    made = []
    for digest, name in entries:
        sf = source[digest]
        made.append(SymbolFile.objects.create(
            build=build, capture=capture, file=sf.file.name, original_name=name[:255],
            sha256=digest, size=sf.size, uploaded_by=user, kind=SymbolFile.SYMBOLS))
    return made
