"""Inputs for the fuzz tests: real files from the corpus, mutated the way files really
break (flipped bytes, truncation, spliced ranges) and the way attackers break them
(lengths, counts and offsets set to 0, -1, 2^31, 2^63)."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import signal
import struct
import threading
import traceback
import zipfile
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from .edits import Choices, mutate

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
SPINPOOL = CORPUS / "cases" / "spinpool"
FIXTURES = ROOT / "tests" / "fixtures"

#: FUZZ_EXAMPLES=100000 for the long run (make fuzz); make test runs a short one
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
                suppress_health_check=list(HealthCheck), print_blob=True)

#: FUZZ_COLLECT=1: save every crashing input under crashes/ and go on (triage), instead of
#: stopping at the first; each saved input is replayed by test_crashes.py from then on
COLLECT = os.environ.get("FUZZ_COLLECT") == "1"
CRASHES = Path(__file__).resolve().parent / "crashes"


#: an input that takes longer than this, or grows the process's address space by more
#: than MEMORY_BYTES, is a crash too: a size read as 2^62 shows as a hang or a huge
#: allocation long before it shows as an exception
HANG_S = int(os.environ.get("FUZZ_HANG_S", "20"))
MEMORY_BYTES = 2 << 30


class Hang(BaseException):
    """(no `except Exception` of the code under test may take it for its own)"""


@contextlib.contextmanager
def _bounded():
    """SIGALRM after HANG_S and RLIMIT_AS at the current size plus MEMORY_BYTES, both
    undone afterwards (the main thread only: pytest's, and each xdist worker's)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum, frame):
        raise Hang(f"no answer within {HANG_S} s")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    limit = size + MEMORY_BYTES
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    resource.setrlimit(resource.RLIMIT_AS, (limit if soft == resource.RLIM_INFINITY
                                            else min(limit, soft), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(target: str, fn, data: bytes, seeds: tuple[Path, ...] = ()) -> None:
    """`fn(data)` may return anything or raise our own typed error; nothing else, and
    within HANG_S and MEMORY_BYTES. `seeds`: the whole files the input was edited from,
    so that a crash is kept as its edits (save_crash)."""
    from analysis.errors import AnalysisError
    try:
        with _bounded():
            fn(data)
    except AnalysisError:
        pass
    except (Exception, Hang) as e:  # noqa: BLE001 - a crash: what the fuzzer is looking for
        if not COLLECT:
            raise
        name = save_crash(target, data, seeds)
        where = traceback.extract_tb(e.__traceback__)[-1]
        site = f"{Path(where.filename).name}:{where.lineno} {type(e).__name__}"
        with open(CRASHES / "triage.log", "a") as log:
            log.write(f"{name} {site}: {str(e)[:120]}\n")


def save_crash(target: str, data: bytes, seeds: tuple[Path, ...] = ()) -> str:
    """Keep a crashing input under crashes/: as crashes/<name>.bin, or, when it is a
    seed of the same length with some bytes changed (a field edit of a 1.9 MB libc),
    as crashes/<name>.edits.json: the seed's path and the changed byte runs."""
    CRASHES.mkdir(exist_ok=True)
    name = f"{target}-{hashlib.sha256(data).hexdigest()[:12]}"
    for path in seeds:
        base = path.read_bytes()
        if len(base) != len(data):
            continue
        runs, i = [], 0
        while i < len(data):
            if data[i] == base[i]:
                i += 1
                continue
            j = i
            while j < len(data) and data[j] != base[j]:
                j += 1
            runs.append([i, data[i:j].hex()])
            i = j
        if len(runs) <= 64:
            (CRASHES / f"{name}.edits.json").write_text(json.dumps(
                {"seed": os.path.relpath(path, ROOT), "edits": runs}) + "\n")
            return name
    (CRASHES / f"{name}.bin").write_bytes(data)
    return name


def crash_input(path: Path) -> bytes:
    """The bytes of a kept crash (save_crash)."""
    if path.name.endswith(".edits.json"):
        kept = json.loads(path.read_text())
        data = bytearray((ROOT / kept["seed"]).read_bytes())
        for at, hexed in kept["edits"]:
            run = bytes.fromhex(hexed)
            data[at:at + len(run)] = run
        return bytes(data)
    return path.read_bytes()


EXTREMES = [0, 1, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
            0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF]


@lru_cache(maxsize=None)
def seed(path: Path, limit: int = 256 * 1024) -> bytes:
    return path.read_bytes()[:limit]


@lru_cache(maxsize=None)
def whole(path: Path) -> bytes:
    return path.read_bytes()


@lru_cache(maxsize=None)
def kallsyms_seed() -> bytes:
    with zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip") as z:
        with z.open("kallsyms") as f:
            return f.read(16 * 1024)


@st.composite
def mutated(draw, seeds: list[bytes], shape=None) -> bytes:
    """An input made by edits.mutate from one of `seeds`, its choices drawn by hypothesis
    (so that a failing one shrinks)."""
    c = Choices(draw=draw)
    return mutate(c.pick(seeds), seeds, c, shape)


#: numbers that break size, count and offset arithmetic: the extremes, 2^62 (the edit
#: that held a worker), numbers just past a 32-bit field, and a few near the file's size
ABSURD = EXTREMES + [1 << 62, 1 << 40, 1 << 32, 0x8000000000000000, 0xFFFFFFF0,
                     0xFFFFFFFFFFFFFFF8]


@st.composite
def field_edits(draw, seeds: tuple[Path, ...], fields_of) -> bytes:
    """A whole real file with one to four of its size, count or offset fields
    (`fields_of(seed)`, fields.py: a kind of field, then one of them) set to an absurd
    number, a number near the file's size, or a small one; sometimes also mutated as
    `mutated` does."""
    seed_bytes = whole(draw(st.sampled_from(seeds)))
    groups = fields_of(seed_bytes)
    data = bytearray(seed_bytes)
    n = len(data)
    for _ in range(draw(st.integers(1, 4))):
        at, fmt = draw(st.sampled_from(draw(st.sampled_from(groups))))
        bits = 8 * struct.calcsize(fmt)
        value = draw(st.one_of(st.sampled_from(ABSURD),
                               st.sampled_from([n - 1, n, n + 1, n - 8, n // 2, n * 2]),
                               st.integers(0, 4096), st.integers(0, (1 << bits) - 1)))
        struct.pack_into(fmt, data, at, value & ((1 << bits) - 1))
    if draw(st.integers(0, 3)) == 0:
        return draw(mutated([bytes(data)]))
    return bytes(data)
