"""Inputs for the fuzz tests: real files from the corpus, mutated the way files really
break (flipped bytes, truncation, spliced ranges) and the way attackers break them
(lengths, counts and offsets set to 0, -1, 2^31, 2^63)."""
from __future__ import annotations

import hashlib
import os
import struct
import traceback
import zipfile
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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


def check(target: str, fn, data: bytes) -> None:
    """`fn(data)` may return anything or raise our own typed error; nothing else."""
    from analysis.errors import AnalysisError
    try:
        fn(data)
    except AnalysisError:
        pass
    except Exception as e:  # noqa: BLE001 - a crash: what the fuzzer is looking for
        if not COLLECT:
            raise
        CRASHES.mkdir(exist_ok=True)
        name = f"{target}-{hashlib.sha256(data).hexdigest()[:12]}"
        where = traceback.extract_tb(e.__traceback__)[-1]
        site = f"{Path(where.filename).name}:{where.lineno} {type(e).__name__}"
        (CRASHES / f"{name}.bin").write_bytes(data)
        with open(CRASHES / "triage.log", "a") as log:
            log.write(f"{name} {site}: {str(e)[:120]}\n")


EXTREMES = [0, 1, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
            0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF]


@lru_cache(maxsize=None)
def seed(path: Path, limit: int = 256 * 1024) -> bytes:
    return path.read_bytes()[:limit]


@lru_cache(maxsize=None)
def kallsyms_seed() -> bytes:
    with zipfile.ZipFile(SPINPOOL / "kernel-symbols.zip") as z:
        with z.open("kallsyms") as f:
            return f.read(16 * 1024)


@st.composite
def mutated(draw, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 8))):
        if not data:
            data += draw(st.binary(max_size=64))
            continue
        op = draw(st.integers(0, 6))
        at = draw(st.integers(0, len(data) - 1))
        if op == 0:  # flip a byte
            data[at] ^= draw(st.integers(1, 255))
        elif op == 1:  # an absurd 32- or 64-bit number (sizes, counts, offsets)
            value = draw(st.sampled_from(EXTREMES))
            fmt = draw(st.sampled_from(["<I", "<Q", ">I", "<H"]))
            packed = struct.pack(fmt, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
            data[at:at + len(packed)] = packed
        elif op == 2:  # truncate
            del data[at:]
        elif op == 3:  # cut a range out
            del data[at:at + draw(st.integers(1, 4096))]
        elif op == 4:  # repeat a range
            chunk = data[at:at + draw(st.integers(1, 512))]
            data[at:at] = chunk * draw(st.integers(1, 4))
        elif op == 5:  # random bytes in
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        else:  # text-level: a line break or a separator where it was not
            data[at:at] = draw(st.sampled_from([b"\n", b"\t", b" ", b";", b":", b"(", b")",
                                                b"[", b"]", b"0x", b"%", b"\x00"]))
    return bytes(data)
