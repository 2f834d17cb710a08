"""Every importer on mutated real captures: a profile or our own typed error, nothing
else (no IndexError, no MemoryError from a length read as 2^63, no endless loop)."""
from hypothesis import given

from .mutate import CORPUS, FIXTURES, FUZZ, SPINPOOL, check, mutated, seed
from .targets import TARGETS

PERF_DATA = [seed(p) for p in (SPINPOOL / "1.1.0-busy.perf.data",
                               FIXTURES / "perfdata" / "compressed.perf.data",
                               FIXTURES / "perfdata" / "pipe.perf.data",
                               FIXTURES / "perfdata" / "two-events.perf.data",
                               FIXTURES / "perfdata" / "dlopen.perf.data")]
SCRIPT = [seed(p, 32 * 1024) for p in (
    CORPUS / "public" / "brendangregg__FlameGraph" / "test" / "perf-java-stacks-01.txt",
    SPINPOOL / "1.0.0-idle.truth-script.txt", SPINPOOL / "1.0.0-idle.script-raw.txt",
    FIXTURES / "perfdata" / "jit.script.txt", FIXTURES / "perfdata" / "two-events.script.txt")]
REPORT = [seed(p, 32 * 1024) for p in (SPINPOOL / "1.0.0-idle.report-raw.txt",
                                       SPINPOOL / "1.0.0-idle.report-children-raw.txt",
                                       SPINPOOL / "1.0.0-busy.truth-report.txt")]
FOLDED = [seed(CORPUS / "public" / "brendangregg__FlameGraph" / "test" / "results" / name,
               32 * 1024) for name in ("perf-cycles-instructions-01-collapsed-all.txt",
                                       "perf-java-stacks-01-collapsed-pid.txt")]


@FUZZ
@given(mutated(PERF_DATA))
def test_perf_data(data):
    check("perf-data", TARGETS["perf-data"], data)


@FUZZ
@given(mutated(SCRIPT))
def test_perf_script(data):
    check("perf-script", TARGETS["perf-script"], data)


@FUZZ
@given(mutated(REPORT))
def test_perf_report(data):
    check("perf-report", TARGETS["perf-report"], data)


@FUZZ
@given(mutated(FOLDED))
def test_folded(data):
    check("folded", TARGETS["folded"], data)


@FUZZ
@given(mutated(PERF_DATA + SCRIPT + REPORT + FOLDED))
def test_detection(data):
    check("detect", TARGETS["detect"], data)
