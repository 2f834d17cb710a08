"""The build-id comes only from the GNU build-id note (owner "GNU", type 3). SystemTap
probe notes (.note.stapsdt) have type 3 too: Debian's postgres and python3.11 carry them,
and reading their probe descriptor as the build-id made every file of theirs a build-id
mismatch, so none of their functions got names. tests/fixtures/sdt-notes/probe carries
both notes (Makefile, probe.c) and was recorded with perf (probe.perf.data)."""
from analysis.importers import load
from analysis.symbols import symbolize
from analysis.symbols.elf import read_info
from conftest import FIXTURES

HERE = FIXTURES / "sdt-notes"
#: `readelf -n probe`: Build ID
BUILD_ID = "971b5d10738a2c725481b11e766da0a3d04b688e"


def test_the_build_id_is_the_gnu_notes_not_the_probes():
    assert read_info(str(HERE / "probe")).build_id == BUILD_ID


def test_a_binary_with_probe_notes_names_its_functions():
    """probe.truth-report.txt: perf report gives 99.56% to spin_in_probe."""
    p = load(HERE / "probe.perf.data")
    cov = {c["dso"]: c for c in symbolize(p, [HERE / "probe"])}
    mine = next(c for d, c in cov.items() if d.endswith("/probe"))
    assert mine["status"] == "resolved", mine
    leaf = {}
    for row in range(len(p)):
        f = p.functions[p.locations[p.stacks[p.s_stack[row]][0]].functions[0]]
        leaf[f.name] = leaf.get(f.name, 0) + 1
    assert round(100 * leaf["spin_in_probe"] / len(p), 2) == 99.56
