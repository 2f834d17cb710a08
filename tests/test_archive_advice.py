"""What `perf archive` can and cannot carry. A library without a build-id (many Python
wheels ship theirs so; tests/fixtures/no-build-id/libnoid.so) is left out of it, so the
advice says to upload the file itself; the `probes` lists it stores beside binaries with
SDT probes are no symbol files and are skipped without a word."""
import tarfile

from analysis.importers import load
from analysis.symbols import symbolize
from analysis.symbols.inputs import collect
from conftest import FIXTURES

NOID = FIXTURES / "no-build-id"
SDT = FIXTURES / "sdt-notes"
PROBE_ID = "971b5d10738a2c725481b11e766da0a3d04b688e"  # readelf -n probe


def test_a_library_without_build_id_is_asked_for_itself():
    p = load(NOID / "noid.perf.data")
    lib = next(c for c in symbolize(p, []) if c["dso"].endswith("/libnoid.so"))
    assert lib["status"] == "missing" and lib["build_id"] is None
    assert "itself (it has no build-id, so `perf archive` cannot collect it)" in \
        lib["advice"]
    p = load(NOID / "noid.perf.data")
    lib = next(c for c in symbolize(p, [NOID / "libnoid.so"])
               if c["dso"].endswith("/libnoid.so"))
    assert lib["status"] == "resolved"
    assert "noid_work" in {f.name for f in p.functions if f.resolved}


def test_perf_archive_probes_files_are_skipped_silently(tmp_path):
    bundle = tmp_path / "perf.data.tar.bz2"
    probes = tmp_path / "probes"
    probes.write_text("%sdt_perfweb:request__start=request__start\n")
    with tarfile.open(bundle, "w:bz2") as t:
        t.add(SDT / "probe", f".build-id/{PROBE_ID[:2]}/{PROBE_ID[2:]}/elf")
        t.add(probes, f".build-id/{PROBE_ID[:2]}/{PROBE_ID[2:]}/probes")
    (tmp_path / "work").mkdir()
    got = collect([bundle], tmp_path / "work")
    assert got.notes == []
    assert [f.kind for f in got.files] == ["elf"]
    p = load(SDT / "probe.perf.data")
    cov = symbolize(p, [bundle])
    assert next(c for c in cov if c["dso"].endswith("/probe"))["status"] == "resolved"
    assert not any("probes" in n for n in p.notes)
