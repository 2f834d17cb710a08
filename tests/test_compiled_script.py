"""The compiled block loop of the perf script importer (analysis/importers/_script.c) makes
the profile the Python reader makes: on every perf script text of the corpus and the
fixtures, every table, index, sample column (bit for bit) and note is equal with the loop
on and off, also when the text arrives in chunks of a few bytes, so that blocks are cut
at every place; on hostile texts too (long lines, NULs, bad UTF-8, Unicode digits and
spaces, numbers past 64 bits, CR LF, stacks past the frame limit), where the loop leaves
what it does not read to the Python reader block by block and both work on the same
tables. The fold on the columns gives the row-by-row Python fold's lines and
weights on every capture, in both conventions and with each option."""
from __future__ import annotations

import io
import os
import random
import sys
from pathlib import Path

import pytest

from analysis.errors import AnalysisError
from analysis.importers import detect, perf_script
from conftest import CORPUS, FIXTURES, SPINPOOL
from profile_snapshot import differences, snapshot


def _script_files() -> list[Path]:
    out = []
    for root in (CORPUS, FIXTURES):
        for d, _, names in os.walk(root):
            for n in names:
                path = Path(d) / n
                try:
                    if detect(path) == perf_script.NAME:
                        out.append(path)
                except (AnalysisError, OSError):
                    pass
    return sorted(out)


SCRIPTS = _script_files()


def _ids(paths):
    return [str(p.relative_to(p.parents[2])) for p in paths]


def _parse(source, compiled: bool):
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    return perf_script.parse(source, compiled=compiled)


def _same(source, **why) -> None:
    on, off = snapshot(_parse(source, True)), snapshot(_parse(source, False))
    assert differences(on, off) == [], why


@pytest.fixture
def loops(monkeypatch):
    """The compiled loops the imports make, to read how many blocks each took."""
    made = []
    real = perf_script._compiled_loop

    def keep(parser):
        made.append(real(parser))
        return made[-1]
    monkeypatch.setattr(perf_script, "_compiled_loop", keep)
    return made


@pytest.mark.corpus
def test_the_corpus_holds_what_the_test_is_about(loops):
    """Captures where the loop reads every sample, where it and the Python reader take
    turns (sched_switch lines with their fields are the Python reader's), and where the
    Python reader reads them all (sched tracepoints only)."""
    assert len(SCRIPTS) >= 150
    cases = {SPINPOOL / "1.0.0-busy.truth-script.txt": (973, 0),
             FIXTURES / "offcpu/cpp-server-mutex/1.0.perf.data.script.txt.gz": (287, 6865),
             FIXTURES / "offcpu/sched-record/1.1-sched.perf.data.script.txt.gz": (0, 20677)}
    for path, (taken, left) in cases.items():
        assert path in SCRIPTS
        p = _parse(path, True)
        assert (loops[-1].taken, len(p) - loops[-1].taken) == (taken, left), path


@pytest.mark.corpus
@pytest.mark.parametrize("path", SCRIPTS, ids=_ids(SCRIPTS))
def test_loop_reads_as_the_python_reader(path):
    _same(path, path=path)


SMALL = [p for p in SCRIPTS if p.stat().st_size < 40_000 and p.suffix != ".gz"][:40]


@pytest.mark.corpus
@pytest.mark.parametrize("chunk", [1, 3, 64, 4099])
def test_blocks_cut_at_every_place(chunk, monkeypatch):
    """Chunks of 1 to 4,099 bytes: each block is seen cut at every byte, and at every
    place the loop stops the Python reader takes over."""
    assert len(SMALL) == 40
    whole = {p: snapshot(_parse(p, False)) for p in SMALL}
    monkeypatch.setattr(perf_script, "_CHUNK", chunk)
    for p in SMALL:
        assert differences(snapshot(_parse(p, True)), whole[p]) == [], (p, chunk)


# ---- hostile and unusual texts ----------------------------------------------------------

HEADER = b"# ========\n# captured on    : Thu Jan  1 00:00:00 2026\n# hostname : box\n" \
         b"# ========\n#\n"


def _pick(rng: random.Random, usual: list[bytes], odd: list[bytes]) -> bytes:
    """Mostly what perf prints, sometimes what it should not."""
    return rng.choice(odd if rng.random() < 0.01 else usual)


def _event(rng: random.Random) -> bytes:
    comm = _pick(rng, [b"python", b"Web Content", b"kworker/0:1", b"123", b"a  b", b" lead",
                       b"gzip", b"java", b"c" * 3000, b"#hash", b"x:y"],
                 [b"x\xc3\xa9", b"bad\xff", b"nul\x00", b"\xd9\xa1", b"sp\xc2\xa0ace",
                  b"fs\x1c", b"PERF_RECORD_X"])
    ids = _pick(rng, [b"5411", b"5411/5412", b"-1/-1", b"0", b"999999999/1"],
                [b"1234567890", b"12/\xd9\xa1", b"1/", b"-/1"])
    cpu = _pick(rng, [b"[000] ", b"[1] ", b"", b"[123456] "], [b"[1234567] ", b"[00x] "])
    time = _pick(rng, [b"113.544605", b"0.000001", b"7.25", b"1.0", b"123456789.123456"],
                 [b"12345678901234567.5", b"1." + b"9" * 30, b"1", b"1.5e3",
                  b"00000000000000000000001.5", b"1.000000000000000000000001"])
    period = _pick(rng, [b"250062 ", b"", b"1 ", b"123456789012345678 ", b"0 "],
                   [b"1234567890123456789 ", b"12x "])
    event = _pick(rng, [b"cpu-clock:ppp:", b"cycles:", b"ev:", b"a:b:", b"instructions:u:"],
                  [b"::", b"sched:sched_switch:", b":x:"])
    tail = _pick(rng, [b" ", b"", b"\t", b"   "],
                 [b" extra", b" prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> "
                  b"next_comm=b next_pid=2 next_prio=1", b"\xc2\xa0"])
    return b"%s %s %s%s: %s%s%s" % (comm, ids, cpu, time, period, event, tail)


def _frame(rng: random.Random) -> bytes:
    ip = _pick(rng, [b"2bb4dc", b"ffffffff817422ad", b"1", b"0", b"00000000004011a0",
                     b"ABCDEF", b"7f12345678", b"%x" % rng.randrange(1 << 48)],
               [b"1ffffffffffffffff", b"0x10", b"g00d"])
    sym = _pick(rng, [b"gc_collect_main+0x42c", b"[unknown]", b"", b"a->b->c+0x1",
                      b"a-->b", b"->", b"foo(int)+0x10", b"operator->()+0x2", b"x+0x+0x1",
                      b"g+0X1", b"(paren", b"f%d+0x%x" % (rng.randrange(50), rng.randrange(99)),
                      b"s" * 5000, b"std::vector<int>::at(unsigned long) const+0x9"],
                [b"f+0x" + b"f" * 20, b"caf\xc3\xa9+0x1", b"bad\xfe+0x1", b"n\x00ul"])
    dso = _pick(rng, [b" (/usr/lib/libc.so.6)", b" ([kernel.kallsyms])", b" ([unknown])",
                      b" (/tmp/x.so (deleted))", b" (inlined)", b"", b" ()", b" (/usr/bin/gzip)",
                      b" ([vdso])", b" (/tmp/perf-12.map)", b" (/lib/a.so", b" (a) (b)"],
                [b" (/lib/\xc3\xa9.so)", b" (/lib/\x00.so)"])
    indent = _pick(rng, [b"\t    ", b"\t", b"        ", b""], [b"\t\x0b", b"\xc2\xa0", b"\x1f"])
    gap = _pick(rng, [b" ", b" ", b"\t", b"  "], [b"\xc2\x85", b"\x0c"])
    return indent + ip + gap + sym + dso + _pick(rng, [b"", b"", b" "], [b"\r", b"\xe2\x80\xa8"])


def _block(rng: random.Random, chains: list[list[bytes]]) -> bytes:
    kind = rng.random()
    if kind < 0.45 and chains:  # a chain seen before: the fast paths
        frames = rng.choice(chains)
    else:
        frames = [_frame(rng) for _ in range(rng.choice([0, 1, 2, 3, 5, 9]))]
        chains.append(frames)
    lines = [_event(rng)] + frames
    if rng.random() < 0.05:  # decorations perf prints between frames (srcline, brstack)
        lines.insert(rng.randint(1, len(lines)), rng.choice([b"  foo.c:12", b"   ", b"#x"]))
    if rng.random() < 0.03:
        lines.insert(0, rng.choice([b"PERF_RECORD_MMAP 1/1: [0x1(0x2) @ 0]: x", b"# mid"]))
    return b"\n".join(lines)


def _text(seed: int, blocks: int = 60) -> bytes:
    rng = random.Random(seed)
    chains: list[list[bytes]] = []
    out = [HEADER] if rng.random() < 0.5 else []
    for _ in range(blocks):
        out.append(_block(rng, chains))
        out.append(rng.choice([b"\n\n", b"\n\n", b"\n\n", b"\n\n\n", b"\n\n\n\n", b"\n"]))
    text = b"".join(out)
    if rng.random() < 0.2:
        text = text.rstrip(b"\n")  # the last sample may be cut
    if rng.random() < 0.03:
        text = text.replace(b"\n", b"\r\n")
    return text


def test_the_hostile_texts_hold_what_the_test_is_about(loops):
    taken = left = 0
    for seed in range(60):
        p = _parse(_text(seed), True)
        taken += loops[-1].taken
        left += len(p) - loops[-1].taken
    assert taken > 1000 and left > 1000  # both readers read many of their samples


@pytest.mark.parametrize("seed", range(60))
def test_hostile_texts_read_alike(seed):
    _same(_text(seed), seed=seed)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [1, 2, 7, 100])
def test_hostile_texts_cut_at_every_place(seed, chunk, monkeypatch):
    text = _text(1000 + seed, 25)
    whole = snapshot(_parse(text, False))
    monkeypatch.setattr(perf_script, "_CHUNK", chunk)
    assert differences(snapshot(_parse(text, True)), whole) == [], (seed, chunk)


def test_plain_blocks_are_the_loops_and_the_rest_pythons(loops):
    """Plain samples, one with a NUL in a line, one with an Arabic-Indic digit as its
    pid, one with a decoration line: the loop takes the two plain ones and leaves the
    rest to the Python reader, and both work on the same frames and caller twins (the
    last sample's `10   f` is the first one's `10 f`, whose twin the Python reader made)."""
    text = (b"a 1 [0] 1.0: 1 ev:\n\t 10 f (/x)\n\t 20 g (/x)\n\n"
            b"a 1 [0] 2.0: 1 ev:\n\t 20 g (/x)\n\t 3\x00 h (/x)\n\t 10 f (/x)\n\n"
            b"a \xd9\xa1 [0] 3.0: 1 ev:\n\t 10 f (/x)\n\t 20 g (/x)\n\n"
            b"a 1 [0] 4.0: 1 ev:\n\t 20 g (/x)\n  x.c:1\n\t 10 f (/x)\n\n"
            b"a 1 [0] 5.0: 1 ev:\n\t 20 g (/x)\n\t 10   f (/x)\n\n")
    _same(text)
    p = _parse(text, True)
    assert loops[-1].taken == 2
    f, g, g_caller, f_caller = range(4)
    assert len(p.locations) == 4 and p.locations[f_caller].is_return
    assert [p.stacks[s] for s in p.s_stack] == [
        (f, g_caller), (g, f_caller), (f, g_caller), (g, f_caller), (g, f_caller)]
    # int() reads the Arabic-Indic pid as 1, as the Python reader's pattern matched it
    assert list(p.s_tid) == [1] * 5 and list(p.s_time) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert "2 lines that are neither samples nor frames were skipped" in p.notes


def test_the_loop_lets_go_of_the_profile():
    """Nothing of the import keeps the profile's tables: they go with the profile (a
    reader kept alive by a cycle through the parser held them, and the web worker's
    memory grew by a profile per import)."""
    refs = {}
    for compiled in (True, False):
        p = _parse(SPINPOOL / "1.0.0-busy.truth-script.txt", compiled)
        refs[compiled] = [sys.getrefcount(t) for t in (
            p.locations, p.functions, p.stacks, p._stack_ix, p._function_ix, p.s_stack)]
    assert refs[True] == refs[False]


def test_an_import_ends_without_its_indexes_and_interns_as_before():
    """importers.load drops the interning indexes (on the 4M-sample text of bench-size
    they held 23 MiB through the report); interning after it finds what the import
    made, from indexes rebuilt off the tables."""
    from analysis.importers import load
    path = SPINPOOL / "1.0.0-busy.truth-script.txt"
    p, q = load(path), perf_script.parse(path)
    assert p._stack_ix is None and p._function_ix is None
    assert q._stack_ix is not None and len(q._stack_ix) == len(q.stacks) == len(p.stacks)
    for sid in (0, len(p.stacks) // 2, len(p.stacks) - 1):
        assert p.stack(p.stacks[sid]) == sid
    f = p.functions[-1]
    assert p.function(f.name, f.mapping_id, resolved=f.resolved) == f.id
    n = len(p.stacks)
    assert p.stack((0, 0, 0, 0, 0, 0, 0, 0, 0)) == n and len(p.stacks) == n + 1


def test_an_event_named_perf_record_is_sideband_to_both_loops():
    """`comm pid/tid [cpu] time: PERF_RECORD_SWITCHck:ppp:` (an edit make fuzz-native
    made of a switch line, tests/fuzz/crashes/perf-script-compiled-5a1c54d1e704) is a
    sideband record to the Python reader and was a sample of event
    "PERF_RECORD_SWITCHck:ppp" to the compiled loop, and to the Python fast path when its
    chain was seen before: both leave it to the reader now, for which the frame after a
    sideband line starts a sample of no event (as under `perf script -F ip,sym`)."""
    text = (b"worker 12/12 [000] 1.000000:     1000 cpu-clock:ppp:\n"
            b"\t    1111 main+0x1 (/usr/bin/worker)\n\n"
            b"worker 12/12 [000] 1.001000:     1000 PERF_RECORD_SWITCHck:ppp:\n"
            b"\t    1111 main+0x1 (/usr/bin/worker)\n\n"
            b"worker 12/12 [000] 1.002000:     1000 cpu-clock:ppp:\n"
            b"\t    1111 main+0x1 (/usr/bin/worker)\n\n")
    _same(text)
    p = _parse(text, True)
    assert [e.name for e in p.events] == ["cpu-clock:ppp", ""]
    assert (p.sample_count(0), p.sample_count(1)) == (2, 1)
    _same((Path(__file__).parent / "fuzz" / "crashes" /
           "perf-script-compiled-5a1c54d1e704.bin").read_bytes())


@pytest.mark.parametrize("compiled", [True, False])
def test_a_jit_name_is_free_text(compiled):
    """A perf map's name is whatever the JIT wrote (node --perf-basic-prof names a
    regular expression by its source, which may hold `->`): one function, named whole;
    a file's `outer->inner` stays perf's inline chain, leaf first."""
    text = (b"node 7 10.000000:     1000 cpu-clock:ppp: \n"
            b"\t    7f4e9f7c95cb RegExp:<!-- block:(\\w+) -->\\n+0x4b (/tmp/perf-7.map)\n"
            b"\t          14cde03 outer->inner+0x83 (/usr/bin/node)\n\n")
    p = _parse(HEADER + text, compiled)
    assert sorted(f.name for f in p.functions) == \
        ["RegExp:<!-- block:(\\w+) -->\\n", "inner", "outer"]
    assert {p.mappings[loc.mapping_id].basename: len(loc.functions)
            for loc in p.locations} == {"perf-7.map": 1, "node": 2}
