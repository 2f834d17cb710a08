"""What the fuzzer feeds: each reader of uploaded bytes, by name. Every target takes the
bytes of one input; files are written to a private temporary folder first when the
reader wants a path (ELF, archives)."""
from __future__ import annotations

import io
import os
import tempfile

from analysis.errors import AnalysisError
from analysis.export.folded import FoldOptions, fold
from analysis.importers import load, perf_script
from analysis.symbols import elf, kallsyms, perfmap, procmaps
from analysis.symbols.inputs import collect, read_bytes


def _importer(fmt):
    def run(data: bytes) -> None:
        len(load(io.BytesIO(data), fmt))  # a profile, readable
    return run


def _compiled_alike(data: bytes) -> None:
    """The compiled perf script loop and fold against the Python ones: the same profile
    (or the same error) and the same folded lines; a difference fails as an assertion."""
    from profile_snapshot import snapshot  # tests/, on the path under pytest
    outcomes = []
    for compiled in (True, False):
        try:
            p = perf_script.parse(io.BytesIO(data), compiled=compiled)
        except AnalysisError as e:
            outcomes.append(repr(e))
            continue
        outcomes.append((snapshot(p), [list(fold(p, FoldOptions.from_flag(flag, weight=w),
                                                 compiled=compiled).items())
                                       for flag, w in ((None, "period"), ("all", "samples"))]))
    assert outcomes[0] == outcomes[1]


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


def _archive(path: str, work: str) -> None:
    out = os.path.join(work, "out")
    os.mkdir(out)
    collected = collect([path], out)
    for f in collected.files:
        assert os.path.realpath(f.path).startswith(os.path.realpath(out) + os.sep) or \
            f.path == path, f.path  # nothing outside the private folder
        if f.kind != "elf":
            read_bytes(f)


TARGETS = {
    "perf-data": _importer("perf-data"),
    "perf-script": _importer("perf-script"),
    "perf-script-compiled": _compiled_alike,
    "perf-report": _importer("perf-report"),
    "folded": _importer("folded"),
    "detect": _importer(None),
    "elf": _with_file(_elf),
    "kallsyms": lambda data: kallsyms.parse(data),
    "procmaps": lambda data: procmaps.parse(data),
    "perfmap": lambda data: perfmap.parse(data),
    "archive": _with_file(_archive),
}
