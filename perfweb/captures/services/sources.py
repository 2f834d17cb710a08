"""The hot lines of a function shown in its source, when the capture's build has a source
archive: the file of the hottest line is looked up in the build's archives (newest first)
by analysis.sources, and the rows around the hot lines carry their samples.

Finding a member streams the archive up to it, so what was found is kept per process,
keyed by the archive's content digest and the debug path, within a byte budget: the
functions of one file, clicked one after another, read the archive once."""
from __future__ import annotations

from collections import OrderedDict

from analysis.sources import read_member, rows_around

from ..local_files import local_copy
from ..models import SymbolFile
from ..work_dirs import work_dir

#: bytes of source text kept between requests, per process
CACHE_BYTES = 32 << 20
_found: OrderedDict[tuple[str, str], tuple[str, bytes] | None] = OrderedDict()


def _member(sf: SymbolFile, file: str) -> tuple[str, bytes] | None:
    key = (sf.sha256, file)
    if key in _found:
        _found.move_to_end(key)
        return _found[key]
    with work_dir() as work:
        found = read_member(local_copy(sf.file, work, sf.original_name, sf.sha256), file)
    _found[key] = found
    while len(_found) > 1 and sum(len(v[1]) for v in _found.values() if v) > CACHE_BYTES:
        _found.popitem(last=False)
    return found


def with_source(capture, data: dict) -> dict:
    """`data` (explore.lines) with a `source` block, or `source: None`."""
    data["source"] = None
    if not data.get("lines"):
        return data
    archives = SymbolFile.objects.filter(build=capture.build, kind=SymbolFile.SOURCE) \
        .order_by("-created_at")
    file = data["lines"][0]["file"]
    hot = {x["line"]: x for x in data["lines"] if x["file"] == file}
    for sf in archives:
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
        break
    return data
