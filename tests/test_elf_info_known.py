"""read_info given the digest of a file's bytes (recorded on upload) reads a file once
per process: a worker symbolizes every capture of a build from the same files. What it
hands out is a copy, and a digest never seen is read from the file."""
from __future__ import annotations

import hashlib
import shutil

import pytest

from analysis.symbols.elf import ElfUnreadable, read_info
from conftest import FIXTURES

PROBE = FIXTURES / "sdt-notes" / "probe"
BUILD_ID = "971b5d10738a2c725481b11e766da0a3d04b688e"  # readelf -n probe


def test_a_known_digest_is_not_read_again(tmp_path):
    digest = hashlib.sha256(PROBE.read_bytes()).hexdigest()
    first = tmp_path / "a" / "probe"
    first.parent.mkdir()
    shutil.copyfile(PROBE, first)
    a = read_info(str(first), "probe (upload 1)", digest)
    assert a.build_id == BUILD_ID and a.sha256 == digest and a.segments
    # the same bytes under another path (the next capture's work folder): the facts,
    # with this path and name, without reading the file (here it is no ELF any more)
    second = tmp_path / "b" / "probe"
    second.parent.mkdir()
    second.write_bytes(b"not an ELF file")
    b = read_info(str(second), "probe (upload 2)", digest)
    assert (b.path, b.name, b.build_id, b.segments, b.has_symtab, b.soname) == \
        (str(second), "probe (upload 2)", BUILD_ID, a.segments, a.has_symtab, a.soname)
    # a copy: what the caller changes is its own
    b.build_id = "changed"
    b.segments.clear()
    c = read_info(str(second), None, digest)
    assert c.build_id == BUILD_ID and c.segments == a.segments and c.name == "probe"
    # without a digest, or with another, the file itself is read
    with pytest.raises(ElfUnreadable):
        read_info(str(second))
    with pytest.raises(ElfUnreadable):
        read_info(str(second), "probe", "0" * 64)
