"""The fold on the columns (analysis/export/folded.py _fold_arrays) gives the row-by-row
Python fold's lines, weights and
line order on every capture of the corpus and the fixtures, in both conventions, with
each option (process ids, annotations, addresses, no comm, another event, sample counts),
on a profile symbolized with DWARF line tables, and on rows whose weights pass 64 bits."""
from __future__ import annotations

import os
from array import array
from pathlib import Path

import pytest

from analysis.errors import AnalysisError
from analysis.export.folded import FLAMEGRAPH, INFERNO, PERIOD, SAMPLES, FoldOptions, fold
from analysis.importers import detect, load
from analysis.profile import Profile
from conftest import CORPUS, FIXTURES


def _captures() -> list[Path]:
    out = []
    for root in (CORPUS, FIXTURES):
        for d, _, names in os.walk(root):
            for n in names:
                path = Path(d) / n
                try:
                    detect(path)
                except (AnalysisError, OSError):
                    continue
                out.append(path)
    return sorted(out)


#: the captures of up to 300 kB (the larger ones are many more of the same samples)
CAPTURES = [p for p in _captures() if p.stat().st_size <= 300_000]

#: each option at least once in each convention, weights of both kinds
OPTIONS = [
    dict(convention=FLAMEGRAPH, weight=PERIOD),
    dict(convention=INFERNO, weight=SAMPLES),
    dict(convention=FLAMEGRAPH, weight=SAMPLES, annotate_kernel=True, annotate_jit=True,
         include_tid=True),
    dict(convention=INFERNO, weight=PERIOD, annotate_kernel=True, include_pid=True,
         include_addrs=True),
    dict(convention=FLAMEGRAPH, weight=PERIOD, include_comm=False, include_addrs=True),
    dict(convention=INFERNO, weight=SAMPLES, include_comm=False, annotate_jit=True),
]


def _same_folds(p: Profile, opts: FoldOptions) -> int:
    c, py = fold(p, opts), fold(p, opts, compiled=False)
    assert list(c.items()) == list(py.items()), opts  # the same lines in the same order
    return len(c)


def test_the_captures_hold_what_the_test_is_about():
    kinds = {}
    for path in CAPTURES:
        kinds[detect(path)] = kinds.get(detect(path), 0) + 1
    assert kinds["perf-data"] >= 70 and kinds["perf-script"] >= 150
    assert kinds["perf-report"] >= 50 and kinds["folded"] >= 100


@pytest.mark.corpus
@pytest.mark.parametrize("path", CAPTURES, ids=[str(p.relative_to(p.parents[2]))
                                                for p in CAPTURES])
def test_folds_alike(path):
    p = _folded_alike(path)
    if p is None:
        return
    named = [e.name for e in p.events if e.name]
    for event in named[1:3]:  # another event than the first
        _same_folds(p, FoldOptions(event=event))


@pytest.mark.parametrize("path", CAPTURES[::20], ids=[str(p.relative_to(p.parents[2]))
                                                      for p in CAPTURES[::20]])
def test_folds_alike_two_stacks_at_a_time(path, monkeypatch):
    """The array fold names its stacks a chunk at a time (folded.STACK_CHUNK), the
    bodies told apart by their text across chunks, and sums its rows a chunk at a time
    (folded.ROW_CHUNK), merged in the order first met: with two stacks and three rows a
    chunk, the lines, weights and order are still the Python fold's."""
    from analysis.export import folded
    monkeypatch.setattr(folded, "STACK_CHUNK", 2)
    monkeypatch.setattr(folded, "ROW_CHUNK", 3)
    _folded_alike(path)


def _folded_alike(path: Path) -> Profile | None:
    """The capture, folded alike with each of OPTIONS; None when it is damaged on
    purpose (no profile to fold)."""
    try:
        p = load(path)
    except AnalysisError:
        return None
    for kw in OPTIONS:
        _same_folds(p, FoldOptions(**kw))
    return p


def test_symbolized_frames_with_line_tables_fold_alike():
    """DWARF inline frames are frames of their own, not `_[i]` ones: the line tables
    are part of what a location prints."""
    from analysis.symbols import symbolize
    p = load(FIXTURES / "perfdata" / "dlopen.perf.data")
    symbolize(p, [FIXTURES / "perfdata" / "bin" / "pw-dlopen",
                  FIXTURES / "perfdata" / "bin" / "libplugin.so"])
    assert any(loc.lines for loc in p.locations)
    for kw in OPTIONS:
        assert _same_folds(p, FoldOptions(**kw)) >= 2


def test_weights_past_64_bits_are_summed_exactly():
    """Periods up to 2^64 - 1 on many rows: the sums are Python's exact ones."""
    p = Profile("test")
    m = p.mapping("/x")
    loc = p.add_location(m, 1, (p.function("f", m),))
    sid = p.stack((loc,))
    ev = p.event("cycles")
    for i in range(40):
        p.add_sample(sid, period=(1 << 64) - 1 - i, event_id=ev, comm_id=p.string("a"))
        p.add_sample(sid, period=0, count=-3, event_id=ev, comm_id=p.string("b"))
    assert p.s_period.typecode == "Q"
    c = fold(p)
    assert c == fold(p, compiled=False)
    assert c["a;f"] == sum((1 << 64) - 1 - i for i in range(40)) and c["b;f"] == -120
    assert isinstance(p.s_count, array)
