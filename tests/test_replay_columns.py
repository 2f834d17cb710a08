"""The replay on columns (analysis/perfdata/replay.py) makes the profile the replay
sample by sample makes (_Reader._replay_rows, the reference): the same locations,
functions, mappings, stacks and strings with the same ids, the same columns, file for
file as saved, on captures with sideband of every kind; and its pieces (the call chains
decoded on columns, the generations of the maps) as their one-by-one counterparts."""
from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest

from analysis import profile_io
from analysis.importers import perf_data
from analysis.perfdata import replay
from test_compiled_scan import CAPTURES, MISS_CAPTURES

FIX = Path(__file__).parent / "fixtures"
#: besides the captures of test_compiled_scan: a JVM and Node with their perf maps, Go,
#: Ruby, a child process per request (fork, exec, exit), a stripped distribution binary
REPLAYED = MISS_CAPTURES + [
    "realworld-holdout8/java-simpledateformat-per-call/bad.perf.data",
    "realworld-holdout14/node-delete-property-dictionary-mode/bad.perf.data",
    "realworld-holdout8/go-reflect-deepequal-hot-path/bad.perf.data",
    "realworld-holdout14/ruby-struct-new-per-record/bad.perf.data",
    "offcpu/child-per-request/child-per-request.perf.data",
    "dynsym/bzip2.perf.data"]


def _saved(path: Path, on_columns: bool, monkeypatch, patch=None) -> bytes:
    monkeypatch.setattr(perf_data, "REPLAY_ON_COLUMNS", on_columns)
    used = []
    original = replay.replay

    def counted(*args):
        used.append(1)
        return original(*args)
    monkeypatch.setattr(perf_data, "replay", counted)
    with perf_data._mapped(path) as buf:
        r = perf_data._Reader(buf, len(buf))
        if patch:
            patch(r)
        p = r.read()
    assert bool(used) == on_columns
    out = io.BytesIO()
    profile_io.dump(p, out)
    return out.getvalue()


def test_the_captures_are_there():
    assert len(REPLAYED) == 18 and all((FIX / n).exists() for n in REPLAYED)


@pytest.mark.parametrize("name", REPLAYED)
def test_the_replay_on_columns_makes_the_profile_sample_by_sample_makes(name, monkeypatch):
    columns = _saved(FIX / name, True, monkeypatch)
    assert columns == _saved(FIX / name, False, monkeypatch)
    assert len(columns) > 1000


def test_dwarf_captures_are_replayed_sample_by_sample(monkeypatch):
    """A DWARF capture's samples each snapshot their process's maps (UserStacks): the
    rows path replays them whatever the setting."""
    monkeypatch.setattr(perf_data, "REPLAY_ON_COLUMNS", True)
    called = []
    monkeypatch.setattr(perf_data, "replay", lambda *a: called.append(1))
    with perf_data._mapped(FIX / "perfdata/dwarf.perf.data") as buf:
        p = perf_data._Reader(buf, len(buf)).read()
    assert not called and len(p.user_stacks) == len(p) == 60


@pytest.mark.parametrize("chunk", [replay.CHAIN_CHUNK, 3])
@pytest.mark.parametrize("name", [c for c in CAPTURES if "dwarf" not in c])
def test_chains_decoded_on_columns_are_the_frames_one_by_one(name, chunk):
    """Decoded a chunk of chains at a time (3 chains: many chunks) or in one."""
    with perf_data._mapped(FIX / name) as buf:
        r = perf_data._Reader(buf, len(buf))
        r._replay = lambda: None
        r.read()
    r._pack_chains()
    n = len(r.chain_ends) - 1
    assert n >= 10
    first, mode, addr = replay.chain_frames(r, np.arange(n, dtype=np.int64), chunk)
    got = [tuple(zip(mode[a:b].tolist(), addr[a:b].tolist()))
           for a, b in zip(first[:-1].tolist(), first[1:].tolist())]
    assert got == [r.chain_frames(c) for c in range(n)]


def _chain(*values: int, e: str = "<") -> bytes:
    return struct.pack(f"{e}{len(values)}Q", *values)


@pytest.mark.parametrize("chunk", [replay.CHAIN_CHUNK, 2])
@pytest.mark.parametrize("e", ["<", ">"])
def test_markers_switch_the_mode_and_a_deferred_cookie_is_dropped(e, chunk):
    """Hand-made chains: markers set the mode of the frames after them (a marker of no
    known mode leaves it), a deferred user stack's cookie is no frame, a chain without
    an address is its sample's ip in the sample's mode; big-endian like little."""
    kernel, user, deferred, guest = 0xFFFFFFFFFFFFFF80, 0xFFFFFFFFFFFFFE00, \
        replay.CTX_USER_DEFERRED, 0xFFFFFFFFFFFFF800
    r = perf_data._Reader.__new__(perf_data._Reader)
    r.e = e
    r.chains = [(2, _chain(kernel, 0xffffffff81000010, 0xffffffff81000020, user, 0x401000,
                           deferred, 0x1234, 0x402000, e=e)),
                (1, b""), (1, _chain(kernel, user, e=e)),
                (0, _chain(0xFFFFFFFFFFFFF002, 0x10, guest, 0x20, e=e)),
                (2, 0x777), (2, _chain(0x30, e=e))]
    r.chain_ips = perf_data.array("Q", [0x999, 0xffffffff81000099, 0x55, 0x66, 0x777, 0x88])
    r._pack_chains()
    first, mode, addr = replay.chain_frames(r, np.arange(6, dtype=np.int64), chunk)
    got = [tuple(zip(mode[a:b].tolist(), addr[a:b].tolist()))
           for a, b in zip(first[:-1].tolist(), first[1:].tolist())]
    assert got == [
        ((1, 0xffffffff81000010), (1, 0xffffffff81000020), (2, 0x401000), (2, 0x402000)),
        ((1, 0xffffffff81000099),), ((1, 0x55),), ((0, 0x10), (4, 0x20)), ((2, 0x777),),
        ((2, 0x30),)]
    assert got == [r.chain_frames(c) for c in range(6)]


def test_generations_count_the_changes_before_each_sample():
    """A process's maps change with its MMAP, its exec and a FORK of it; the kernel's with
    a kernel MMAP (pid -1 or the kernel cpumode); a COMM without exec changes nothing."""
    M, C, F = replay.SIDE_MMAP, replay.SIDE_COMM, replay.SIDE_FORK
    side = [(1, 0, M, 7, 0, 1, 0, "/a", "", 2), (2, 1, M, -1, 0, 1, 0, "[k]", "", 2),
            (3, 2, C, 7, 8, "x", True), (4, 3, C, 7, 7, "x", False),
            (5, 4, C, 7, 7, "x", True), (6, 5, F, 9, 7, 9, 7),
            (7, 6, M, 8, 0, 1, 0, "[k]", "", 1)]
    kernel, pid = replay.changes(side)
    assert kernel.tolist() == [False, True, False, False, False, False, True]
    assert pid.tolist()[:1] + pid.tolist()[4:6] == [7, 7, 9]
    pids = np.array([7, 7, 7, 9, 9, 8], dtype=np.int32)
    seg = np.array([0, 1, 5, 5, 6, 7])
    k, p = replay.generations(pids, seg, side)
    assert k.tolist() == [0, 0, 1, 1, 1, 2]
    assert p.tolist() == [0, 1, 2, 0, 1, 0]


def test_a_damaged_file_offset_wraps_as_perf_computes_it(monkeypatch):
    """A mapping whose file offset (address - start + pgoff) would pass 2^64 (a damaged
    or hostile MMAP record's pgoff) wraps in u64, as perf's map__map_ip computes it, in
    both replays; the profile can still be saved (orjson refused the larger int)."""
    original = perf_data._Reader._map_facts
    wrapped = []

    def huge_pgoff(self, kernel, pid, m, *args, **kw):
        path, bid, rule, start, pgoff, text, kind = original(self, kernel, pid, m, *args,
                                                             **kw)
        if rule == 2:  # a user mapping: its offsets are address - start + pgoff
            wrapped.append(pgoff == 0)  # 0 - 1: 2^64 - 1
            pgoff = (pgoff - 1) & ((1 << 64) - 1)
        return path, bid, rule, start, pgoff, text, kind
    monkeypatch.setattr(perf_data._Reader, "_map_facts", huge_pgoff)
    name = FIX / "perfdata/system-wide.perf.data"
    assert _saved(name, True, monkeypatch) == _saved(name, False, monkeypatch)
    assert any(wrapped)
    with perf_data._mapped(name) as buf:
        damaged = perf_data._Reader(buf, len(buf)).read()
        monkeypatch.setattr(perf_data._Reader, "_map_facts", original)
        true = perf_data._Reader(buf, len(buf)).read()
    offsets = {}
    for p, k in ((true, 0), (damaged, 1)):
        for loc in p.locations:
            if p.mappings[loc.mapping_id].kind == "user":
                offsets.setdefault((loc.address, loc.is_return), [None, None])[k] = \
                    loc.dso_offset
    assert offsets and all(d == t - 1 for t, d in offsets.values())


def test_sideband_times_past_2_63_replay_alike(monkeypatch):
    """A damaged record's time can be any u64 (found by the perf-data fuzz target when the
    replay ran in C on signed times): sideband and a sample at 2^63 and past."""
    original = perf_data._Reader._replay
    counts = []

    def late_sideband(self):
        self.side = [(t | 1 << 63, *rest) for t, *rest in self.side[1:]] + self.side[:1]
        self.c_time[-1] = (1 << 64) - 1  # one sample after them all
        counts.append(len(self.c_time))
        return original(self)
    monkeypatch.setattr(perf_data._Reader, "_replay", late_sideband)
    name = FIX / CAPTURES[1]
    assert _saved(name, True, monkeypatch) == _saved(name, False, monkeypatch)
    assert counts[0] >= 50
