"""Finding a debug-info path in an uploaded source archive (analysis.sources) and reading
the archive once, within a budget (analysis.source_archive): the longest matching tail
wins, names that climb out or are links are never kept, a member is kept only up to its
bound, and every decompressed byte counts, also those before the member wanted (issue 33:
a 21 KB tar.bz2 whose first member was 16 GiB of zeros held a web worker for two minutes
on each request for its second member)."""
import gzip
import io
import lzma
import os
import random
import tarfile
import time
import zipfile

import pytest

from analysis.source_archive import SourceArchiveRefused, text_members
from analysis.sources import MAX_SOURCE_BYTES, best_member, rows_around
from conftest import FIXTURES
from source_bombs import zeros_then_source

POOL = FIXTURES / "dwarf" / "cpp-pool"
DEBUG_PATH = "/work/main/tests/fixtures/dwarf/cpp-pool/libwork.cpp"
MiB = 1 << 20


def _texts(path) -> dict:
    return {m.name: m.text for m in text_members(str(path), os.path.basename(path))}


def _refusal(path, **kw) -> str:
    with pytest.raises(SourceArchiveRefused) as e:
        list(text_members(str(path), os.path.basename(path), **kw))
    return str(e.value)


def test_the_longest_tail_of_the_debug_path_wins():
    names = ["src/libwork.cpp", "cpp-pool/libwork.cpp", "other/cpp-pool/x/libwork.cpp",
             "../cpp-pool/libwork.cpp", "libwork.cpp.orig"]
    assert best_member(names, DEBUG_PATH) == "cpp-pool/libwork.cpp"
    assert best_member(["libwork.cpp"], DEBUG_PATH) == "libwork.cpp"
    assert best_member(["pool.cpp"], DEBUG_PATH) is None


def test_zip_and_tar_give_the_same_text(tmp_path):
    z = tmp_path / "src.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
        for name in ("libwork.cpp", "pool.cpp", "work.h"):
            f.write(POOL / name, f"cpp-pool/{name}")
    t = tmp_path / "src.tar.xz"
    with tarfile.open(t, "w:xz") as f:
        for name in ("libwork.cpp", "pool.cpp", "work.h"):
            f.add(POOL / name, f"cpp-pool/{name}")
    want = {f"cpp-pool/{n}": (POOL / n).read_bytes()
            for n in ("libwork.cpp", "pool.cpp", "work.h")}
    assert _texts(z) == _texts(t) == want
    text = want["cpp-pool/libwork.cpp"]
    rows = rows_around(text, [17, 19])
    assert [r.line for r in rows] == list(range(11, 26))  # 6 lines of context each side
    assert rows[6].text == text.decode().splitlines()[16]


def test_links_binaries_and_climbing_names_are_not_kept(tmp_path):
    t = tmp_path / "evil.tar.gz"
    with tarfile.open(t, "w:gz") as f:
        f.add(POOL / "libwork.cpp", "cpp-pool/libwork.cpp")
        link = tarfile.TarInfo("cpp-pool/other/libwork.cpp")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        f.addfile(link)
        f.add(POOL / "pool.cpp", "../../libwork.cpp")
        f.add(POOL / "libwork.so", "cpp-pool/libwork.so")  # ELF: NUL bytes
    with tarfile.open(tmp_path / "names.tar", "w", format=tarfile.PAX_FORMAT,
                      encoding="utf-8", errors="surrogateescape") as f:
        f.add(POOL / "work.h", "cpp-pool/\udcff.h")  # bytes that are no UTF-8
        f.add(POOL / "work.h", "cpp-pool/\u00e9t\u00e9.h")  # UTF-8
    assert list(_texts(t)) == ["cpp-pool/libwork.cpp"]
    assert list(_texts(tmp_path / "names.tar")) == ["cpp-pool/\u00e9t\u00e9.h"]
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.write(POOL / "libwork.cpp", "cpp-pool/libwork.cpp")
        info = zipfile.ZipInfo("cpp-pool/link.cpp")
        info.external_attr = 0o120777 << 16  # a symlink
        f.writestr(info, "/etc/passwd")
        f.write(POOL / "libwork.so", "cpp-pool/libwork.so")
    assert list(_texts(z)) == ["cpp-pool/libwork.cpp"]


def test_a_long_member_is_kept_only_to_its_bound(tmp_path):
    rng = random.Random(33)
    text = "".join(f"int v{i} = {rng.randrange(10**9)};\n" for i in range(300_000)).encode()
    assert len(text) > MAX_SOURCE_BYTES
    for path in (tmp_path / "long.zip", tmp_path / "long.tar.gz"):
        if path.suffix == ".zip":
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as f:
                f.writestr("src/long.cpp", text)
        else:
            with tarfile.open(path, "w:gz") as f:
                info = tarfile.TarInfo("src/long.cpp")
                info.size = len(text)
                f.addfile(info, io.BytesIO(text))
        assert _texts(path) == {"src/long.cpp": text[:MAX_SOURCE_BYTES]}


def test_what_is_no_archive_is_refused_in_a_sentence(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    assert _refusal(junk) == ("Source archive junk.tar.gz refused: it is damaged or not a "
                              "tar or zip archive (ReadError).")


def test_zeros_before_the_source_file_are_refused_within_the_budget(tmp_path):
    """The hostile archive of the issue: a 20 KB tar.bz2, 16 GiB of zeros in its first
    member, the source file second. Read to the file, it took 4 s per GiB (over a minute);
    now the expansion budget (200x the archive's size) stops it within it."""
    bomb = tmp_path / "pool-src.tar.bz2"
    zeros_then_source(bomb, (POOL / "libwork.cpp").read_bytes())
    assert bomb.stat().st_size < 24_000
    cpu = time.process_time()
    message = _refusal(bomb)
    assert message == (f"Source archive pool-src.tar.bz2 refused: it expands more than 200x "
                       f"its size of {bomb.stat().st_size:,} bytes (an archive bomb?).")
    assert time.process_time() - cpu < 5  # 4 MB of zeros decompressed, not 16 GiB


def test_one_member_over_its_ratio_is_refused_before_the_next(tmp_path):
    """The archive as a whole in its ratio (4 MiB of random bytes first), a member of
    64 MiB of zeros over its own: refused there, before the source file after it."""
    path = tmp_path / "mixed.tar.gz"
    with tarfile.open(path, "w:gz") as f:
        for name, data in (("noise.bin", os.urandom(4 * MiB)), ("zeros.txt", bytes(64 * MiB)),
                           ("src/libwork.cpp", b"int f();\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            f.addfile(info, io.BytesIO(data))
    assert 68 * MiB < 200 * path.stat().st_size
    assert _refusal(path) == ("Source archive mixed.tar.gz refused: its member 'zeros.txt' "
                              "expands more than 200x its compressed size (an archive bomb?).")


def test_reading_is_bounded_in_cpu_time(tmp_path):
    """A budget of 1 ms is spent by the first MiB of a tar.xz of text."""
    rng = random.Random(1)
    text = "".join(f"x{rng.randrange(10**12)}\n" for _ in range(400_000)).encode()
    path = tmp_path / "slow.tar.xz"
    with tarfile.open(path, "w:xz", preset=0) as f:  # (xz's default took 30 s)
        info = tarfile.TarInfo("src/slow.cpp")
        info.size = len(text)
        f.addfile(info, io.BytesIO(text))
    assert _refusal(path, cpu_s=0.001) == ("Source archive slow.tar.xz refused: reading it "
                                           "took more than 0.001 s of CPU time.")
    assert _texts(path) == {"src/slow.cpp": text[:MAX_SOURCE_BYTES]}


def test_a_header_claiming_gigabytes_is_refused_before_it_is_read(tmp_path):
    """tarfile reads a pax header into memory whole, at the size its block claims."""
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, 2 << 30
    path = tmp_path / "header.tar.gz"
    path.write_bytes(gzip.compress(pax.tobuf(tarfile.USTAR_FORMAT) + bytes(1 << 20)))
    assert _refusal(path) == ("Source archive header.tar.gz refused: a member's header "
                              "claims 2,147,483,648 bytes.")


@pytest.mark.parametrize("pack", ["tar", "xz", "zst"])
def test_every_compression_gives_the_text(tmp_path, pack):
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as f:
        f.add(POOL / "libwork.cpp", "cpp-pool/libwork.cpp")
    data = plain.getvalue()
    if pack == "xz":
        data = lzma.compress(data)
    elif pack == "zst":
        import zstandard
        data = zstandard.ZstdCompressor().compress(data)
    path = tmp_path / f"src.{pack}"
    path.write_bytes(data)
    assert _texts(path) == {"cpp-pool/libwork.cpp": (POOL / "libwork.cpp").read_bytes()}
