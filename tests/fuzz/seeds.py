"""The real files the compiled code's fuzz targets start from, cut to fuzzing size but
whole (a perf.data keeps its feature sections: event names, tracepoint formats): every
kind of record the fixtures hold (samples with call chains, two events, DWARF stacks,
JIT and dlopen maps, PERF_RECORD_SWITCH and SWITCH_CPU_WIDE, sched_switch, sched_waking
and sched_stat_runtime tracepoints, a pipe, zstd-compressed records), perf script text
with and without scheduler events, captures where a known library's frames are hot and
partly unnamed (the diagnosis' code rules), and saved profiles of both, with their
switches."""
from __future__ import annotations

import gzip
import io
from functools import lru_cache
from pathlib import Path

from .mutate import CORPUS, FIXTURES, SPINPOOL, seed
from .shapes import small_perf_data

#: bytes of records kept per perf.data: a few hundred records, a millisecond or two to read
RECORD_BYTES = 12 * 1024
#: bytes of perf script text kept per file (whole samples)
TEXT_BYTES = 8 * 1024
PERF_DATA = [FIXTURES / "offcpu" / name for name in (
    "redis-fsync-switch/bad.perf.data", "system-wide/sys.perf.data",
    "sched-record/1.1-sched.perf.data", "cpp-server-mutex/1.1-wakeup.perf.data")] + [
    FIXTURES / "perfdata" / f"{name}.perf.data" for name in (
        "compressed", "pipe", "two-events", "dwarf", "jit", "dlopen", "many-threads",
        "events", "system-wide")] + [SPINPOOL / "1.1.0-busy.perf.data"] + [
    FIXTURES / name / "bad.perf.data"  # a known library's frames, some unnamed: code rules
    for name in ("realworld/nginx-access-log", "realworld-holdout2/nginx-tls-keepalive")]
#: the public corpus' perf.data files: many perf versions (3.2 to 6.12), i686 and armv7,
#: branch stacks, Intel PT, namespaces, lost samples, hybrid CPUs, pipes, zstd
PUBLIC = CORPUS / "public"
#: a seed larger than this once cut (a feature section of a megabyte) is left out
MAX_SEED = 64 * 1024
FLAMEGRAPH = CORPUS / "public" / "brendangregg__FlameGraph" / "test"
SCRIPT = [FLAMEGRAPH / "perf-java-stacks-01.txt", SPINPOOL / "1.0.0-idle.truth-script.txt",
          SPINPOOL / "1.0.0-idle.script-raw.txt", FIXTURES / "perfdata" / "jit.script.txt",
          FIXTURES / "perfdata" / "two-events.script.txt"]
SCRIPT_GZ = [FIXTURES / "offcpu" / "sched-record" / "1.1-sched.perf.data.script.txt.gz",
             FIXTURES / "offcpu" / "redis-fsync-switch" / "bad.perf.data.script.txt.gz",
             FIXTURES / "realworld" / "nginx-access-log" / "bad.script.txt.gz",
             FIXTURES / "realworld-holdout2" / "nginx-tls-keepalive" / "bad.script.txt.gz"]


def _public_perf_data() -> list[Path]:
    return sorted(p for p in PUBLIC.rglob("*perf.data*") if p.is_file() and
                  p.suffix not in (".buildids", ".gz", ".zlib", ".txt", ".json"))


@lru_cache(maxsize=None)
def perf_data() -> list[bytes]:
    """The fixtures' captures, then those of the public corpus that start as one (the
    magic of this century's perf)."""
    out = []
    for path in PERF_DATA + _public_perf_data():
        data = small_perf_data(path.read_bytes(), RECORD_BYTES)
        if data[:8] in (b"PERFILE2", b"2ELIFREP") and len(data) <= MAX_SEED:
            out.append(data)
    return out


def _whole_samples(text: bytes) -> bytes:
    end = text.rfind(b"\n\n")
    return text[:end + 2] if end > 0 else text


@lru_cache(maxsize=None)
def perf_script() -> list[bytes]:
    texts = [_whole_samples(seed(p, TEXT_BYTES)) for p in SCRIPT]
    for path in SCRIPT_GZ:
        with gzip.open(path) as f:
            texts.append(_whole_samples(f.read(TEXT_BYTES)))
    return texts


@lru_cache(maxsize=None)
def saved_profiles() -> list[bytes]:
    """Saved profiles (analysis/profile_io.py) of a few of the seeds above."""
    from analysis import profile_io
    from analysis.importers import load
    out = []
    for data in perf_data()[:4] + perf_data()[4:7] + perf_script()[3:]:
        f = io.BytesIO()
        profile_io.dump(load(io.BytesIO(data)), f)
        out.append(f.getvalue())
    return out
