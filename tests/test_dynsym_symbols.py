"""Stripped distribution binaries (no .symtab, only .dynsym) uploaded as symbol files:
their exported functions are named as perf names them, and what stays unnamed is said
as what it is: a stripped file (its debug file would name the rest) or a file with no
symbols at all, never a request for the file that was given.

tests/fixtures/dynsym: Debian's libbz2 (stripped) under bzip2, and a static program with
no symbols at all, each recorded with perf script's and perf report's text as truth. The
holdout captures of PHP, Ruby, BEAM and PostgreSQL's LLVM JIT ran this host's Debian
binaries, read here where they are installed (never copied: 4 to 110 MB).
"""
from __future__ import annotations

import collections
import gzip
import re
from pathlib import Path

import pytest

from analysis.aggregate.selection import stack_weights
from analysis.diagnosis import diagnose
from analysis.importers import load
from analysis.symbols.elf import read_info
from analysis.symbols.symbolize import symbolize

from conftest import FIXTURES

HERE = FIXTURES / "dynsym"
HOLDOUT = FIXTURES / "realworld-holdout3"
_FRAME = re.compile(r"^\s+([0-9a-f]+) (.*?)(?:\+0x[0-9a-f]+)? \(([^)]*)\)$")


def _truth(script: Path, dso: str):
    """perf script's name of each frame of `dso` by (address perf printed, is the leaf),
    and its self samples per name."""
    names, leaves, leaf = {}, collections.Counter(), True
    with gzip.open(script, "rt", errors="replace") as f:
        for line in f:
            if not line.strip() or not line[0].isspace():
                leaf = True
                continue
            m = _FRAME.match(line.rstrip("\n"))
            if m and m.group(3) == dso:
                names[(int(m.group(1), 16), leaf)] = m.group(2)
                if leaf:
                    leaves[m.group(2)] += 1
            leaf = False
    return names, leaves


def _ours(p, dso: str, dwarf: bool):
    """Our names of the frames of `dso`, keyed as perf script prints them: the file
    offset, minus one for a caller of a DWARF-unwound stack (libdw's address)."""
    names = {}
    for loc in p.locations:
        if p.mappings[loc.mapping_id].path == dso and loc.dso_offset is not None:
            f = p.functions[loc.functions[-1]]
            key = (loc.dso_offset - (loc.is_return and dwarf), not loc.is_return)
            names[key] = f.name if f.resolved else "[unknown]"
    leaves = collections.Counter()
    for sid, n in stack_weights(p).items():
        loc = p.locations[p.stacks[sid][0]]
        if p.mappings[loc.mapping_id].path == dso:
            f = p.functions[loc.functions[-1]]
            leaves[f.name if f.resolved else "[unknown]"] += n
    return names, leaves


def _coverage(cov, dso):
    (c,) = [c for c in cov if c["dso"] == dso]
    return c


def _missing_symbols(p):
    return next(f for f in diagnose(p) if f.rule == "missing-symbols")


def test_a_stripped_library_names_its_exported_functions_as_perf_does():
    lib = "/usr/lib/x86_64-linux-gnu/libbz2.so.1.0.4"
    p = load(HERE / "bzip2.perf.data")
    dwarf = p.user_stacks is not None
    cov = symbolize(p, [HERE / "libbz2.so.1.0.4"])
    truth, truth_leaves = _truth(HERE / "bzip2.script.txt.gz", lib)
    names, leaves = _ours(p, lib, dwarf)
    assert len(truth) > 100 and {k: names.get(k) for k in truth} == truth
    assert leaves == truth_leaves and leaves["BZ2_compressBlock"] > 5
    c = _coverage(cov, lib)
    assert (c["status"], c["table"], c["source"]) == ("stripped", ".dynsym",
                                                       "libbz2.so.1.0.4")
    assert c["reason"] == ("libbz2.so.1.0.4 is stripped: only its exported functions "
                           "(.dynsym) have names, its other functions stay unnamed")
    assert "/usr/lib/debug/.build-id/46/2687d0e5080f8f8f3198430fbe3ca849aec026.debug" in \
        c["advice"] and f"upload {lib}" not in c["advice"]
    f = _missing_symbols(p)  # the static functions are most of the time: said as such
    assert f"{lib} (" in f.summary and "stripped: only its exported functions" in f.summary
    assert "the file given names only its exported functions" in f.fix
    assert "perf archive" not in f.fix  # (it would copy the same stripped file)


def test_without_the_file_the_advice_asks_for_it():
    p = load(HERE / "bzip2.perf.data")
    f = _missing_symbols(p)
    assert "/usr/lib/x86_64-linux-gnu/libbz2.so.1.0.4 with build-id " \
           "462687d0e5080f8f8f3198430fbe3ca849aec026 or its debug file" in f.fix
    assert "perf archive" in f.fix and "stripped" not in f.summary


def test_a_binary_with_no_symbols_at_all_is_said_so():
    p = load(HERE / "spin.perf.data")
    cov = symbolize(p, [HERE / "spin"])
    dso = next(c["dso"] for c in cov if c["dso"].endswith("/spin"))
    c = _coverage(cov, dso)
    assert (c["status"], c["table"], c["resolved"]) == ("stripped", "none", 0)
    assert c["reason"].startswith("spin has no symbols at all (neither .symtab nor .dynsym)")
    with gzip.open(HERE / "spin.script.txt.gz", "rt") as text:  # (no call chains)
        perf_names = {line.split()[-2] for line in text if line.endswith(f"({dso})\n")}
    assert perf_names == {"[unknown]"}  # perf names none either
    assert not any(p.functions[f].resolved for loc in p.locations for f in loc.functions
                   if p.mappings[loc.mapping_id].path == dso)
    f = _missing_symbols(p)
    assert "no symbols at all" in f.summary and "the file given has no symbols at all" in f.fix


#: holdout captures of this host's Debian binaries: (case, side, binary as it ran)
DISTRIBUTION = [
    ("erlang-large-message", "bad", "/usr/lib/erlang/erts-13.1.5/bin/beam.smp"),
    ("php-array-copy", "bad", "/usr/bin/php8.2"),
    ("ruby-string-concat", "bad", "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2"),
    ("postgres-jit-oltp", "bad", "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1")]


@pytest.mark.parametrize("case,side,binary", DISTRIBUTION,
                         ids=[b.rsplit("/", 1)[-1] for _, _, b in DISTRIBUTION])
def test_distribution_binaries_name_frames_as_perf_did_on_the_recording_host(case, side,
                                                                             binary):
    """Every frame of the binary that both perf script (on the recording host) and we
    show gets perf's name: exported functions by name, the rest `[unknown]`; a caller
    of a frame-pointer chain named at its return address as perf does (LLVM's calls
    that end a function name the next one)."""
    p = load(HOLDOUT / case / f"{side}.perf.data")
    want = next(m.build_id for m in p.mappings if m.path == binary)
    if not Path(binary).is_file() or read_info(binary).build_id != want:
        pytest.skip(f"{binary} of build-id {want} is not installed on this host")
    dwarf = p.user_stacks is not None
    cov = symbolize(p, [binary])
    truth, _ = _truth(HOLDOUT / case / f"{side}.script.txt.gz", binary)
    names, _ = _ours(p, binary, dwarf)
    both = [k for k in truth if k in names]
    assert len(both) > 30 and {k: names[k] for k in both} == {k: truth[k] for k in both}
    assert sum(v != "[unknown]" for v in truth.values()) > 20  # .dynsym named them
    c = _coverage(cov, binary)
    assert (c["status"], c["table"]) == ("stripped", ".dynsym")
