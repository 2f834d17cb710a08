"""One module per input format; `load` picks the importer from the content, never the name.

Binary formats (perf.data) are recognised by their magic; text formats by their lines.

Each importer module has `NAME`, `sniff(head_text) -> bool` and `parse(source) -> Profile`.
Order matters only where formats could look alike: perf report text has `#` headers that
perf script's `--header` also prints, so it is asked first; folded stacks last, since a
perf script line like `comm 123` could pass for a folded line on its own.
"""
from __future__ import annotations

from ..errors import UnrecognizedFormat
from ..location_table import compact_locations
from ..perfdata.header import damaged_error, damaged_magic
from ..profile import Profile
from ..profile_check import checked
from ..textio import Source, read_head
from . import folded, perf_data, perf_report, perf_script

IMPORTERS = (perf_report, perf_script, folded)
BINARY_IMPORTERS = (perf_data,)

_BINARY_KINDS = [
    (b"PERFFILE", "a perf.data capture in the format of perf before 2.6.35"),
    (b"\x7fELF", "an ELF binary (a symbol file: attach it as symbols, not as the capture)"),
    (b"PK\x03\x04", "a zip archive"),
    (b"BZh", "a bzip2 archive (perf archive output is a symbol bundle, not the capture)"),
    (b"\xfd7zXZ", "an xz archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd stream"),
]


def detect(source: Source) -> str:
    """The importer NAME for `source`, or UnrecognizedFormat saying what it looked like."""
    head = read_head(source)
    for mod in BINARY_IMPORTERS:
        if mod.sniff_bytes(head):
            return mod.NAME
    for magic, what in _BINARY_KINDS:
        if head.startswith(magic):
            raise UnrecognizedFormat(f"this is {what}, not a profile we can read")
    damaged = damaged_magic(head)
    if damaged:
        raise damaged_error(damaged)
    if b"\x00" in head[:4096]:
        raise UnrecognizedFormat("this is a binary file of unknown kind, not a profile")
    text = head.decode("utf-8", errors="replace")
    if all(not ln.strip() or ln.startswith("#") for ln in text.splitlines()):
        # what perf prints for a capture with no samples: nothing, or only its header
        return perf_report.NAME if "perf.data header" in text else perf_script.NAME
    for mod in IMPORTERS:
        if mod.sniff(text):
            return mod.NAME
    first = next((ln for ln in text.splitlines() if ln.strip()), "")[:80]
    raise UnrecognizedFormat(
        "not perf script, perf report or folded-stack text: the first line reads "
        f"{first!r}; expected a sample line like 'comm 1234 [000] 12.345: 1 cycles:', a "
        "'# Samples: N of event' header or 'a;b;c 42'")


def load(source: Source, fmt: str | None = None) -> Profile:
    """Detect (unless `fmt` names the importer) and import."""
    name = fmt or detect(source)
    for mod in IMPORTERS + BINARY_IMPORTERS:
        if mod.NAME == name:
            profile = mod.parse(source)
            profile.drop_indexes()
            if profile.user_stacks is None:  # (else the unwind pass adds stacks first)
                profile.compact_stacks()
            compact_locations(profile)
            return checked(profile, f"the {name} importer")
    raise UnrecognizedFormat(f"unknown format {name!r}")
