"""GCC's outlined OpenMP regions (`blas::scale(...) [clone ._omp_fn.0]`) read as perf
prints them: the function's short name, the clone suffix dropped (and a template's return
type), the full signature kept for hover. A real capture by PID with --call-graph dwarf
(tests/fixtures/openmp/README.md); ground truth is perf report's names on that host."""
import re
from collections import Counter

import pytest

from analysis.aggregate.functions import top_functions
from analysis.aggregate.selection import stack_weights
from analysis.importers import load
from analysis.symbols import symbolize
from analysis.symbols.demangle import demangle
from conftest import FIXTURES

HERE = FIXTURES / "openmp"
_ROW = re.compile(r"^\s+([\d.]+)%\s+(\S+)\s+(\S+)\s+\[[.k]\] (.+?)\s*$")


@pytest.fixture(scope="module")
def omp():
    p = load(HERE / "omp.perf.data")
    symbolize(p, [HERE / "omp", HERE / "libgomp.so.1"])
    return p


def test_each_clone_has_perfs_name_and_share(omp):
    perf: Counter = Counter()  # perf report keeps same-named symbols apart: add them up
    for line in (HERE / "omp.perf.data.report.txt").read_text().splitlines():
        m = _ROW.match(line)
        if m and m.group(3) == "omp":
            perf[m.group(4)] += round(float(m.group(1)) * 350 / 100)
    assert perf == {"blas::dot": 43, "blas::norm2<double>": 37, "blas::norm2<float>": 34,
                    "blas::scale": 32, "blas::axpy_normalize": 27}
    weights = stack_weights(omp)
    ours = {c.name: c.self
            for c in top_functions(omp, weights)
            if omp.mappings[omp.functions[c.function_id].mapping_id].basename == "omp"}
    assert {n: ours[n] for n in perf} == dict(perf)


def test_the_full_signature_keeps_the_clone(omp):
    by = {f.name: f for f in omp.functions if f.resolved}
    assert demangle(by["blas::norm2<double>"].system_name) == (
        "double blas::norm2<double>(std::vector<double, std::allocator<double> > const&) "
        "[clone ._omp_fn.0]")
    assert not any("_omp_fn" in n or "(" in n for n in by if n.startswith("blas::"))
