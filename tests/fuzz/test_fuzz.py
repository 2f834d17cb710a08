"""Every reader of uploaded bytes on mutated real files: each importer (perf.data, perf
script, perf report, folded, format detection), the ELF reader, the kallsyms, maps,
perf-map and jitdump readers, the archive reader and the source archive reader. The only allowed outcome is a result or our
own typed error: no IndexError, no MemoryError from a length read as 2^63, no hang. The
compiled loops are also run against their Python twins on the same inputs (the perf
script loop, and the fold on columns against the row-by-row one: perf-script-compiled;
the perf.data record loop: perf-data-alike), then the report and the explorer's views
on what they read (and on saved profiles: saved-profile): any difference fails. Besides bytes flipped anywhere, whole ELF and
perf.data files get absurd numbers written exactly into their size, count and offset
fields (fields.py: elf-fields, elf-tables for the unwind and line tables,
perf-data-fields, perf-data-alike, jitdump-fields). tests/fuzz/native runs the compiled loops' targets
with the C code under AddressSanitizer and UndefinedBehaviorSanitizer."""
import io
import tarfile
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from . import seeds
from .fields import elf_fields, jitdump_fields, perf_data_fields
from .mutate import (CORPUS, FIXTURES, FUZZ, SPINPOOL, check, field_edits, kallsyms_seed,
                     mutated, seed)
from .shapes import PerfData, SavedProfile
from .targets import TARGETS

FLAMEGRAPH = CORPUS / "public" / "brendangregg__FlameGraph" / "test"
BIN = FIXTURES / "perfdata" / "bin"

PERF_DATA = [seed(p) for p in (SPINPOOL / "1.1.0-busy.perf.data",
                               FIXTURES / "perfdata" / "compressed.perf.data",
                               FIXTURES / "perfdata" / "pipe.perf.data",
                               FIXTURES / "perfdata" / "two-events.perf.data",
                               FIXTURES / "perfdata" / "dlopen.perf.data")]
SCRIPT = [seed(p, 32 * 1024) for p in (
    FLAMEGRAPH / "perf-java-stacks-01.txt", SPINPOOL / "1.0.0-idle.truth-script.txt",
    SPINPOOL / "1.0.0-idle.script-raw.txt", FIXTURES / "perfdata" / "jit.script.txt",
    FIXTURES / "perfdata" / "two-events.script.txt")]
REPORT = [seed(p, 32 * 1024) for p in (SPINPOOL / "1.0.0-idle.report-raw.txt",
                                       SPINPOOL / "1.0.0-idle.report-children-raw.txt",
                                       SPINPOOL / "1.0.0-busy.truth-report.txt")]
FOLDED = [seed(FLAMEGRAPH / "results" / name, 32 * 1024)
          for name in ("perf-cycles-instructions-01-collapsed-all.txt",
                       "perf-java-stacks-01-collapsed-pid.txt")]
#: Node's jit-PID.dump of tests/fixtures/jitdump, its first 27 code loads and unwinding
#: records (record.sh)
JITDUMP = FIXTURES / "jitdump" / "jit-head.dump"
ELVES = [seed(BIN / n) for n in ("libplugin.so", "libplugin.stripped.so", "pw-dlopen.debug")]
MAPS = [seed(SPINPOOL / "1.0.0-idle.maps")]
#: whole files for the field edits (a file cut at 256 KB is damaged before any edit)
WHOLE_ELVES = (
    BIN / "libplugin.so", BIN / "libplugin.stripped.so", BIN / "pw-dlopen.debug",
    FIXTURES / "plt" / "pltcall", FIXTURES / "plt" / "pltcall.debug",
    FIXTURES / "dwarf" / "system-libs" / "libc.so.6")
QUIPPER = CORPUS / "public" / "google__perf_data_converter" / "src" / "quipper" / "testdata"
PERFPARSER = CORPUS / "public" / "KDAB__perfparser" / "tests" / "auto" / "perfdata"
#: each sample layout and record kind the reader decodes: read groups, branch stacks,
#: raw tracepoint data, user registers and stacks, zstd-compressed records, pipe-mode
#: attrs and features, AUX trace data
WHOLE_PERF_DATA = (
    SPINPOOL / "1.1.0-busy.perf.data", FIXTURES / "perfdata" / "compressed.perf.data",
    FIXTURES / "perfdata" / "pipe.perf.data", FIXTURES / "perfdata" / "two-events.perf.data",
    FIXTURES / "perfdata" / "dlopen.perf.data", FIXTURES / "perfdata" / "dwarf.perf.data",
    FIXTURES / "perfdata" / "jit.perf.data",
    CORPUS / "public" / "KDAB__hotspot" / "tests" / "integrationtests" /
    "perf.data.PerfFormatLost",
    QUIPPER / "perf.data.branch-4.14", QUIPPER / "perf.data.piped.header_features-4.16",
    QUIPPER / "perf.data.ctx_switch_namespaces-4.14", QUIPPER / "perf.data.intel_pt-4.14",
    FIXTURES / "offcpu" / "idle-pool" / "gateway-1.0-idle.perf.data",
    PERFPARSER / "fork_static_gcc" / "perf.data.zstd")


def _archives() -> list[bytes]:
    """Small zip and tar.gz bundles holding an ELF, kallsyms and maps, as users send."""
    members = {"lib/libplugin.so": ELVES[0], "kallsyms": kallsyms_seed()[:4096],
               "maps": MAPS[0][:2048]}
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    t = io.BytesIO()
    with tarfile.open(fileobj=t, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return [z.getvalue(), t.getvalue()]


def _source_archives() -> list[bytes]:
    """The C++ pool's sources as zip, tar.gz and tar.bz2 (users' source archives)."""
    names = ("libwork.cpp", "work.h")
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            zf.write(FIXTURES / "dwarf" / "cpp-pool" / name, f"cpp-pool/{name}")
    out = [z.getvalue()]
    for mode in ("w:gz", "w:bz2"):
        t = io.BytesIO()
        with tarfile.open(fileobj=t, mode=mode) as tf:
            for name in names:
                tf.add(FIXTURES / "dwarf" / "cpp-pool" / name, f"cpp-pool/{name}")
        out.append(t.getvalue())
    return out


#: target -> the real files its inputs are mutated from
SEEDS = {
    "perf-data": PERF_DATA, "perf-script": SCRIPT, "perf-script-compiled": SCRIPT,
    "perf-report": REPORT,
    "folded": FOLDED, "detect": PERF_DATA + SCRIPT + REPORT + FOLDED,
    "elf": ELVES, "kallsyms": [kallsyms_seed()], "procmaps": MAPS,
    "perfmap": [seed(FIXTURES / "perfdata" / "jit.perf-map.txt"),
                seed(FIXTURES / "realworld-holdout3" / "jvm-exceptions" / "bad.perf-21082.map",
                     32 * 1024)],
    "jitdump": [seed(JITDUMP)], "archive": _archives(),
    "source-archive": _source_archives(),
    "perf-data-alike": seeds.perf_data(), "saved-profile": seeds.saved_profiles(),
}
#: target -> the whole real files whose size, count and offset fields are edited
FIELD_SEEDS = {"elf-fields": (WHOLE_ELVES, elf_fields),
               "elf-tables": (WHOLE_ELVES[:-1], elf_fields),  # (libc's CFI: 0.1 s each)
               "perf-data-fields": (WHOLE_PERF_DATA, perf_data_fields),
               "jitdump-fields": ((JITDUMP,), jitdump_fields),
               "perf-data-alike": (WHOLE_PERF_DATA, perf_data_fields)}
assert set(SEEDS) | set(FIELD_SEEDS) == set(TARGETS)
#: the edits that know a target's format, besides the byte edits
SHAPES = {"perf-data": PerfData(), "perf-data-alike": PerfData(),
          "saved-profile": SavedProfile()}


@pytest.mark.parametrize("target", list(SEEDS))
@FUZZ
@given(data=st.data())
def test_fuzz(target, data):
    check(target, TARGETS[target],
          data.draw(mutated(SEEDS[target], SHAPES.get(target)), label="input"))


@pytest.mark.parametrize("target", list(FIELD_SEEDS))
@FUZZ
@given(data=st.data())
def test_fuzz_fields(target, data):
    seeds, fields_of = FIELD_SEEDS[target]
    check(target, TARGETS[target], data.draw(field_edits(seeds, fields_of), label="input"),
          seeds)
