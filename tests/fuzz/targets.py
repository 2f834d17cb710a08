"""What the fuzzer feeds: each reader of uploaded bytes, by name. Every target takes the
bytes of one input; files are written to a private temporary folder first when the
reader wants a path (ELF, archives)."""
from __future__ import annotations

import io
import os
import tempfile

from analysis.importers import load
from analysis.source_archive import text_members
from analysis.symbols import elf, jitdump, kallsyms, perfmap, procmaps
from analysis.symbols.inputs import collect, read_bytes

from .twins import TWINS


def _importer(fmt):
    def run(data: bytes) -> None:
        len(load(io.BytesIO(data), fmt))  # a profile, readable
    return run


def _with_file(fn):
    def run(data: bytes) -> None:
        with tempfile.TemporaryDirectory(prefix="perfweb-fuzz-") as work:
            path = os.path.join(work, "input")
            with open(path, "wb") as f:
                f.write(data)
            fn(path, work)
    return run


def _elf(path: str, work: str) -> None:
    elf.read_info(path)
    index, _ = elf.function_symbols(path)
    len(index)


def _elf_tables(path: str, work: str) -> None:
    """What symbolic and the PLT rule make of the file: its unwind and line tables."""
    from analysis.symbols.index_cache import file_sha256
    from analysis.symbols.lines import line_table
    from analysis.unwind.cfi import table_for
    digest = file_sha256(path)
    table_for(path, digest, "x86_64")
    line_table(path, digest)


def _archive(path: str, work: str) -> None:
    out = os.path.join(work, "out")
    os.mkdir(out)
    collected = collect([path], out)
    for f in collected.files:
        assert os.path.realpath(f.path).startswith(os.path.realpath(out) + os.sep) or \
            f.path == path, f.path  # nothing outside the private folder
        if f.kind != "elf":
            read_bytes(f)


def _source_archive(path: str, work: str) -> None:
    for member in text_members(path, "input"):
        assert b"\0" not in member.text[:8192], member.name  # text files only


TARGETS = {
    "perf-data": _importer("perf-data"),
    "perf-script": _importer("perf-script"),
    "perf-report": _importer("perf-report"),
    "folded": _importer("folded"),
    "detect": _importer(None),
    "elf": _with_file(_elf),
    "elf-fields": _with_file(_elf),
    "elf-tables": _with_file(_elf_tables),
    "perf-data-fields": _importer("perf-data"),
    "kallsyms": lambda data: kallsyms.parse(data),
    "procmaps": lambda data: procmaps.parse(data),
    "perfmap": lambda data: perfmap.parse(data),
    "jitdump": lambda data: jitdump.parse(data),
    "jitdump-fields": lambda data: jitdump.parse(data),
    "archive": _with_file(_archive),
    "source-archive": _with_file(_source_archive),
    **TWINS,  # the compiled loops against their Python twins
}
