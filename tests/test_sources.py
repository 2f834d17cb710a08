"""Finding a debug-info path in an uploaded source archive (analysis.sources): the
longest matching tail wins, names that climb out or are links are never read, and a
member is read only up to its bound."""
import tarfile
import zipfile

from analysis import sources
from analysis.sources import best_member, read_member, rows_around
from conftest import FIXTURES

POOL = FIXTURES / "dwarf" / "cpp-pool"
DEBUG_PATH = "/work/main/tests/fixtures/dwarf/cpp-pool/libwork.cpp"


def test_the_longest_tail_of_the_debug_path_wins():
    names = ["src/libwork.cpp", "cpp-pool/libwork.cpp", "other/cpp-pool/x/libwork.cpp",
             "../cpp-pool/libwork.cpp", "libwork.cpp.orig"]
    assert best_member(names, DEBUG_PATH) == "cpp-pool/libwork.cpp"
    assert best_member(["libwork.cpp"], DEBUG_PATH) == "libwork.cpp"
    assert best_member(["pool.cpp"], DEBUG_PATH) is None


def test_zip_and_tar_give_the_same_text(tmp_path):
    z = tmp_path / "src.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.write(POOL / "libwork.cpp", "cpp-pool/libwork.cpp")
    t = tmp_path / "src.tar.xz"
    with tarfile.open(t, "w:xz") as f:
        f.add(POOL / "libwork.cpp", "cpp-pool/libwork.cpp")
    want = (POOL / "libwork.cpp").read_bytes()
    assert read_member(str(z), DEBUG_PATH) == ("cpp-pool/libwork.cpp", want)
    assert read_member(str(t), DEBUG_PATH) == ("cpp-pool/libwork.cpp", want)
    rows = rows_around(want, [17, 19])
    assert [r.line for r in rows] == list(range(11, 26))  # 6 lines of context each side
    assert rows[6].text == want.decode().splitlines()[16]


def test_a_huge_member_is_read_only_to_its_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_SOURCE_BYTES", 1000)
    z = tmp_path / "bomb.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
        f.writestr("cpp-pool/libwork.cpp", b"x" * 10_000_000)
    name, text = read_member(str(z), DEBUG_PATH)
    assert len(text) == 1000
    assert read_member(str(tmp_path / "missing.zip"), DEBUG_PATH) is None
    (tmp_path / "junk.tar.gz").write_bytes(b"not an archive")
    assert read_member(str(tmp_path / "junk.tar.gz"), DEBUG_PATH) is None
