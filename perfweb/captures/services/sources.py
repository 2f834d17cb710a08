"""The hot lines of a function shown in its source, when the capture's build has a source
archive: the file of the hottest line is looked up in the build's archives (newest first)
by analysis.sources, and the rows around the hot lines carry their samples."""
from __future__ import annotations

from analysis.sources import read_member, rows_around

from ..local_files import local_copy
from ..models import SymbolFile
from ..work_dirs import work_dir


def with_source(capture, data: dict) -> dict:
    """`data` (explore.lines) with a `source` block, or `source: None`."""
    data["source"] = None
    if not data.get("lines"):
        return data
    archives = SymbolFile.objects.filter(build=capture.build, kind=SymbolFile.SOURCE) \
        .order_by("-created_at")
    if not archives.exists():
        return data
    file = data["lines"][0]["file"]
    hot = {x["line"]: x for x in data["lines"] if x["file"] == file}
    with work_dir() as work:
        for sf in archives:
            found = read_member(local_copy(sf.file, work, sf.original_name), file)
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
