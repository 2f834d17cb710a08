"""How the coverage table names where a frame's symbols came from: the file the user
uploaded first, then which member of it, in the words a person would use.

The engine's origin is a chain of names, "upload:member:member" (analysis.symbols.inputs).
A member of a `perf archive` bundle is a path of perf's build-id cache,
`usr/lib/x86_64-linux-gnu/libc.so.6/<build-id>/debug` (perf-buildid-cache(1): one folder
per DSO path and build-id holding `elf`, `debug`, `kallsyms`, `vdso` or `probes`), which
reads as storage, not as the file: it is shown as "libc.so.6 (debug file)".

A file the worker got from a debuginfod server has its URL as origin
(`http://host:8002/buildid/<hex>/debuginfo`): shown as "debuginfo" or "executable", the
word debuginfod uses, the server being in the row's "from" column.
"""
from __future__ import annotations

import re

from django import template

register = template.Library()

_BUILD_ID_CACHE = re.compile(r"^(?:.*/)?(?P<dso>[^/]+)/[0-9a-f]{8,64}/"
                             r"(?P<kind>elf|debug|kallsyms|vdso|probes)$")
_KINDS = {"elf": "binary", "debug": "debug file", "kallsyms": "kallsyms", "vdso": "vDSO",
          "probes": "probes"}


@register.filter
def uploaded_file(origin: str | None) -> str:
    """"bundle.tar.bz2:usr/lib/libc.so.6/93ac.../debug" -> "bundle.tar.bz2"."""
    if _fetched(origin):
        return origin.rsplit("/", 1)[-1]
    return (origin or "").split(":", 1)[0]


def _fetched(origin: str | None) -> bool:
    return bool(origin) and origin.startswith(("http://", "https://"))


@register.filter
def archive_member(origin: str | None) -> str:
    """The member of the uploaded archive, short: "libc.so.6 (debug file)" for perf's
    build-id cache layout, else the member's file name; "" for a file uploaded alone."""
    if not origin or ":" not in origin or _fetched(origin):
        return ""
    member = origin.rsplit(":", 1)[1]
    m = _BUILD_ID_CACHE.match(member)
    if m:
        return f"{m['dso']} ({_KINDS[m['kind']]})"
    return member.rsplit("/", 1)[-1]
