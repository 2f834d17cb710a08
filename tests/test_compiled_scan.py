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
#: captures whose frames the compiled frame miss locates: besides CAPTURES' kinds, JIT
#: code in anonymous memory (named /tmp/perf-PID.map), a library mapped by dlopen while
#: perf recorded, and many processes and threads
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


# ---- call chains to frames and locations -------------------------------------------------
@pytest.mark.parametrize("name", [c for c in CAPTURES if "dwarf" not in c])
def test_chains_become_the_frames_the_python_code_makes(name):
    """_scan.frames against _Reader.frames_py on every distinct chain of the capture (the
    DWARF capture's chains all carry a user leaf: frames_py's own)."""
    path = FIX / name
    with perf_data._mapped(path) as buf:
        r = perf_data._Reader(buf, len(buf))
        seen = []
        pack = r._pack_chains

        def keep():  # every chain interned (by _scan.c or the Python loop), before packing
            for ckey, ip in zip(r.chains, r.chain_ips, strict=True):
                mode, chain = ckey[0], ckey[1]
                if len(ckey) == 2 and isinstance(chain, bytes):  # no branch, no user leaf
                    seen.append((mode, ip, chain))
            pack()
        r._pack_chains = keep
        r.read()
    plain = seen
    assert len(plain) >= 10
    for mode, ip, chain in plain:
        assert _scan.frames(chain, r.e == ">", mode, ip) == \
            r.frames_py(mode, ip, chain, None, None)


def _chain(*values: int, e: str = "<") -> bytes:
    return struct.pack(f"{e}{len(values)}Q", *values)


@pytest.mark.parametrize("e", ["<", ">"])
def test_markers_switch_the_mode_and_a_deferred_cookie_is_dropped(e):
    kernel, user, deferred = (perf_data._CTX_KERNEL, perf_data._CTX_USER,
                              perf_data._CTX_USER_DEFERRED)
    chain = _chain(kernel, 0xffffffff81000010, 0xffffffff81000020, user, 0x401000,
                   deferred, 0x1234, 0x402000, e=e)
    r = perf_data._Reader.__new__(perf_data._Reader)
    r.e = e
    want = ((1, 0xffffffff81000010), (1, 0xffffffff81000020), (2, 0x401000), (2, 0x402000))
    assert _scan.frames(chain, e == ">", 2, 0x999) == want == \
        r.frames_py(2, 0x999, chain, None, None)
    # no address at all: the sample's ip, in its own mode
    for empty in (None, b"", _chain(kernel, user, e=e)):
        assert _scan.frames(empty, e == ">", 1, 0xffffffff81000099) == \
            ((1, 0xffffffff81000099),) == r.frames_py(1, 0xffffffff81000099, empty, None, None)


def test_locate_asks_once_per_frame_and_address_space():
    """A frame found in its cache is not asked for again; leaf and caller frames of one
    address are cached apart (a return address is not the sampled address)."""
    asked = []
    kernel, user = ({}, {}), ({}, {})

    def miss(depth, mode, addr, is_kernel):
        asked.append((depth, mode, addr, is_kernel))
        loc = len(asked) - 1
        (kernel if is_kernel else user)[depth > 0][addr] = loc
        return loc
    frames = ((1, 0xffffffff81000010), (2, 0x401000), (0, 0xffff900000000000), (2, 0x401000))
    assert _scan.locate(frames, kernel, user, 0xffff800000000000, miss) == (0, 1, 2, 1)
    assert asked == [(0, 1, 0xffffffff81000010, True), (1, 2, 0x401000, False),
                     (2, 0, 0xffff900000000000, True)]
    # the caller 0x401000 is known; as a leaf it is a new frame
    assert _scan.locate(((2, 0x401000), (2, 0x401000)), kernel, user,
                        0xffff800000000000, miss) == (3, 1)
    assert len(asked) == 4
    with pytest.raises(TypeError):
        _scan.locate(((2,),), kernel, user, 0, miss)


def test_replay_run_asks_for_what_its_caches_miss_and_stops_at_sideband():
    """Rows in time order: a stack or name not cached is what the miss callbacks return
    (and then cached by them); without callbacks the run stops there; a row at or after
    next_side stops it either way."""
    times = array("Q", [30, 10, 20, 40])
    order = array("i", [1, 2, 0, 3])
    pid, chain, tid = array("i", [7, 7, 8, 7]), array("i", [0, 1, 0, 0]), \
        array("i", [70, 71, 80, 70])
    cache = {(7 + 1) << 32 | 1: 5}
    comms = {71: 2}
    asked = []

    def stack_miss(row):
        asked.append(("stack", row))
        cache[(pid[row] + 1) << 32 | chain[row]] = 10 + row
        return 10 + row

    def comm_miss(row):
        asked.append(("comm", row))
        comms[tid[row]] = 20 + tid[row]
        return 20 + tid[row]
    assert _scan.replay_run(order, 0, times, -1, pid, chain, tid, cache, comms) == \
        (1, array("i", [5]).tobytes(), array("i", [2]).tobytes())
    i, st, cm = _scan.replay_run(order, 0, times, 40, pid, chain, tid, cache, comms,
                                 stack_miss, comm_miss)
    assert i == 3  # row 3 is at next_side
    assert array("i", st).tolist() == [5, 12, 10] and array("i", cm).tolist() == [2, 100, 90]
    assert asked == [("stack", 2), ("comm", 2), ("stack", 0), ("comm", 0)]
    # row 3 has the (pid, chain) of row 0 and the thread of row 0: both cached now
    assert _scan.replay_run(order, 3, times, -1, pid, chain, tid, cache, comms,
                            stack_miss, comm_miss)[0] == 4 and len(asked) == 4


def test_a_sideband_time_past_2_63_is_left_to_python(monkeypatch):
    """A damaged record's time can be any u64; the compiled run takes a signed bound, so
    the rows from 2^63 on are replayed by Python (found by the perf-data fuzz target)."""
    original = perf_data._Reader._replay

    scanned = []

    def late_sideband(self):
        self.side = [(t | 1 << 63, *rest) for t, *rest in self.side[1:]] + self.side[:1]
        self.c_time[-1] = (1 << 64) - 1  # one sample after them all
        scanned.append(len(self.c_time))
        return original(self)
    monkeypatch.setattr(perf_data._Reader, "_replay", late_sideband)
    path = FIX / CAPTURES[1]
    with perf_data._mapped(path) as buf:
        r = perf_data._Reader(buf, len(buf))
        p = r.read()
    assert len(p) == scanned[0] >= 50


def test_pack_chains_puts_the_chain_bytes_end_to_end():
    """_scan.pack_chains: (mode, bytes) keys' bytes in one blob, their ends, every key's
    mode, and the indexes of the keys of another form (no chain; branch records)."""
    keys = [(2, b"\x01" * 16), (1, 0x4000), (2, b"\x02" * 8), (3, b"\x03" * 8, None, 7, 9)]
    blob, ends, modes, rest = _scan.pack_chains(keys)
    assert blob == b"\x01" * 16 + b"\x02" * 8 + b"\x03" * 0
    assert array("q", ends).tolist() == [0, 16, 16, 24, 24]
    assert modes == bytes([2, 1, 2, 3]) and rest == [1, 3]
    assert _scan.pack_chains([]) == (b"", array("q", [0]).tobytes(), b"", [])
    with pytest.raises(TypeError):
        _scan.pack_chains([()])


@pytest.mark.parametrize("name", CAPTURES)
def test_packed_chains_give_the_frames_their_keys_gave(name):
    """The replay packs the chains (_pack_chains) before it decodes them: every chain's
    frames, the DWARF capture's (all keys of another form) too, are those of its key."""
    r = _read(FIX / name, True)
    keys, before = list(r.chains), _frames(r)
    r._pack_chains()
    assert r.chains is None and len(r.chain_rest) == sum(len(k) != 2 or
                                                         not isinstance(k[1], bytes)
                                                         for k in keys)
    assert [r.chain_frames(i) for i in range(len(keys))] == before


def _asking(log: list):
    """A frame cache pair for kernel and user, and a miss that numbers what it is asked."""
    kernel, user = ({}, {}), ({}, {})

    def miss(depth, mode, addr, is_kernel):
        log.append((depth, mode, addr, is_kernel))
        (kernel if is_kernel else user)[depth > 0][addr] = len(log) - 1
        return len(log) - 1
    return kernel, user, miss


@pytest.mark.parametrize("name", [c for c in CAPTURES if "dwarf" not in c])
def test_locate_chain_reads_a_packed_chain_as_locate_its_frames(name):
    """_scan.locate_chain, the replay's path for a packed chain, gives the locations and
    asks the same questions in the same order as locate() over frames() of that chain,
    on every chain of the capture."""
    r = _read(FIX / name, True)
    n = len(r.chains)
    r._pack_chains()
    packed = [cid for cid in range(n) if cid not in r.chain_rest]
    assert len(packed) >= 10
    via_frames, direct = [], []
    k1, u1, miss1 = _asking(via_frames)
    k2, u2, miss2 = _asking(direct)
    ends = r.chain_ends
    for cid in packed:
        want = _scan.locate(r.chain_frames(cid), k1, u1, perf_data.KERNEL_ADDR, miss1)
        got = _scan.locate_chain(r.chain_blob, ends[cid], ends[cid + 1], r.e == ">",
                                 r.chain_modes[cid], r.chain_ips[cid], k2, u2,
                                 perf_data.KERNEL_ADDR, miss2)
        assert got == want, cid
    assert direct == via_frames and len(direct) > 10


@pytest.mark.parametrize("e", ["<", ">"])
def test_locate_chain_follows_markers_and_falls_back_to_the_ip(e):
    kernel_m, user_m, deferred = (perf_data._CTX_KERNEL, perf_data._CTX_USER,
                                  perf_data._CTX_USER_DEFERRED)
    chain = _chain(kernel_m, 0xffffffff81000010, user_m, 0x401000, deferred, 0x1234,
                   0x401000, e=e)
    asked = []
    kernel, user, miss = _asking(asked)
    blob = b"\0" * 8 + chain
    assert _scan.locate_chain(blob, 8, len(blob), e == ">", 2, 0x999, kernel, user,
                              0xffff800000000000, miss) == (0, 1, 1)
    # the cookie 0x1234 is no frame; the second caller 0x401000 is the first one's
    assert asked == [(0, 1, 0xffffffff81000010, True), (1, 2, 0x401000, False)]
    # no address: the sample's ip in its own mode; an empty slice likewise
    for chunk in (_chain(kernel_m, user_m, e=e), b""):
        assert _scan.locate_chain(chunk, 0, len(chunk), e == ">", 1, 0xffffffff81000010,
                                  kernel, user, 0xffff800000000000, miss) == (0,)
    with pytest.raises(ValueError):
        _scan.locate_chain(blob, 8, len(blob) + 8, False, 2, 0, kernel, user, 0, miss)
    with pytest.raises(ValueError):
        _scan.locate_chain(blob, 8, 12, False, 2, 0, kernel, user, 0, miss)
    with pytest.raises(TypeError):
        _scan.locate_chain(blob, 8, 16, False, 2, 0, ({},), user, 0, miss)


@pytest.mark.parametrize("name", CAPTURES)
def test_the_fast_stack_path_makes_the_profile_stack_miss_makes(name, monkeypatch):
    """replay_run resolves a new (process, packed chain) pair in C (its `fast` tuple);
    without it every one goes to the Python stack_miss. The profiles are the same, file
    for file as saved (locations, functions, stacks and their ids, columns)."""
    import io

    from analysis import profile_io

    def saved() -> bytes:
        with perf_data._mapped(FIX / name) as buf:
            p = perf_data._Reader(buf, len(buf)).read()
        out = io.BytesIO()
        profile_io.dump(p, out)
        return out.getvalue()
    fast = saved()
    compiled = _scan.replay_run
    calls = []

    def without_fast(*args):
        calls.append(len(args))
        return compiled(*args[:11])
    monkeypatch.setattr(_scan, "replay_run", without_fast)
    assert saved() == fast
    if "dwarf" in name:  # stack copies to unwind: the replay takes its rows one by one
        assert not calls
    else:
        assert calls and all(n == 12 for n in calls), "the replay passes its fast path"


def _saved_and_locates(name: str, compiled: bool, monkeypatch) -> tuple[bytes, int]:
    """The saved profile of capture `name` read with the compiled frame miss or without,
    and how many frames the Python _locate was asked for."""
    import io

    from analysis import profile_io
    calls = []
    python_locate = perf_data._Reader._locate

    def counted(self, *args):
        calls.append(args[1])
        return python_locate(self, *args)
    monkeypatch.setattr(perf_data._Reader, "_locate", counted)
    monkeypatch.setattr(perf_data, "COMPILED_FRAME_MISS", compiled)
    with perf_data._mapped(FIX / name) as buf:
        p = perf_data._Reader(buf, len(buf)).read()
    out = io.BytesIO()
    profile_io.dump(p, out)
    return out.getvalue(), len(calls)


@pytest.mark.parametrize("name", MISS_CAPTURES)
def test_the_compiled_frame_miss_makes_the_profile_locate_makes(name, monkeypatch):
    """replay_run's locator makes the Location and Function of a frame its cache missed
    (and fills the same tables) as _Reader._locate does: the saved profiles are the same
    byte for byte, and the Python path is not asked for a single frame."""
    compiled, asked = _saved_and_locates(name, True, monkeypatch)
    python, python_asked = _saved_and_locates(name, False, monkeypatch)
    assert compiled == python
    assert python_asked > 0 and asked == 0


def test_a_damaged_file_offset_wraps_as_perf_computes_it(monkeypatch):
    """A mapping whose file offset (address - start + pgoff) would pass 2^64 (a damaged
    or hostile MMAP record's pgoff) wraps in u64, as perf's map__map_ip computes it, in
    both paths; the profile can still be saved (orjson refused the larger int)."""
    original = perf_data._Reader._map_info

    wrapped = []

    def huge_pgoff(self, kernel, pid, m, *args):
        info = original(self, kernel, pid, m, *args)
        if info[4] == 2:  # a user mapping: its offsets are address - start + pgoff
            wrapped.append(info[6] == 0)  # 0 - 1: 2^64 - 1
            info[6] = (info[6] - 1) & ((1 << 64) - 1)
        return info
    monkeypatch.setattr(perf_data._Reader, "_map_info", huge_pgoff)
    compiled, asked = _saved_and_locates("perfdata/system-wide.perf.data", True, monkeypatch)
    python, python_asked = _saved_and_locates("perfdata/system-wide.perf.data", False,
                                              monkeypatch)
    assert compiled == python and asked == 0 < python_asked
    assert any(wrapped)
    # every user frame's offset is one below the true one, also where pgoff was 0
    with perf_data._mapped(FIX / "perfdata/system-wide.perf.data") as buf:
        damaged = perf_data._Reader(buf, len(buf)).read()
        monkeypatch.setattr(perf_data._Reader, "_map_info", original)
        true = perf_data._Reader(buf, len(buf)).read()
    offsets = {}
    for p, k in ((true, 0), (damaged, 1)):
        for loc in p.locations:
            if p.mappings[loc.mapping_id].kind == "user":
                offsets.setdefault((loc.address, loc.is_return), [None, None])[k] = \
                    loc.dso_offset
    assert offsets and all(d == t - 1 for t, d in offsets.values())


def test_a_mapping_the_compiled_miss_does_not_know_is_left_to_python(monkeypatch):
    """What the compiled frame miss does not expect of a mapping's facts (here an offset
    rule it has no code for) is left to the Python _locate, frame by frame, with the
    result the Python path gives for every frame."""
    original = perf_data._Reader._map_info

    def new_rule(self, kernel, pid, m, *args):
        info = original(self, kernel, pid, m, *args)
        if info[4] == 2:
            info[4] = 3  # (_locate_in reads any rule past 1 as address - start + pgoff)
        return info
    monkeypatch.setattr(perf_data._Reader, "_map_info", new_rule)
    compiled, asked = _saved_and_locates("perfdata/system-wide.perf.data", True, monkeypatch)
    python, python_asked = _saved_and_locates("perfdata/system-wide.perf.data", False,
                                              monkeypatch)
    assert compiled == python
    assert 0 < asked < python_asked


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


def test_locate_asks_each_frame_once_per_cache():
    """_scan.locate and locate_chain take (leaf, caller) pairs of dicts: a frame found in
    its cache is not asked again, a leaf and a caller are apart."""
    frames = ((1, 0xffffffff81000010), (2, 0x401000), (2, 0x401000), (2, 0x402000))
    blob = _chain(*(a for _, a in frames[1:]))
    for make in (dict,):
        asked = []
        kernel, user = (make(), make()), (make(), make())

        def miss(depth, mode, addr, is_kernel, *pid):
            asked.append((depth, addr, is_kernel))
            (kernel if is_kernel else user)[depth > 0][addr] = len(asked) - 1
            return len(asked) - 1
        # a caller met twice is asked once; as the chain's leaf it is a new frame
        assert _scan.locate(frames, kernel, user, 0xffff800000000000, miss) == (0, 1, 1, 2)
        assert _scan.locate_chain(blob, 0, len(blob), False, 2, 0, kernel, user,
                                  0xffff800000000000, miss) == (3, 1, 2)
        assert asked == [(0, 0xffffffff81000010, True), (1, 0x401000, False),
                         (3, 0x402000, False), (0, 0x401000, False)]
