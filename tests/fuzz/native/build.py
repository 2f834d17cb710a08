"""The compiled extensions of pyproject.toml built again with AddressSanitizer and
UndefinedBehaviorSanitizer, into a folder of their own: the checkout's .so files are never
touched, and the sanitized ones are imported in their place only by a process that asks
for it (sanitized.py). The list of extensions is read from pyproject.toml, so a seventh
one is fuzzed without a change here; the canary (canary.c) is built with the same flags,
to prove that a report would be seen.

    python -m tests.fuzz.native.build OUT_DIR
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import subprocess
import sys
import sysconfig
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CANARY = Path(__file__).resolve().parent / "canary.c"
CANARY_NAME = "perfweb_sanitizer_canary"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer", "-g", "-O1"]
#: what the project's own build passes that does not fit a sanitized build (the
#: optimisation level: -O1 keeps the reports' stacks readable)
_DROPPED = {"-O2", "-O3"}


def extensions() -> list[dict]:
    """The [[tool.setuptools.ext-modules]] tables of pyproject.toml."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["ext-modules"]


def suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX")


def _command(sources: list[Path], includes: list[Path], args: list[str], out: Path) -> list[str]:
    return (["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}"]
            + [f"-I{d}" for d in includes]
            + [a for a in args if a not in _DROPPED] + SANITIZE
            + [str(s) for s in sources] + ["-o", str(out)])


def _digest(cmd: list[str], sources: list[Path], includes: list[Path]) -> str:
    h = hashlib.sha256(json.dumps(cmd).encode())
    for path in sources + sorted(p for d in includes for p in d.glob("*.h")):
        h.update(path.read_bytes())
    return h.hexdigest()


def _jobs(out: Path) -> dict[str, tuple[list[str], str]]:
    """module name -> (gcc command line, digest of it and of everything it reads)"""
    jobs = {}
    for ext in extensions() + [{"name": CANARY_NAME, "sources": [str(CANARY)]}]:
        sources = [ROOT / s for s in ext["sources"]]
        includes = [ROOT / d for d in ext.get("include-dirs", [])]
        cmd = _command(sources, includes, ext.get("extra-compile-args", []),
                       out / (ext["name"] + suffix()))
        jobs[ext["name"]] = (cmd, _digest(cmd, sources, includes))
    return jobs


def build(out: Path) -> dict[str, Path]:
    """Builds what changed since the last build into `out`; module name -> .so file.
    A compiler error raises CalledProcessError with gcc's message. Processes building
    into one folder (pytest's workers) take turns: the second finds it built."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(out)


def _build(out: Path) -> dict[str, Path]:
    stamp = out / "built.json"
    done = json.loads(stamp.read_text()) if stamp.exists() else {}
    jobs = _jobs(out)
    todo = [name for name, (cmd, digest) in jobs.items()
            if done.get(name) != digest or not Path(cmd[-1]).exists()]

    def compile_one(name: str) -> None:
        cmd = jobs[name][0]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise subprocess.CalledProcessError(r.returncode, cmd, r.stdout, r.stderr)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(compile_one, todo))
    stamp.write_text(json.dumps({name: digest for name, (_, digest) in jobs.items()}))
    return {name: Path(cmd[-1]) for name, (cmd, _) in jobs.items()}


if __name__ == "__main__":
    for name, path in build(Path(sys.argv[1])).items():
        print(name, path)
