"""A symbol file can cost a worker only so much (issue 33): the PLT naming loop walked a
.plt whose sh_size was edited to 2^62 until the analysis limit (20 minutes), holding the
worker. Now a section whose header passes the end of the file is not read, with a note
naming the field and its byte, and any symbol file still too costly is skipped with a
note (analysis/symbols/budget.py) while the capture is named from the rest.

The capture: spinpool 1.1.0-busy, named from its symbol bundle (the debug files) and the
stripped libqualla.so that ran (from its `perf archive`), whose PLT names the stubs."""
import io
import signal
import struct
from collections import OrderedDict
import tarfile
from contextlib import contextmanager

import pytest
from elftools.elf.elffile import ELFFile

from analysis.importers import load
from analysis.symbols import budget, symbolize
from conftest import FIXTURES, SPINPOOL

ARCHIVE = SPINPOOL / "1.1.0-busy.perf.data.tar.bz2"
BUNDLE = SPINPOOL / "symbols-1.1.0.zip"
POOL, LIBS = FIXTURES / "dwarf" / "cpp-pool", FIXTURES / "dwarf" / "system-libs"


def libqualla(folder, sh_size=None):
    """The libqualla.so that ran, from the capture's perf archive; `sh_size`: its .plt's
    header edited to say so (8 bytes of the file)."""
    with tarfile.open(ARCHIVE) as t:
        member = next(m for m in t.getmembers()
                      if m.name.endswith("/elf") and "libqualla.so" in m.name)
        data = bytearray(t.extractfile(member).read())
    at = None
    if sh_size is not None:
        elf = ELFFile(io.BytesIO(bytes(data)))
        at = elf["e_shoff"] + elf.get_section_index(".plt") * elf["e_shentsize"] + 0x20
        struct.pack_into("<Q", data, at, sh_size)
    folder.mkdir()
    path = folder / "libqualla.so"
    path.write_bytes(bytes(data))
    return path, at, len(data)


@contextmanager
def within(seconds):
    """A hang fails the test instead of holding it (the bound is generous)."""
    def expired(signum, frame):
        raise AssertionError(f"not done within {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def refusals(monkeypatch):
    """What the budget tests refuse is forgotten afterwards (the memo is per process,
    and other tests of this process read the same files)."""
    monkeypatch.setattr(budget, "_REFUSED", OrderedDict())


def names(p) -> list[str]:
    return [p.functions[loc.functions[-1]].name for loc in p.locations]


def test_a_plt_claiming_2_62_bytes_is_not_read_and_the_rest_is_named(tmp_path):
    good, _, _ = libqualla(tmp_path / "good")
    bad, at, size = libqualla(tmp_path / "bad", 1 << 62)
    truth = load(SPINPOOL / "1.1.0-busy.perf.data")
    symbolize(truth, [BUNDLE, good])
    p = load(SPINPOOL / "1.1.0-busy.perf.data")
    with within(60):  # it took until the analysis limit
        symbolize(p, [BUNDLE, bad])
    # every frame has exactly the name the unedited file gives it (none of the
    # capture's samples is in the PLT, whose stubs alone the edit leaves unnamed)
    want, got = names(truth), names(p)
    assert got == want and "qualla::ThreadPool::loop" in got
    assert not any(n.endswith("@plt") for n in want)
    assert f"libqualla.so: section 10 (.plt) says it holds {1 << 62:,} bytes at byte " \
        f"8,224 (sh_size at byte {at:,}, sh_offset at byte {at - 8:,}), past the end of " \
        f"the {size:,}-byte file: its PLT stubs are not named" in p.notes


def test_a_symbol_file_over_its_budget_is_skipped_with_a_note(tmp_path, monkeypatch,
                                                             refusals):
    """The budget, whatever makes a file costly. The cpp-pool capture (frame pointers)
    with its files: with a limit of 8,000 entries libc's debug file (its .symtab holds
    10,012 symbols) is over it, so libc's frames stay unnamed, with a note and libc's
    coverage saying why, while the program and libwork.so are named as ever. (The debug
    file gets a byte more, so that no index cached from other tests is used.)"""
    monkeypatch.setattr(budget, "MAX_ENTRIES", 8000)
    debug = tmp_path / "libc.so.6.symtab.debug"
    debug.write_bytes((LIBS / "libc.so.6.symtab.debug").read_bytes() + b"\0")
    p = load(POOL / "fp.perf.data")
    symbolize(p, [POOL / "pool", POOL / "pool.debug", POOL / "libwork.so",
                  POOL / "libwork.so.debug", LIBS / "libc.so.6", debug])
    why = ("libc.so.6.symtab.debug: skipped: it asks for more than 8,000 entries (symbols, "
           "relocations, notes or name bytes) to be read (the limit for one symbol file); "
           "the capture was analysed without it")
    assert why in p.notes
    dso = {c["dso"].rsplit("/", 1)[-1]: c for c in p.coverage}
    assert dso["libc.so.6"]["status"] == "unreadable"
    assert dso["libc.so.6"]["reason"] == why
    assert dso["libwork.so"]["status"] == dso["pool"]["status"] == "resolved"


def test_a_file_over_its_budget_is_refused_at_once_afterwards(tmp_path, monkeypatch,
                                                             refusals):
    """A refusal is remembered by the SHA-256 of the file's bytes (in this process): the
    same bytes are not read again, whatever budget is set meanwhile."""
    from analysis.symbols.elf import function_symbols
    from analysis.symbols.index_cache import file_sha256

    good, _, _ = libqualla(tmp_path / "good")
    key = file_sha256(good)
    monkeypatch.setattr(budget, "MAX_ENTRIES", 10)
    with pytest.raises(budget.OverBudget, match="more than 10 entries"):
        function_symbols(str(good), "libqualla.so", key)
    monkeypatch.setattr(budget, "MAX_ENTRIES", 8 << 20)
    with pytest.raises(budget.OverBudget, match="more than 10 entries"):
        function_symbols(str(good), "libqualla.so", key)
    index, table = function_symbols(str(good), "libqualla.so")  # unknown bytes: read
    assert table == ".dynsym" and len(index)


def test_cpu_time_is_a_limit_too(tmp_path, monkeypatch, refusals):
    monkeypatch.setattr(budget, "CPU_SECONDS", 0.0)
    good, _, _ = libqualla(tmp_path / "good")
    p = load(SPINPOOL / "1.1.0-busy.perf.data")
    symbolize(p, [BUNDLE, good])
    assert any(n.endswith(": skipped: reading it took more than 0 s of CPU (the limit for "
                          "one symbol file); the capture was analysed without it")
               for n in p.notes), p.notes
