"""The hot lines of a function shown in its source, when the capture's build has a source
archive: the file of the hottest line is looked up among the text files the worker took
out of the build's archives (services/source_index.py; newest archive first), by the
longest tail of its debug path (analysis.sources), and the rows around the hot lines
carry their samples.

A request reads rows, never an archive: a tar member is reached only by decompressing
all that comes before it, which a 21 KB archive made cost two minutes per request. An
archive not read yet, or refused, is said in a sentence (`source_note`) instead."""
from __future__ import annotations

import zlib

from analysis.sources import MAX_SOURCE_BYTES, best_member, member_basename, rows_around

from ..models import SourceMember, SymbolFile

#: members of one archive sharing the wanted file's name that are compared
MAX_CANDIDATES = 10_000

NOT_READ = ("Source archive {name} has not been read yet: a worker reads each source "
            "archive once it is uploaded. Reload in a moment to see its source.")


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _member(sf: SymbolFile, file: str) -> tuple[str, bytes] | None:
    """(member name, its text) of the member of `sf` that `file` names, from the index."""
    base = member_basename(file)
    if base is None or "\0" in base or not _utf8(base):
        return None  # no member has such a name (source_archive keeps none)
    rows = SourceMember.objects.filter(archive=sf, basename=base).order_by("pk")
    names: dict[str, int] = {}
    for name, pk in rows.values_list("name", "pk")[:MAX_CANDIDATES]:
        names.setdefault(name, pk)  # archive order; of a repeated name, the first
    name = best_member(list(names), file)
    if name is None:
        return None
    packed = SourceMember.objects.filter(pk=names[name]).values_list("text", flat=True).first()
    if packed is None:  # deleted meanwhile
        return None
    return name, zlib.decompressobj().decompress(bytes(packed), MAX_SOURCE_BYTES)


def with_source(capture, data: dict) -> dict:
    """`data` (explore.lines) with a `source` block, or `source: None`, and `source_note`:
    why an archive of the build gives no source (refused, not read yet), or None."""
    data["source"] = data["source_note"] = None
    if not data.get("lines"):
        return data
    archives = SymbolFile.objects.filter(build=capture.build, kind=SymbolFile.SOURCE) \
        .order_by("-created_at")
    file = data["lines"][0]["file"]
    hot = {x["line"]: x for x in data["lines"] if x["file"] == file}
    notes = []
    for sf in archives:
        if not sf.indexed or sf.refused:
            notes.append(sf.refused or NOT_READ.format(name=sf.original_name))
            continue
        found = _member(sf, file)
        if found is None:
            continue
        member, text = found
        rows = rows_around(text, sorted(hot))
        data["source"] = {
            "file": member, "archive": sf.original_name, "debug_file": file,
            "rows": [{"line": r.line, "text": r.text,
                      "s": hot[r.line]["s"] if r.line in hot else 0,
                      "t": hot[r.line]["t"] if r.line in hot else 0} for r in rows]}
        return data
    data["source_note"] = notes[0] if notes else None
    return data
