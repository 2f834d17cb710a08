"""Every reader of uploaded bytes on mutated real files: each importer (perf.data, perf
script, perf report, folded, format detection), the ELF reader, the kallsyms, maps and
perf-map readers, and the archive reader. The only allowed outcome is a result or our
own typed error: no IndexError, no MemoryError from a length read as 2^63, no hang. The
compiled perf script loop and fold are also run against the Python ones on the same
inputs (perf-script-compiled): any difference fails."""
import io
import tarfile
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .mutate import CORPUS, FIXTURES, FUZZ, SPINPOOL, check, kallsyms_seed, mutated, seed
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
ELVES = [seed(BIN / n) for n in ("libplugin.so", "libplugin.stripped.so", "pw-dlopen.debug")]
MAPS = [seed(SPINPOOL / "1.0.0-idle.maps")]


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


#: target -> the real files its inputs are mutated from
SEEDS = {
    "perf-data": PERF_DATA, "perf-script": SCRIPT, "perf-script-compiled": SCRIPT,
    "perf-report": REPORT,
    "folded": FOLDED, "detect": PERF_DATA + SCRIPT + REPORT + FOLDED,
    "elf": ELVES, "kallsyms": [kallsyms_seed()], "procmaps": MAPS,
    "perfmap": [seed(FIXTURES / "perfdata" / "jit.perf-map.txt")], "archive": _archives(),
}
assert set(SEEDS) == set(TARGETS)


@pytest.mark.parametrize("target", list(SEEDS))
@FUZZ
@given(data=st.data())
def test_fuzz(target, data):
    check(target, TARGETS[target], data.draw(mutated(SEEDS[target]), label="input"))
