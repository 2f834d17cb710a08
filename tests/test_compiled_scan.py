"""The compiled record loop (analysis/perfdata/_scan.c) decodes samples exactly as the
Python reader's own sample decoder does: on real captures (on-CPU, sched_switch with call
chains, perf sched record, system-wide, zstd-compressed) every sample column, chain and
tracepoint switch row is equal with the loop on and off; on records written by hand it
reads big-endian files as little-endian ones and stops, without reading past the
record, at what it does not take."""
from __future__ import annotations

import struct
from array import array
from pathlib import Path

import pytest

from analysis.importers import perf_data
from analysis.perfdata import _scan
from analysis.perfdata import records as R
from analysis.perfdata.header import read_header

FIX = Path(__file__).parent / "fixtures"
CAPTURES = [
    "offcpu/redis-fsync-switch/bad.perf.data",  # sched_switch -g + --switch-events, -p
    "offcpu/system-wide/sys.perf.data",  # the same, -a: SWITCH_CPU_WIDE
    "offcpu/sched-record/1.1-sched.perf.data",  # perf sched record: wakeups, runtime
    "offcpu/cpp-server-mutex/1.1-wakeup.perf.data",  # sched_waking too
    "perfdata/compressed.perf.data",  # perf record -z: records inside zstd frames
    "perfdata/two-events.perf.data",  # samples of two events: ids in every record
    "perfdata/pipe.perf.data",  # perf record -o -: attrs arrive as records
    "perfdata/dwarf.perf.data",  # --call-graph dwarf: those samples are the reader's own
    "realworld-holdout/postgres-sync-commit/bad-sync-on.perf.data",
]
#: captures with much sideband: besides CAPTURES' kinds, JIT code in anonymous memory
#: (named /tmp/perf-PID.map), a library mapped by dlopen while perf recorded, and many
#: processes and threads (tests/test_replay_columns.py replays them)
MISS_CAPTURES = [c for c in CAPTURES if "dwarf" not in c] + [
    "perfdata/jit.perf.data", "perfdata/dlopen.perf.data", "perfdata/system-wide.perf.data",
    "perfdata/many-threads.perf.data"]
SAMPLE_COLUMNS = ("c_time", "c_pid", "c_tid", "c_cpu", "c_period", "c_event", "c_chain")
#: rows of sched_switch samples; the record rows (PERF_RECORD_SWITCH) only the loop reads
SWITCH_COLUMNS = ("w_time", "w_tid", "w_pid", "w_cpu", "w_kind", "w_state")


def _read(path: Path, compiled: bool):
    with perf_data._mapped(path) as buf:
        r = perf_data._Reader(buf, len(buf))
        if not compiled:
            r._scan = lambda b, pos, end: pos
        # the scan's output is compared: the replay lets go of it (file-order columns)
        r._replay = lambda: None
        r.read()
    return r


def _frames(r) -> list:
    return [r.chain_frames(i) for i in range(len(r.chains))]


@pytest.mark.parametrize("name", CAPTURES)
def test_loop_decodes_as_the_python_reader(name):
    path = FIX / name
    assert path.is_file(), path
    on, off = _read(path, True), _read(path, False)
    assert len(on.c_time) >= 50 and len(on.chains) >= 5
    for col in SAMPLE_COLUMNS:
        assert getattr(on, col) == getattr(off, col), col
    assert on.chains == off.chains
    assert _frames(on) == _frames(off)
    assert on.bad == off.bad == 0
    # the tracepoint rows: those of `off` (no PERF_RECORD_SWITCH rows) are the loop's rows
    # whose source is the tracepoint
    tp = sorted(set(on.x_at))
    for col in SWITCH_COLUMNS:
        assert array(getattr(on, col).typecode, (getattr(on, col)[i] for i in tp)) == \
            getattr(off, col), col
    assert list(on.x_row) == list(off.x_row)
    assert list(on.x_src) == list(off.x_src)
    # the sideband the loop decoded: the same records, in the same order once placed in
    # time (their numbers differ: without the loop every record is numbered)
    assert _placed(on.side) == _placed(off.side)
    assert len(on.side) >= 3


def _placed(side: list) -> list:
    """The sideband records in the order the replay applies them, without their numbers."""
    return [x[:1] + x[2:] for x in sorted(side, key=lambda x: (x[0], x[1]))]


@pytest.mark.parametrize("name", MISS_CAPTURES + ["perfdata/dwarf.perf.data"])
def test_the_loop_decodes_the_sideband_the_python_reader_leaves_it(name, monkeypatch):
    """MMAP2, COMM and FORK records with a time are decoded by the loop (every one of
    them, on these captures), as _Reader._sideband decodes them."""
    on, off = _read(FIX / name, True), _read(FIX / name, False)
    assert _placed(on.side) == _placed(off.side) and on.side
    calls = []
    original = perf_data._Reader._sideband

    def counted(self, *args):
        calls.append(args[0])
        return original(self, *args)
    monkeypatch.setattr(perf_data._Reader, "_sideband", counted)
    again = _read(FIX / name, True)
    assert _placed(again.side) == _placed(on.side)
    assert calls == [] if on._has_sideband_time() else calls


@pytest.mark.parametrize("name", CAPTURES[:2] + CAPTURES[4:5])
def test_small_windows_read_the_same(name, monkeypatch):
    """The loop reads a window of the file per call (4 MiB; here 1,000 bytes, so records
    straddle every window's edge) and drops the pages it read: the same columns."""
    whole = _read(FIX / name, True)
    monkeypatch.setattr(perf_data, "_SCAN_WINDOW", 1000)
    small = _read(FIX / name, True)
    for col in SAMPLE_COLUMNS + SWITCH_COLUMNS + ("x_at", "x_row", "x_src"):
        assert getattr(small, col) == getattr(whole, col), col
    assert small.chains == whole.chains
    assert _frames(small) == _frames(whole)
    if "compressed" not in name:  # (inside zstd frames the records are not the file's)
        assert small._released > small.h.data_offset + 100_000  # pages dropped as it went


def test_the_captures_hold_what_the_test_is_about():
    """sched_switch samples with their rows, switch records, a compressed file."""
    redis = _read(FIX / CAPTURES[0], True)
    assert len(redis.x_at) > 1000  # sched_switch rows
    assert len(redis.w_time) > len(redis.x_at)  # and PERF_RECORD_SWITCH rows
    buf = (FIX / "perfdata/compressed.perf.data").read_bytes()
    h = read_header(buf, len(buf))
    pos, types = h.data_offset, set()
    while pos < h.data_offset + h.data_size:
        rtype, _, size = struct.unpack_from("<IHH", buf, pos)
        types.add(rtype)
        pos += size
    assert R.COMPRESSED in types and R.SAMPLE not in types  # every sample inside zstd



# ---- records written by hand ------------------------------------------------------------

def _spec(**kw) -> bytes:
    """A sample spec in _scan.c's S_* order: ip, tid, time, callchain (no sched_switch),
    no period in the record (the attr's own: `fixed_period`)."""
    v = [kw.get("ev", 0), 24, 0, 8, 12, 16, -1, -1, 1] + [-1] * 7 + \
        [kw.get("fixed_period", 0)]
    return struct.pack("<17q", *v)


def _records(e: str) -> bytes:
    """Two samples (IP, TID, TIME, CALLCHAIN), a FINISHED_ROUND, a COMM (left to the
    caller), in byte order `e`."""
    out = b""
    for ip, pid, tid, t, chain in ((0x1000, 7, 8, 100, (0x1000, 0x2000)),
                                   (0x3000, 7, 9, 200, ())):
        body = struct.pack(e + "QiiQQ", ip, pid, tid, t, len(chain)) + \
            struct.pack(e + f"{len(chain)}Q", *chain)
        out += struct.pack(e + "IHH", 9, 2, 8 + len(body)) + body
    out += struct.pack(e + "IHH", 68, 0, 8)
    comm = struct.pack(e + "ii", 7, 7) + b"x\0\0\0\0\0\0\0"
    out += struct.pack(e + "IHH", 3, 0, 8 + len(comm)) + comm
    return out


def _scan_all(buf: bytes, big: bool):
    """The scan's output, and (mode, ip, chain bytes or None) per chain it interned: the
    key it put in chain_ix with the id its place in `chains`, and the ip in the last
    column."""
    chain_ix: dict = {}
    chains: list = []
    pos, cols = _scan.scan(buf, 0, len(buf), big, -1, {0: _spec(fixed_period=200)}, 0, {},
                           chain_ix, chains, 0, 0)
    assert list(chain_ix.items()) == [(key, i) for i, key in enumerate(chains)]
    ips = array("Q", cols[-1])
    assert len(ips) == len(chains)
    seen = [(mode, ip, k if isinstance(k, bytes) else None)
            for (mode, k), ip in zip(chains, ips)]
    for (mode, k), ip in zip(chains, ips):
        assert isinstance(k, bytes) or k == ip  # no chain: keyed by its ip
    return pos, cols, seen


def test_big_endian_records_read_as_little_endian_ones():
    little, big = _records("<"), _records(">")
    pl, cl, sl = _scan_all(little, False)
    pb, cb, sb = _scan_all(big, True)
    assert pl == pb == len(little) - 24  # stopped at the COMM, which the caller reads
    assert cl == cb
    assert list(array("Q", cl[0])) == [100, 200]  # time
    assert list(array("i", cl[2])) == [8, 9]  # tid
    assert list(array("i", cl[6])) == [0, 1]  # chain ids
    assert list(array("Q", cl[4])) == [200, 200]  # no period recorded: the attr's
    assert sl[0][:2] == sb[0][:2] == (2, 0x1000)  # (mode, ip) of the first chain
    assert sl[1] == sb[1] == (2, 0x3000, None)  # no chain: keyed by its ip
    # the chain bytes are the file's (the Python reader unpacks them by its endian)
    assert struct.unpack("<2Q", sl[0][2]) == struct.unpack(">2Q", sb[0][2]) == (0x1000, 0x2000)


def test_a_record_past_the_end_or_without_a_spec_is_left_to_the_caller():
    buf = _records("<")
    first = struct.unpack_from("<IHH", buf, 0)[2]
    # cut inside the second sample: the first is taken, the walk stops before the second
    pos, cols, _ = _scan_all(buf[:first + 20], False)
    assert pos == first and len(cols[0]) == 8
    # a call chain longer than its record: not taken (the Python reader reports it)
    bad = bytearray(buf)
    struct.pack_into("<Q", bad, 8 + 24, 1 << 40)
    pos, cols, _ = _scan_all(bytes(bad), False)
    assert pos == 0 and cols[0] == b""
    # an event with no spec (None: the Python reader decodes it) stops the loop too
    pos, cols = _scan.scan(buf, 0, len(buf), False, -1, {0: None}, 0, {}, {}, [], 0, 0)
    assert pos == 0


def test_a_switch_record_without_a_time_is_skipped():
    body = struct.pack("<ii", 5, 5)
    rec = struct.pack("<IHH", 14, 1 << 13, 8 + len(body)) + body
    # trailer size 0: the attr has no TIME in its sample_id (such a record cannot be placed)
    pos, cols = _scan.scan(rec, 0, len(rec), False, -1, {}, 0,
                           {0: struct.pack("<5q", 0, 0, 4, -1, -1)}, {}, [], 0, 0)
    assert pos == len(rec) and cols[7] == b""
    # with a trailer (pid tid, time): one OUT row, time read from the trailer
    body = struct.pack("<iiQ", 5, 6, 1234)
    rec = struct.pack("<IHH", 14, 1 << 13 | 1 << 14, 8 + len(body)) + body
    pos, cols = _scan.scan(rec, 0, len(rec), False, -1, {}, 0,
                           {0: struct.pack("<5q", 16, 0, 4, 8, -1)}, {}, [], 0, 0)
    assert list(array("Q", cols[7])) == [1234]
    assert (list(array("i", cols[8])), list(array("i", cols[9]))) == ([6], [5])
    assert list(array("b", cols[11])) == [0]  # OUT
    assert list(array("b", cols[12])) == [1]  # preempted: runnable


@pytest.mark.parametrize("e", ["<", ">"])
def test_sideband_the_loop_cannot_place_or_read_is_left_to_the_caller(e):
    """Given `side`, the loop decodes timed COMM, FORK and MMAP2 records (a data mapping:
    none, but numbered), and stops at one whose trailer has no time or whose fields do
    not fit in it: the Python reader decides what a damaged record is."""
    trailer = struct.pack(e + "iiQ", 7, 8, 555)  # sample_id: TID, TIME
    spec = {0: struct.pack("<5q", len(trailer), 0, 4, 8, -1)}  # size, pid tid time cpu

    def rec(rtype, misc, body):
        return struct.pack(e + "IHH", rtype, misc, 8 + len(body) + len(trailer)) + body + \
            trailer
    comm = rec(3, 1 << 13, struct.pack(e + "ii", 7, 8) + b"p\xc3\xa9\xff\0\0\0")
    fork = rec(7, 0, struct.pack(e + "iiii", 9, 7, 10, 8))
    bid = bytes(range(1, 21))
    mmap2 = rec(10, 2 | 1 << 14, struct.pack(e + "iiQQQ", 7, 8, 0x400000, 0x1000, 0x2000) +
                bytes([20, 0, 0, 0]) + bid + struct.pack(e + "II", 5, 2) + b"/bin/x\0\0")
    data = rec(10, 2, struct.pack(e + "iiQQQ", 7, 8, 0, 1, 0) + bytes(24) +
               struct.pack(e + "II", 1, 2) + b"/d\0\0\0\0\0\0")  # PROT_READ only
    short = rec(10, 2, struct.pack(e + "iiQQ", 7, 8, 1, 2))
    buf = comm + fork + mmap2 + data + short
    side = []
    pos, _, seq = _scan.scan(buf, 0, len(buf), e == ">", -1, {}, 0, spec, {}, [], 0, 0,
                             side, 40)
    assert pos == len(buf) - len(short) and seq == 44
    assert side == [(555, 41, 1, 7, 8, "pé\ufffd", True), (555, 42, 2, 9, 7, 10, 8),
                    (555, 43, 0, 7, 0x400000, 0x1000, 0x2000, "/bin/x", bid.hex(), 2)]
    untimed = {0: struct.pack("<5q", 0, -1, -1, -1, -1)}
    assert _scan.scan(buf, 0, len(buf), e == ">", -1, {}, 0, untimed, {}, [], 0, 0,
                      [], 0)[::2] == (0, 0)
    assert len(_scan.scan(buf, 0, len(buf), e == ">", -1, {}, 0, spec, {}, [], 0, 0)) == 2
