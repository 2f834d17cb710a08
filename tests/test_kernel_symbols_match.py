"""Kernel symbols of another kernel must not silently give wrong names. kallsyms of any
kernel names every address (each falls after some symbol), so the test is where sampled
frames land: with the recording boot's copy (tests/fixtures/offcpu/common/kallsyms.gz,
copied during the boot the offcpu captures were recorded in) none falls past the end of
the kernel's text; with the spinpool host's kallsyms (another kernel) 8-21% land on
`_etext`, and the names they gave (`ping_bind`, `igmp_rcv` under a syscall) were wrong."""
import gzip
import shutil

import pytest

from analysis.importers import load
from analysis.symbols import symbolize
from conftest import FIXTURES, SPINPOOL

CAPTURES = ["redis-fsync-switch/bad", "cpp-server-mutex/1.1"]


@pytest.fixture(scope="module")
def kallsyms(tmp_path_factory):
    out = tmp_path_factory.mktemp("kallsyms") / "kallsyms"
    with gzip.open(FIXTURES / "offcpu" / "common" / "kallsyms.gz") as f, open(out, "wb") as o:
        shutil.copyfileobj(f, o)
    return out


def _kernel(cov):
    return next(c for c in cov if c["dso"] == "[kernel.kallsyms]")


@pytest.mark.parametrize("name", CAPTURES)
def test_the_recording_boots_kallsyms_names_the_kernel(name, kallsyms):
    p = load(FIXTURES / "offcpu" / f"{name}.perf.data")
    k = _kernel(symbolize(p, [kallsyms]))
    assert k["status"] == "resolved"
    names = {f.name for f in p.functions if f.resolved}
    assert {"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__schedule"} <= names


@pytest.mark.parametrize("name", CAPTURES)
def test_another_kernels_kallsyms_is_refused(name):
    p = load(FIXTURES / "offcpu" / f"{name}.perf.data")
    k = _kernel(symbolize(p, [SPINPOOL / "kernel-symbols.zip"]))
    assert k["status"] == "mismatch"
    assert k["reason"].startswith("kernel symbols do not match this capture")
    assert "/proc/kallsyms" in k["advice"]
    kernel = {m.id for m in p.mappings if m.kind == "kernel"}
    frames = [loc for loc in p.locations if loc.mapping_id in kernel]
    assert frames and not any(p.functions[f].resolved for loc in frames
                              for f in loc.functions)
