"""A Python process whose compiled extensions are the sanitized ones of build.py.

The parent gives the child `environment(folder)`: gcc's libasan and libubsan preloaded
(CPython itself is not built with them, and ASan must be the first library loaded),
leak detection off (CPython's own allocations at exit confuse LeakSanitizer), every
report fatal (abort_on_error, halt_on_error: a report is a crash, never a line in a log
nobody reads), and PYTHONMALLOC=malloc so that Python's objects, and the buffers the
extensions read, are separate heap blocks with ASan's red zones around them rather than
pieces of pymalloc's arenas. The child calls `install()` before importing `analysis`: a
finder at the head of sys.meta_path answers the extensions' names with the sanitized
files, and `check_loaded()` proves afterwards that those, and not the checkout's, are the
ones mapped into the process.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from .build import CANARY_NAME, ROOT, extensions, suffix

#: the child's variable naming the folder of sanitized modules
FOLDER_ENV = "PERFWEB_SANITIZED"
#: (an allocation over 2 GiB, or the process past 3 GiB resident, is a finding too: an
#: id read as 2^31 once sized an array at 20 GiB, and the kernel killed the process, and
#: nearly its neighbours, before any report)
ASAN_OPTIONS = ("detect_leaks=0:abort_on_error=1:halt_on_error=1:symbolize=1:"
                "malloc_context_size=4:max_allocation_size_mb=2048:hard_rss_limit_mb=3072")
UBSAN_OPTIONS = "halt_on_error=1:abort_on_error=1:print_stacktrace=1"
#: symbols every sanitized object file calls into (a build without the flags has neither)
INSTRUMENTED = (b"__asan_init", b"__ubsan_handle_")
#: what a sanitizer's report starts with, on the child's stderr
REPORT_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: UndefinedBehavior",
                  "AddressSanitizer: hard rss limit exhausted")


@lru_cache(maxsize=None)
def runtime_libraries() -> tuple[str, str]:
    """gcc's libasan.so and libubsan.so (the ones the build links against)."""
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                              text=True, check=True).stdout.strip()
        if not os.path.isabs(path):  # gcc echoes the bare name when it has none
            raise FileNotFoundError(f"gcc has no {name} (Debian: apt-get install gcc)")
        libs.append(os.path.realpath(path))
    return libs[0], libs[1]


def environment(folder: Path, base: dict | None = None) -> dict:
    env = dict(os.environ if base is None else base)
    env.update(LD_PRELOAD=":".join(runtime_libraries()), ASAN_OPTIONS=ASAN_OPTIONS,
               UBSAN_OPTIONS=UBSAN_OPTIONS, PYTHONMALLOC="malloc",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
               **{FOLDER_ENV: str(folder)})
    return env


def modules(folder: Path) -> dict[str, Path]:
    """module name -> its sanitized file in `folder`"""
    names = [e["name"] for e in extensions()] + [CANARY_NAME]
    return {name: folder / (name + suffix()) for name in names}


class _Finder:
    """The sanitized file for each extension's name; every other import as before."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, name, path=None, target=None):
        file = self.files.get(name)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(name, str(file))
        return importlib.util.spec_from_file_location(name, str(file), loader=loader)


def install() -> Path:
    """In the child, before `analysis` is imported: the sanitized modules come first."""
    folder = Path(os.environ[FOLDER_ENV])
    if "libasan" not in _mapped_text():
        raise RuntimeError("libasan is not loaded: run with sanitized.environment()")
    already = [n for n in modules(folder) if n in sys.modules]
    if already:
        raise RuntimeError(f"imported before the sanitized finder: {already}")
    sys.meta_path.insert(0, _Finder(modules(folder)))
    return folder


def _mapped_text() -> str:
    with open("/proc/self/maps") as f:
        return f.read()


def check_loaded(folder: Path) -> list[str]:
    """Imports every extension and returns the sanitized files mapped in this process;
    raises when one came from elsewhere (the checkout's unsanitized build) or one of
    them lacks the sanitizers' calls."""
    import importlib
    files = modules(folder)
    for name, file in files.items():
        mod = importlib.import_module(name)
        if Path(mod.__file__).resolve() != file.resolve():
            raise RuntimeError(f"{name} was imported from {mod.__file__}, not {file}")
    maps = _mapped_text()
    mapped = {line.split(None, 5)[-1] for line in maps.splitlines() if ".so" in line}
    plain = {name.rsplit(".", 1)[-1] + suffix() for name in files}  # the usual names
    stray = [p for p in mapped if Path(p).name in plain and Path(p).parent != folder.resolve()]
    if stray:
        raise RuntimeError(f"unsanitized extensions mapped too: {stray}")
    missing = [str(f) for f in files.values() if str(f.resolve()) not in mapped]
    if missing:
        raise RuntimeError(f"sanitized extensions not mapped: {missing}")
    plain_build = [str(f) for f in files.values()
                   if not all(s in f.read_bytes() for s in INSTRUMENTED)]
    if plain_build:
        raise RuntimeError(f"built without the sanitizers: {plain_build}")
    return sorted(str(f) for f in files.values())
