"""Hostile source archives made quickly for the tests: a tar.bz2 whose first member is
many GiB of zeros, before the file a debug path names. The zeros are one bz2 stream of a
compressed block of zeros, repeated (bz2 decompresses concatenated streams as one), so
nothing spends minutes compressing; the member's header claims the full size."""
import bz2
import tarfile

GiB = 1 << 30
_BLOCK = 64 << 20


def zeros_then_source(path, source: bytes, name: str = "cpp-pool/libwork.cpp",
                      zeros: int = 16 * GiB) -> None:
    """Write the archive to `path`: `zeros` bytes of zeros in `aaa/zeros.bin`, then
    `source` as `name` (20 KB for 16 GiB)."""
    assert zeros % _BLOCK == 0
    first = tarfile.TarInfo("aaa/zeros.bin")
    first.size = zeros
    second = tarfile.TarInfo(name)
    second.size = len(source)
    block = bz2.compress(bytes(_BLOCK), 9)
    with open(path, "wb") as f:
        f.write(bz2.compress(first.tobuf(tarfile.GNU_FORMAT)))  # a size in base-256
        for _ in range(zeros // _BLOCK):
            f.write(block)
        f.write(bz2.compress(second.tobuf(tarfile.GNU_FORMAT) + source +
                             bytes(-len(source) % 512) + bytes(1024)))
