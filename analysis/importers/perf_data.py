"""perf.data (PERFILE2), read natively: no `perf` binary, any perf version's files.

Two passes. The first walks the records once, keeping samples in compact columns with
their call chains interned, and the sideband (MMAP, MMAP2, COMM, FORK) in a list. The
second replays both in time order, as perf does, so each sample is resolved against the
maps its process had at that moment (exec, dlopen and re-mmaps change them): on columns
(analysis/perfdata/replay.py), each (process, chain) pair resolved once per generation
of its process's maps, so a chain seen 10,000 times in a steady process is resolved
once.

Frames become locations with their DSO, file offset (perf's map_ip) and build-id;
naming them is symbolization's job (step 3), until then they read `libfoo.so+0x2458`.

A damaged file is refused, never read as fewer samples than it holds; one cut short may
be kept in part, marked damaged (perfdata/damage.py says when, and why).
"""
from __future__ import annotations

import io
import mmap
import os
import shutil
import struct
import tempfile
from array import array
from operator import itemgetter

import numpy as np

from ..column_ops import view
from ..errors import ParseError
from ..perfdata import records as R
from ..offcpu.switches import (EXIT, FORK, IN, OUT, RAN, RECORD, TRACEPOINT, WAKE,
                               state_of_bits)
from ..perfdata import _scan
from ..perfdata.attr import CPU, ID, IDENTIFIER, REGS_USER, STACK_USER, STREAM_ID, TID, TIME, \
    Attr, parse_attr
from ..perfdata.damage import judge
from ..perfdata.header import (F_EVENT_DESC, MAGIC_BE, MAGIC_LE, FileHeader, Features,
                               apply_feature, parse_build_ids, read_features, read_header)
from ..perfdata.maps import AddressSpaces, Map
from ..perfdata.replay import (CTX_USER_DEFERRED, MARKER_MODE, MODE_KERNEL, MODE_USER,
                               PERF_CONTEXT_MAX, SIDE_COMM, SIDE_FORK, SIDE_MMAP, replay)
from ..perfdata.sample import BadSample, SampleReader
from ..perfdata.tracepoints import layouts
from ..profile import KERNEL, KERNEL_ADDR, NO_SAMPLES_NOTE, UNKNOWN, Function, Location, \
    Profile, unresolved_name
from ..profile_columns import take
from ..textio import GZIP_MAGIC, GzipReader, Source
from ..unwind.user_stacks import DWARF_NOTE, UserStacks

NAME = "perf-data"

_I64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1
_MISC_COMM_EXEC = 1 << 13
_MISC_MMAP_BUILD_ID = 1 << 14
_PROT_EXEC = 4
_ANON_PREFIXES = ("//anon", "/dev/zero", "/anon_hugepage", "[anon:", "/memfd:")

#: the HEADER_TRACING_DATA feature: the kernel's tracepoint format files
_F_TRACING_DATA = 1
#: bytes of records the compiled loop reads per call (and between two releases of their
#: mapped pages)
_SCAN_WINDOW = 4 << 20
#: the replay on columns (analysis.perfdata.replay); False: sample by sample
#: (_Reader._replay_rows, the reference the tests compare it with)
REPLAY_ON_COLUMNS = True
#: what the compiled loop reads of sched_switch's raw record
_SWITCH_FIELDS = ("prev_pid", "prev_state", "next_pid")
_SIDE_NAMES = {R.MMAP: "MMAP", R.MMAP2: "MMAP2", R.COMM: "COMM", R.FORK: "FORK"}


def _frame_caches() -> tuple[dict[int, int], dict[int, int]]:
    """A (leaf, caller) pair of frame caches for one address space: a frame's location
    by its address (a return address is not the sampled address, so callers apart)."""
    return {}, {}


def _dtype(column: array) -> np.dtype:
    """The numpy type of an array-module column (its typecode is numpy's too)."""
    return np.dtype(column.typecode)


def sniff_bytes(head: bytes) -> bool:
    return head[:8] in (MAGIC_LE, MAGIC_BE)


def parse(source: Source) -> Profile:
    with _mapped(source) as buf:
        return _Reader(buf, len(buf)).read()


#: a gzip-compressed perf.data may expand this much (ratio to its compressed size, plus a
#: floor), so a small upload cannot fill the disk
GZIP_MAX_RATIO = 100
GZIP_FLOOR = 64 << 20


def _gunzip(src, dst) -> None:
    src.seek(0, os.SEEK_END)
    limit = src.tell() * GZIP_MAX_RATIO + GZIP_FLOOR
    src.seek(0)
    written = 0
    with GzipReader(fileobj=src, mode="rb") as gz:  # damage is a ParseError
        while chunk := gz.read(1 << 20):
            written += len(chunk)
            if written > limit:
                raise ParseError(f"the gzip-compressed perf.data expands more than "
                                 f"{GZIP_MAX_RATIO}x; refused")
            dst.write(chunk)


class _mapped:
    """The file as a read-only buffer: mmap for plain files, a temporary file for gzip
    and for file objects that are not real files."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.tmp = None
        self.mm = None
        self.fh = None

    def __enter__(self):
        src = self.source
        if isinstance(src, (str, os.PathLike)):
            self.fh = open(src, "rb")
        else:
            self.fh = src
        if self.fh.read(2) == GZIP_MAGIC:
            self.fh.seek(0)
            self.tmp = tempfile.TemporaryFile()
            _gunzip(self.fh, self.tmp)
            target = self.tmp
        else:
            self.fh.seek(0)
            target = self.fh
        try:
            fileno = target.fileno()
        except (OSError, AttributeError, io.UnsupportedOperation):
            self.tmp = tempfile.TemporaryFile()
            shutil.copyfileobj(target, self.tmp, 1 << 20)
            target, fileno = self.tmp, self.tmp.fileno()
        if target is self.tmp:
            self.tmp.flush()
        size = os.fstat(fileno).st_size
        if size == 0:
            return b""
        self.mm = mmap.mmap(fileno, 0, access=mmap.ACCESS_READ)
        return self.mm

    def __exit__(self, *exc):
        if self.mm is not None:
            self.mm.close()
        if self.tmp is not None:
            self.tmp.close()
        if isinstance(self.source, (str, os.PathLike)) and self.fh is not None:
            self.fh.close()
        return False


class _Reader:
    def __init__(self, buf, length: int) -> None:
        self.buf = buf
        self.p = Profile(NAME)
        self.h: FileHeader = read_header(buf, length)
        self.e = self.h.endian
        self.features = Features() if self.h.pipe else read_features(buf, self.h)
        self.attrs: list[Attr] = list(self.h.attrs)
        self.by_id: dict[int, Attr] = {}
        self.targets: dict[int, tuple[SampleReader, int]] = {}  # sample id -> reader
        self.by_attr: dict[int, tuple[SampleReader, int]] = {}
        self.id_offset: int | None = None
        self.multi = False
        self.unpack_u64 = struct.Struct(self.e + "Q").unpack_from
        # sample columns (file order)
        self.c_time = array("Q")
        self.c_pid = array("i")
        self.c_tid = array("i")
        self.c_cpu = array("i")
        self.c_period = array("Q")
        self.c_event = array("i")
        self.c_chain = array("i")
        self.chain_ix: dict[tuple, int] = {}
        #: per chain id, its key in chain_ix and the sample's ip: the frames are decoded
        # from them when a stack is resolved (chain_frames), not kept as tuples of
        # (mode, address) tuples, which were 110 bytes a frame, 220 MiB at 2M samples;
        # the replay packs them first (_pack_chains)
        self.chains: list[tuple] | None = []
        self.chain_ips = array("Q")
        self.side: list[tuple] = []  # (time, seq, kind, ...)
        #: PERF_RECORD_EXIT: (time ns, pid, tid) of the threads that ended (with FORK,
        #: the bounds of the threads' timelines in the switch log)
        self.exits: list[tuple[int, int, int]] = []
        self.seq = 0  # the number of the last record read (orders sideband of one time)
        self.thread_names: dict[int, str] = {}  # THREAD_MAP: comm of threads perf saw
        self.lost = 0
        self.bad = 0  # records that do not decode with their layout
        #: (file offset, record kind, what is wrong with it, or "")
        self.first_bad: tuple[int, str, str] | None = None
        self.dwarf = False
        #: frame -> location while the maps stay the same: (leaf, caller) frame caches,
        # address -> location, per pid, and the kernel's
        self._user_frames: dict[int, tuple[dict[int, int], dict[int, int]]] = {}
        self._kernel_frames = _frame_caches()
        #: the replay's own interning, cheaper than the profile's (whose indexes are built
        # from its tables when something interns after the import; a system-wide capture
        # has ~700,000 locations, nearly each with its own unnamed function): per mapping
        # and name kind, the int the name is made of (offset or address) -> the function
        # as the (id,) its leaf and caller locations share; the stacks; one int object
        # per number, which the location, function and stack of that id share (an int
        # above 256 is a 32-byte object of its own)
        self._funcs: dict[int, dict[int, tuple[int]]] = {}
        self._stacks: dict[tuple[int, ...], int] = {}
        self._ints: list[int] = []
        #: DWARF-mode samples: file-order row -> (regs mask, registers, stack copy)
        self.snaps: dict[int, tuple[int, tuple, bytes]] = {}
        # context switches (file order): time ns, tid, pid, cpu, kind, state, the sample
        # row whose stack is the switch-out's (-1), source
        self.w_time, self.w_tid, self.w_pid = array("Q"), array("i"), array("i")
        self.w_cpu, self.w_kind, self.w_state = array("i"), array("b"), array("b")
        #: the rarer fields, only for rows that have them (a busy capture's million
        #: PERF_RECORD_SWITCH rows have none), in columns: the switch row, its sample
        #: row, source, seconds a RAN row says the thread ran, a WAKE row's waker
        self.x_at, self.x_row, self.x_src = array("i"), array("i"), array("b")
        self.x_value, self.x_peer = array("d"), array("i")
        #: the order of _scan.c's output columns
        self.scan_columns = (self.c_time, self.c_pid, self.c_tid, self.c_cpu, self.c_period,
                             self.c_event, self.c_chain, self.w_time, self.w_tid, self.w_pid,
                             self.w_cpu, self.w_kind, self.w_state, self.x_at, self.x_row,
                             self.x_src, self.x_value, self.x_peer, self.chain_ips)
        #: sample id -> the layout _scan.c decodes it by (None: `_sample` does); an id
        #: not here yet goes to `_target` first
        self.sample_specs: dict[int, bytes | None] = {}
        #: sample id -> (trailer size, offsets of pid, tid, time, cpu) of switch records
        self.switch_specs: dict[int, bytes] | None = None
        self._released = self.h.data_offset  # the mapped file up to here is dropped
        self.tracing_data: bytes | None = None
        self._layouts = None
        self._trailers: dict[int, tuple] = {}  # id(attr) -> its sample_id trailer layout

    # ---- pass 1: walk ----------------------------------------------------------------
    def read(self) -> Profile:
        self._index_attrs()
        walk = R.Walk(self.buf, self.h.data_offset, self.h.data_offset + self.h.data_size,
                      self.e)
        walk.scan = self._scan
        self.seq = 0  # (records handed to this loop, and sideband the scan decoded)
        e = self.e
        for rtype, misc, b, s, end, fpos in walk:
            self.seq += 1
            seq = self.seq
            if rtype == 9:  # SAMPLE of a layout the compiled loop leaves to `_sample`
                if not self.attrs:  # no event described (yet): nothing to decode it by
                    self._bad(fpos, "SAMPLE")
                    continue
                off = self.id_offset
                ident = self.unpack_u64(b, s + off)[0] if self.multi and off is not None \
                    else 0
                target = self.targets.get(ident) or self._target(ident)
                bad = self._sample(misc, b, s, end, target[0], target[1])
                if bad is not None:
                    self._bad(fpos, "SAMPLE", bad)
            elif rtype in (R.MMAP, R.MMAP2, R.COMM, R.FORK):
                t = self._record_time(b, s, end) or 0
                if t == 0 and not self._has_sideband_time():
                    # untimed sideband goes where it is in the file: after the last sample
                    t = self.c_time[-1] if len(self.c_time) else 0
                self._sideband(rtype, misc, b, s, end, t, seq, fpos)
            # (each kind read only when its record holds its fields: a record cut short is
            # skipped, never read into the next one's bytes or past the buffer)
            elif rtype == R.EXIT and end - s >= 16:
                pid, _ppid, tid, _ptid = struct.unpack_from(e + "iiii", b, s)
                t = self._record_time(b, s, end)
                if t:  # (an untimed one cannot end a timeline)
                    self.exits.append((t, pid, tid))
            elif rtype == R.LOST and end - s >= 16:
                self._count_lost(struct.unpack_from(e + "QQ", b, s)[1])
            elif rtype == R.LOST_SAMPLES and end - s >= 8:
                self._count_lost(struct.unpack_from(e + "Q", b, s)[0])
            elif rtype == R.HEADER_ATTR and end - s >= 8:
                self._header_attr(b, s, end)
            elif rtype == R.HEADER_TRACING_DATA and end - s >= 4:
                (extra,) = struct.unpack_from(e + "I", b, s)
                self.tracing_data = bytes(b[end:end + extra])
            elif rtype == R.HEADER_FEATURE and end - s >= 8:
                (feat,) = struct.unpack_from(e + "Q", b, s)
                try:
                    apply_feature(self.features, feat, bytes(b[s + 8:end]), e)
                except (struct.error, ValueError, IndexError):
                    self.h.warnings.append(f"feature record {feat} at byte {fpos} is "
                                           f"damaged; skipped")
                if feat == F_EVENT_DESC:
                    self._index_attrs()
            elif rtype == R.HEADER_BUILD_ID:
                self.features.build_ids.update(parse_build_ids(bytes(b[s - 8:end]), e))
            elif rtype == R.EVENT_UPDATE and end - s >= 16:
                self._event_update(b, s, end)
            elif rtype == R.THREAD_MAP and end - s >= 8:
                self._thread_map(b, s, end)
        damaged = judge(self.h, walk.stop, len(self.c_time), self.bad, self.first_bad)
        self._replay()
        self._metadata(self.h.warnings, damaged)
        return self.p

    def _bad(self, fpos: int, kind: str, what: str = "") -> None:
        self.bad += 1
        if self.first_bad is None:
            self.first_bad = (fpos, kind, what)

    def _index_attrs(self) -> None:
        for a, name, ids in self.features.event_desc:
            match = next((x for x in self.attrs if set(x.ids) & set(ids)), None)
            if match is None and len(self.features.event_desc) == len(self.attrs):
                match = self.attrs[self.features.event_desc.index((a, name, ids))]
            if match is not None:
                match.name = name
                if not match.ids:
                    match.ids = ids
        for a in self.attrs:
            for i in a.ids:
                self.by_id[i] = a
        self.targets.clear()
        self.sample_specs.clear()
        self.switch_specs = None
        self.multi = len(self.attrs) > 1
        if self.attrs:
            self.id_offset = self.attrs[0].sample_id_offset()

    def _attr_for(self, ident: int) -> Attr | None:
        if len(self.attrs) == 1 or not ident:
            return self.attrs[0] if self.attrs else None
        return self.by_id.get(ident, self.attrs[0] if self.attrs else None)

    def _target(self, ident: int) -> tuple[SampleReader, int]:
        """(reader, event id) for samples carrying `ident` (any id when one attr)."""
        target = self.targets.get(ident)
        if target is None:
            attr = self._attr_for(ident)
            key = id(attr)
            target = self.by_attr.get(key)
            if target is None:
                sched = self._sched_kind(attr)
                switch = sched is not None
                reader = SampleReader(attr, self.e, self.features.arch, want_raw=switch)
                reader.sched = sched
                if attr.sample_type & (REGS_USER | STACK_USER) and attr.exclude_callchain_user:
                    self.dwarf = True
                ev = self.p.event(attr.name or attr.default_name())
                fields = self._layout()[sched].offsets(_SWITCH_FIELDS) \
                    if sched == "sched_switch" else None
                spec = None if switch and fields is None else reader.spec(ev, fields)
                target = self.by_attr[key] = (reader, ev, spec)
            self.targets[ident] = target
            self.sample_specs[ident] = target[2]
        return target

    # ---- the compiled record loop ------------------------------------------------------
    def _scan(self, buf, pos: int, end: int) -> int:
        """Walk.scan: hand the records from `pos` to _scan.c while it takes them, and
        append what it decoded to the columns; returns where it stopped."""
        if not self.attrs:
            return pos
        if self.switch_specs is None:
            self.switch_specs = {k: struct.pack("<5q", *t)
                                 for k, t in self._switch_trailers().items()}
        sid_off = self.id_offset if self.multi and self.id_offset is not None else -1
        wid_off = (self.attrs[0].trailer_id_offset_from_end() or 0) if self.multi else 0
        # a window at a time: what it decodes is appended and the pages it read dropped
        # before the next, so neither the file nor the decoded copies pile up
        # timed sideband (MMAP, COMM, FORK) is decoded there too; untimed sideband is
        # placed after the last sample read, which only this reader knows
        side = self.side if self._has_sideband_time() else None
        while True:
            window = min(end, pos + _SCAN_WINDOW)
            new, cols, *seq = _scan.scan(buf, pos, window, self.e == ">", sid_off,
                                         self.sample_specs, wid_off, self.switch_specs,
                                         self.chain_ix, self.chains, len(self.c_time),
                                         len(self.w_time), side, self.seq)
            if seq:
                self.seq = seq[0]
            if cols is not None:
                for column, data in zip(self.scan_columns, cols):
                    if data:
                        column.frombytes(data)
            if buf is self.buf and new - self._released >= _SCAN_WINDOW:
                self._release(new)
            if new == pos or window == end:
                return new
            pos = new  # stopped at the window's edge, or at a record left to Python

    def _release(self, pos: int) -> None:
        """Drop the mapped pages of the records read so far: they are read once, and a
        big capture's file would otherwise be resident in full by the end (the reader's
        memory is then its columns, not the file). Pages read again fault back in."""
        start = self._released - self._released % mmap.PAGESIZE
        end = pos - pos % mmap.PAGESIZE
        if end > start and isinstance(self.buf, mmap.mmap):
            self.buf.madvise(mmap.MADV_DONTNEED, start, end - start)
        self._released = pos

    def _sample(self, misc: int, b, s: int, end: int, reader: SampleReader,
                ev: int) -> str | None:
        """A sample the compiled loop does not decode (READ, DWARF, LBR layouts, other
        scheduler tracepoints, the first of each event, damaged ones, which the loop
        leaves here); None when read, else what keeps it from decoding with its layout
        ("" when it is only too short for its fixed fields)."""
        try:
            ip, pid, tid, time, cpu, period, chain, branch_from, user_ip = \
                reader.read(b, s, end)
        except BadSample as e:
            return str(e)
        except struct.error:
            return ""
        mode = misc & 7
        if branch_from is not None or user_ip is not None:
            ckey = (mode, chain, branch_from, user_ip, ip)
        elif chain:
            ckey = (mode, chain)
        else:
            ckey = (mode, ip)
        cid = self.chain_ix.get(ckey)
        if cid is None:
            cid = self._intern_chain(ckey, ip)
        if reader.want_raw and reader.raw is not None:
            self._switch_sample(reader.raw, time, pid, tid, cpu, reader.sched)
            reader.raw = None
        if reader.want_stack and reader.regs is not None:
            self.snaps[len(self.c_time)] = (reader.regs_mask, reader.regs, reader.stack)
            reader.regs = reader.stack = None
        self.c_time.append(time)
        self.c_pid.append(pid)
        self.c_tid.append(tid)
        self.c_cpu.append(cpu)
        self.c_period.append(period)
        self.c_event.append(ev)
        self.c_chain.append(cid)
        return None

    def _intern_chain(self, ckey: tuple, ip: int) -> int:
        """A chain key new to chain_ix, for the samples `_sample` decodes (_scan.c
        interns those it decodes the same way: the id is the key's place in chains)."""
        cid = self.chain_ix[ckey] = len(self.chains)
        self.chains.append(ckey)
        self.chain_ips.append(ip)
        return cid

    def _pack_chains(self) -> None:
        """The replay's form of `chains`: the call chains' bytes end to end in one blob
        (a chain's key was a tuple and a bytes object, ~170 bytes beside its addresses'
        85 in a system-wide capture of 600,000 chains); other keys (no chain, branch
        records, a DWARF user leaf) stay as they are, in chain_rest."""
        chains = self.chains
        n = len(chains)
        if n and min(map(len, chains)) == 2 == max(map(len, chains)):
            # (the usual keys: loops in C, not Python's per chain; zip(*chains) makes an
            # iterator per chain, slower than the loop)
            modes, parts = list(map(itemgetter(0), chains)), list(map(itemgetter(1), chains))
            if set(map(type, parts)) != {bytes}:
                parts = None
        else:
            modes, parts = [k[0] for k in chains], None
        if parts is None:
            parts = [k[1] if len(k) == 2 and type(k[1]) is bytes else None for k in chains]
            self.chain_rest = {cid: chains[cid] for cid, b in enumerate(parts) if b is None}
            parts = [b"" if b is None else b for b in parts]
        else:
            self.chain_rest = {}
        self.chain_blob = b"".join(parts)
        ends = np.zeros(n + 1, dtype=np.int64)  # where chain i's bytes end
        np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=n), out=ends[1:])
        self.chain_ends = array("q", ends.tobytes())
        self.chain_modes = (np.fromiter(modes, dtype=np.int64, count=n) & 0xFF
                            ).astype(np.uint8).tobytes()
        self.chains = None

    def chain_frames(self, cid: int) -> tuple[tuple[int, int], ...]:
        """The frames of chain `cid`, from the key it was interned by (see chains)."""
        if self.chains is None:  # packed (the replay)
            ckey = self.chain_rest.get(cid)
            if ckey is None:
                ends = self.chain_ends
                return self.frames_py(self.chain_modes[cid], self.chain_ips[cid],
                                      self.chain_blob[ends[cid]:ends[cid + 1]], None, None)
        else:
            ckey = self.chains[cid]
        ip = self.chain_ips[cid]
        if len(ckey) == 5:  # (mode, chain, branch_from, user_ip, ip)
            return self.frames_py(ckey[0], ip, ckey[1], ckey[2], ckey[3])
        chain = ckey[1] if isinstance(ckey[1], bytes) else None  # (mode, chain | ip)
        return self.frames_py(ckey[0], ip, chain, None, None)

    def frames_py(self, mode: int, ip: int, chain: bytes | None, branch_from, user_ip
                  ) -> tuple[tuple[int, int], ...]:
        """(cpumode, address) leaf first: markers switch the mode and are dropped (the
        frames of a chain replay.chain_frames does not decode on columns, and the
        reference it is tested against)."""
        frames: list[tuple[int, int]] = []
        if chain:
            ips = struct.unpack(f"{self.e}{len(chain) // 8}Q", chain)
            cur = mode
            skip_next = False
            for v in ips:
                if skip_next:
                    skip_next = False
                    continue
                if v >= PERF_CONTEXT_MAX:
                    if v == CTX_USER_DEFERRED:
                        skip_next = True  # a cookie follows, the user stack comes later
                    cur = MARKER_MODE.get(v, cur)
                    continue
                frames.append((cur, v))
        if not frames:
            frames.append((mode, ip))
        if branch_from is not None:
            # LBR call stack: the kernel part from the chain, then the user leaf and the
            # call sites the branch records hold
            kernel = [f for f in frames if f[0] == MODE_KERNEL]
            user_leaf = next((f for f in frames if f[0] != MODE_KERNEL), (MODE_USER, ip))
            frames = kernel + [user_leaf] + [(MODE_USER, a) for a in branch_from if a]
        elif user_ip is not None and (not frames or frames[-1][0] == MODE_KERNEL):
            frames.append((MODE_USER, user_ip))  # DWARF mode: only the user leaf
        return tuple(frames)

    # ---- context switches -----------------------------------------------------------
    def _sched_kind(self, attr: Attr) -> str | None:
        """"sched_switch" or "sched_stat_runtime" for those tracepoints' attrs."""
        if attr.type != 2:  # PERF_TYPE_TRACEPOINT
            return None
        for name, layout in self._layout().items():
            if (attr.name.endswith(":" + name) if attr.name else
                    attr.config == layout.event_id):
                return name
        return None

    def _layout(self):
        if self._layouts is None:
            data = self.tracing_data
            sec = self.h.feature_sections.get(_F_TRACING_DATA)
            if data is None and sec is not None:
                data = bytes(self.buf[sec[0]:sec[0] + sec[1]])
            self._layouts = layouts(data)
        return self._layouts

    def _switch_sample(self, raw: bytes, time: int, pid: int, tid: int, cpu: int,
                       kind: str) -> None:
        """sched_switch: the sampled thread (prev) leaves the CPU from the sample's
        stack in prev_state; next_pid gets it. sched_stat_runtime: how long the thread
        ran (what `perf sched record -p`, which sees no switch-ins, times them by)."""
        layout = self._layout()[kind]
        if kind in ("sched_wakeup", "sched_waking"):
            fields = layout.read(raw, self.e, ("pid",))
            if fields is not None and fields[0] > 0:  # the sample's thread is the waker
                self._switch(time, fields[0], -1, cpu, WAKE, 0, len(self.c_time),
                             TRACEPOINT, 0.0, tid)
            return
        if kind == "sched_stat_runtime":
            fields = layout.read(raw, self.e, ("pid", "runtime"))
            if fields is not None and fields[0] > 0:
                self._switch(time, fields[0], pid, cpu, RAN, 0, -1, TRACEPOINT,
                             fields[1] / 1e9)
            return
        fields = layout.read(raw, self.e, ("prev_pid", "prev_state", "next_pid"))
        if fields is None:
            return
        prev_pid, prev_state, next_pid = fields
        row = len(self.c_time)  # the sample about to be appended
        self._switch(time, prev_pid if prev_pid > 0 else tid, pid, cpu, OUT,
                     state_of_bits(prev_state), row, TRACEPOINT)
        if next_pid > 0:
            self._switch(time, next_pid, -1, cpu, IN, 0, -1, TRACEPOINT)

    def _switch_trailers(self) -> dict:
        """ident -> (size, offsets of pid, tid, time, cpu) of the sample_id trailer of
        switch records; 0 for a single attr (or an ident not seen)."""
        out = {0: self._trailer(self.attrs[0])} if self.attrs else {}
        for a in self.attrs:
            for i in a.ids:
                out[i] = self._trailer(a)
        return out

    def _switch(self, time, tid, pid, cpu, kind, state, row, src, value=0.0,
                peer=-1) -> None:
        if row != -1 or src != RECORD or value or peer != -1:
            self.x_at.append(len(self.w_time))
            self.x_row.append(row)
            self.x_src.append(src)
            self.x_value.append(value)
            self.x_peer.append(peer)
        self.w_time.append(time)
        self.w_tid.append(tid)
        self.w_pid.append(pid)
        self.w_cpu.append(cpu)
        self.w_kind.append(kind)
        self.w_state.append(state)

    def _trailer(self, a: Attr) -> tuple[int, int, int, int, int]:
        """(size, byte offset of pid, tid, time, cpu; -1 absent) of an attr's sample_id
        trailer; size 0 when it has no time (such records cannot be placed)."""
        cache = self._trailers
        t = cache.get(id(a))
        if t is None:
            st, size, at = a.sample_type, 0, {}
            for bit, width, name in ((TID, 4, "pid"), (TID, 4, "tid"), (TIME, 8, "time"),
                                     (ID, 8, "id"), (STREAM_ID, 8, "stream"),
                                     (CPU, 4, "cpu"), (CPU, 4, "res"),
                                     (IDENTIFIER, 8, "ident")):
                if st & bit:
                    at[name] = size
                    size += width
            t = cache[id(a)] = (a.trailer_size() if a.sample_id_all and st & TIME else 0,
                                at.get("pid", -1), at.get("tid", -1), at.get("time", -1),
                                at.get("cpu", -1))
        return t

    def _switches(self, order) -> None:
        """The switch log in the profile, its stacks those of the sched_switch samples."""
        if not len(self.w_time):
            return
        stack_of = np.full(len(order), -1, dtype=np.int32)  # file-order row -> its stack
        stack_of[view(order, np.int32)] = view(self.p.s_stack, np.int32)
        log = self.p.switches
        rows = len(self.w_time)
        log.time = array("d", (view(self.w_time, np.uint64) / 1e9).tobytes())
        log.tid, log.pid, log.cpu = self.w_tid, self.w_pid, self.w_cpu
        log.kind, log.state = self.w_kind, self.w_state
        # the record rows' defaults, then the rows that say more
        log.source = array("b", [RECORD]) * rows
        log.value = array("d", [0.0]) * rows
        log.peer = array("i", [-1]) * rows
        log.stack = array("i", [-1]) * rows
        x_at = view(self.x_at, np.int32)
        for column, values in ((log.source, self.x_src), (log.value, self.x_value),
                               (log.peer, self.x_peer)):
            view(column, _dtype(column))[x_at] = view(values, _dtype(values))
        # (a row of -1: the switch has no sample; its stack stays -1)
        view(log.stack, np.int32)[x_at] = take(stack_of, view(self.x_row, np.int32), -1)

    def _has_sideband_time(self) -> bool:
        return bool(self.attrs) and self.attrs[0].sample_id_all and \
            bool(self.attrs[0].sample_type & TIME)

    def _count_lost(self, n: int) -> None:
        """Add a LOST record's count, at most perf's own u64: each count is a u64 read
        from the upload, so their sum is not bounded (a JSON writer refuses a number
        past 64 bits), and no recording loses more samples than a u64 counts."""
        self.lost = min(self.lost + n, _U64)

    def _record_time(self, b, s: int, end: int) -> int | None:
        """The TIME field of the sample_id_all trailer of a non-sample record."""
        if not self.attrs:
            return None
        a = self.attrs[0]
        if len(self.attrs) > 1:
            off = a.trailer_id_offset_from_end()
            if off is not None and end - off >= s:
                ident = struct.unpack_from(self.e + "Q", b, end - off)[0]
                a = self._attr_for(ident) or a
        size = a.trailer_size()
        if not size or not a.sample_type & TIME or end - size < s:
            return None
        pos = end - size + (8 if a.sample_type & TID else 0)
        return struct.unpack_from(self.e + "Q", b, pos)[0]

    def _sideband(self, rtype: int, misc: int, b, s: int, end: int, t: int, seq: int,
                  fpos: int) -> None:
        e = self.e
        try:
            if rtype == R.MMAP or rtype == R.MMAP2:
                pid, _tid, start, length, pgoff = struct.unpack_from(e + "iiQQQ", b, s)
                build_id = ""
                if rtype == R.MMAP2:
                    if misc & _MISC_MMAP_BUILD_ID:
                        n = b[s + 32]
                        build_id = bytes(b[s + 36:s + 36 + min(n, 20)]).hex()
                    (prot,) = struct.unpack_from(e + "I", b, s + 56)
                    name_at = s + 64
                    executable = bool(prot & _PROT_EXEC)
                else:
                    name_at = s + 32
                    executable = not misc & (1 << 13)
                if not executable:
                    return  # data mappings (perf record -d) hold no code
                raw = bytes(b[name_at:end])
                path = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
                self.side.append((t, seq, SIDE_MMAP, pid, start, length, pgoff, path,
                                  build_id, misc & 7))
            elif rtype == R.COMM:
                pid, tid = struct.unpack_from(e + "ii", b, s)
                comm = bytes(b[s + 8:end]).split(b"\0", 1)[0].decode("utf-8", "replace")
                self.side.append((t, seq, SIDE_COMM, pid, tid, comm,
                                  bool(misc & _MISC_COMM_EXEC)))
            elif rtype == R.FORK:
                pid, ppid, tid, ptid = struct.unpack_from(e + "iiii", b, s)
                self.side.append((t, seq, SIDE_FORK, pid, ppid, tid, ptid))
        except (struct.error, IndexError):
            self._bad(fpos, _SIDE_NAMES[rtype])

    def _header_attr(self, b, s: int, end: int) -> None:
        (size,) = struct.unpack_from(self.e + "I", b, s + 4)
        size = size or 64
        a = parse_attr(b, s, min(size, end - s), self.e)
        n = (end - s - size) // 8
        if n > 0:
            a.ids = list(struct.unpack_from(f"{self.e}{n}Q", b, s + size))
        if not any(set(a.ids) & set(x.ids) for x in self.attrs):
            self.attrs.append(a)
        self._index_attrs()

    def _event_update(self, b, s: int, end: int) -> None:
        utype, ident = struct.unpack_from(self.e + "QQ", b, s)
        if utype == 2:  # name
            a = self.by_id.get(ident)
            if a is not None:
                a.name = bytes(b[s + 16:end]).split(b"\0", 1)[0].decode("utf-8", "replace")

    def _thread_map(self, b, s: int, end: int) -> None:
        (nr,) = struct.unpack_from(self.e + "Q", b, s)
        for i in range(min(nr, (end - s - 8) // 24)):
            (pid,) = struct.unpack_from(self.e + "Q", b, s + 8 + 24 * i)
            comm = bytes(b[s + 16 + 24 * i:s + 32 + 24 * i]).split(b"\0", 1)[0]
            self.thread_names.setdefault(pid, comm.decode("utf-8", "replace"))

    # ---- pass 2: replay in time order ---------------------------------------------------
    def _replay(self) -> None:
        p = self.p
        side = sorted(self.side, key=lambda x: (x[0], x[1]))
        self.chain_ix = {}  # (only the scan interns chains)
        # (nor is anything scanned from here: the file-order columns can go one by one
        # as their time-order copies are made, _in_time_order)
        self.scan_columns = None
        self._pack_chains()
        # (file order among equal times, as sorted(range(n), key=times.__getitem__))
        order = array("i", np.argsort(view(self.c_time, np.uint64), kind="stable")
                      .astype(np.int32).tobytes())
        snaps = self.snaps
        user_stacks = UserStacks(self.features.arch or "x86_64") if snaps else None
        if snaps or not REPLAY_ON_COLUMNS:
            stacks, comm_col = self._replay_rows(order, side, user_stacks)
        else:
            stacks, comm_col = replay(self, order, side)
        # the replay's tables and indexes go before the columns are copied (the
        # profile's indexes are built from its tables if something interns later)
        self._funcs, self._stacks, self._ints = {}, {}, []
        p.drop_indexes()
        # the other columns are the same values in time order; each file-order column
        # is dropped as soon as its copy is made (at 2M samples they are 72 MiB)
        n = len(order)
        p.s_stack = stacks
        p.s_comm = comm_col
        self.chains, self.chain_ips = [], array("Q")
        self.chain_blob, self.chain_ends, self.chain_rest = b"", array("q"), {}
        p.s_count = None  # (every row is one sample: no column, see Profile.s_count)
        p.s_period = self._in_time_order("c_period", order)
        p.s_pid = self._in_time_order("c_pid", order)
        p.s_tid = self._in_time_order("c_tid", order)
        p.s_cpu = self._in_time_order("c_cpu", order)
        p.s_event = self._in_time_order("c_event", order)
        self.c_chain = None
        p.s_time = array("d", (view(self.c_time, np.uint64)[view(order, np.int32)] / 1e9)
                         .tobytes())  # (Python's t / 1e9: the int rounded, then divided)
        self.c_time = None
        p.user_stacks = user_stacks
        self.snaps = {}
        p.switches.recorded = any(a.context_switch or self._sched_kind(a) == "sched_switch"
                                  for a in self.attrs)
        if p.switches.recorded:
            self._lives()
        self._switches(order)
        # (-a writes one entry, -1 as a u64: all threads, none watched in particular)
        p.switches.watched = sorted(t for t in self.thread_names if 0 < t < 1 << 31)

    def _replay_rows(self, order: array, side: list, user_stacks: UserStacks | None
                     ) -> tuple[array, array]:
        """analysis.perfdata.replay sample by sample: the samples in time order, the
        sideband applied before each sample at or after its time, a (process, chain)
        pair's stack cached until that process's maps or the kernel's change, a frame's
        location cached per address space. The reference the replay on columns is
        tested against, and the replay of DWARF captures, whose samples each take a
        snapshot of their process's maps."""
        p = self.p
        spaces = AddressSpaces()
        comms: dict[int, str] = dict(self.thread_names)
        times, c_pid, c_tid, c_chain = self.c_time, self.c_pid, self.c_tid, self.c_chain
        procs_of = spaces.procs
        cache: dict[tuple[int, int], int] = {}  # (pid, chain) -> stack
        keys_of_pid: dict[int, list] = {}
        # DSO path -> four tables (offset known, unknown x leaf, caller): the frame's
        # offset (or address) -> its location
        locs: dict[str, tuple[dict[int, int], ...]] = {}
        comm_ids: dict[int, int] = {}  # tid -> string id, until the next sideband record
        stacks, comm_col = array("i"), array("i")
        snaps = self.snaps
        frozen: dict[int, int] = {}  # id(a process's map list) -> index in spaces
        held: list = []  # those lists, alive while their ids are keys
        si = 0
        for row in order:
            t = times[row]
            if si < len(side) and side[si][0] <= t:
                while si < len(side) and side[si][0] <= t:
                    changed = self._apply(side[si], spaces, comms)
                    if changed == "kernel":
                        cache.clear()
                        keys_of_pid.clear()
                        self._kernel_frames = _frame_caches()
                    elif changed is not None:
                        for k in keys_of_pid.pop(changed, ()):
                            cache.pop(k, None)
                        self._user_frames.pop(changed, None)
                    si += 1
                comm_ids.clear()
            pid = c_pid[row]
            key = (pid, c_chain[row])
            sid = cache.get(key)
            if sid is None:
                sid = cache[key] = self._resolve(c_chain[row], procs_of.get(pid), spaces,
                                                 pid, locs)
                keys_of_pid.setdefault(pid, []).append(key)
            if snaps and row in snaps:
                maps = procs_of[pid].maps if pid in procs_of else []
                space = frozen.get(id(maps))
                if space is None:
                    space = frozen[id(maps)] = len(user_stacks.spaces)
                    held.append(maps)
                    user_stacks.spaces.append(tuple(
                        (m.start, m.end, m.pgoff, *self._user_dso(m, pid,
                                                                  self.features.build_ids))
                        for m in maps))
                mask, regs, stack = snaps[row]
                user_stacks.add(len(stacks), pid, space, mask, regs, stack)
            stacks.append(sid)
            tid = c_tid[row]
            cid = comm_ids.get(tid)
            if cid is None:
                comm = comms.get(tid)
                cid = comm_ids[tid] = p.string(comm if comm is not None else f":{tid}")
            comm_col.append(cid)
        self._user_frames, self._kernel_frames = {}, _frame_caches()
        return stacks, comm_col

    def _lives(self) -> None:
        """FORK and EXIT rows in the switch log, after the switches (the thread loop
        sorts a thread's rows by time): when the threads created or ended in the window
        began and ended, so that neither the time before a thread existed nor the time
        after it exited counts as on or off CPU (issue 38). Synthesized records (time 0,
        threads that existed before perf started) say nothing about the window."""
        for ev in self.side if self._has_sideband_time() else ():
            if ev[2] == SIDE_FORK and ev[0] > 0:
                t, _, _, pid, _ppid, tid, _ptid = ev
                self._switch(t, tid, pid, -1, FORK, 0, -1, RECORD)
        for t, pid, tid in self.exits:
            self._switch(t, tid, pid, -1, EXIT, 0, -1, RECORD)
        self.exits = []

    def _in_time_order(self, name: str, order: array) -> array:
        """File-order column `name` in time order; the reader lets go of it."""
        col = getattr(self, name)
        setattr(self, name, None)
        return array(col.typecode, view(col, _dtype(col))[view(order, np.int32)].tobytes())

    @staticmethod
    def _apply(ev: tuple, spaces: AddressSpaces, comms: dict[int, str]):
        """Apply one sideband record; returns the pid whose maps changed ("kernel" for
        the kernel's), or None."""
        kind = ev[2]
        if kind == SIDE_MMAP:
            _, _, _, pid, start, length, pgoff, path, build_id, cpumode = ev
            kernel = cpumode == MODE_KERNEL or pid == -1
            spaces.mmap(pid, Map(start, start + length, pgoff, path, build_id), kernel=kernel)
            return "kernel" if kernel else pid
        if kind == SIDE_COMM:
            _, _, _, pid, tid, comm, is_exec = ev
            comms[tid] = comm
            if is_exec and pid == tid:
                spaces.exec(pid)
                return pid
            return None
        _, _, _, pid, ppid, tid, ptid = ev  # FORK
        if ptid in comms and tid not in comms:
            comms[tid] = comms[ptid]
        spaces.fork(pid, ppid)
        return pid

    def _resolve(self, cid: int, procs, spaces: AddressSpaces, pid: int, locs: dict
                 ) -> int:
        """The stack of chain `cid` in this process: each frame's location from the
        frame caches, a frame seen first in this address space from its mapping."""
        user = self._user_frames.get(pid)
        if user is None:
            user = self._user_frames[pid] = _frame_caches()
        stack = []
        for depth, (mode, addr) in enumerate(self.chain_frames(cid)):
            kernel = mode == 1 or mode == 4 or (mode == 0 and addr >= KERNEL_ADDR)
            cache = self._kernel_frames if kernel else user
            loc = cache[depth > 0].get(addr)
            if loc is None:
                m = spaces.kernel.find(addr) if kernel else \
                    (procs.find(addr) if procs else None)
                loc = cache[depth > 0][addr] = self._locate_in(
                    self._map_facts(kernel, pid, m, bool(spaces.kernel.maps)), locs, depth,
                    addr)
            stack.append(loc)
        stack = tuple(stack)
        sid = self._stacks.get(stack)
        if sid is None:  # Profile.stack
            stacks = self.p.stacks
            sid = self._stacks[stack] = self._id(len(stacks))
            stacks.append(stack)
        return sid

    def _map_facts(self, kernel: bool, pid: int, m: Map | None, kernel_maps: bool = True
                   ) -> tuple:
        """What the frames of mapping `m` of process `pid` (None: in no mapping) are
        located by, the same for all of them: (DSO path, build-id, offset rule (0 none,
        1 the address, 2 address - start + pgoff), start, pgoff, the kernel's _text
        address to record (0: none), mapping kind). `kernel_maps`: the kernel has maps
        (without any, a kernel address is the kernel's own)."""
        build_ids = self.features.build_ids
        kernel_text = 0
        if m is None and kernel and not kernel_maps:
            path, rule, bid = "[kernel.kallsyms]", 1, ""
        elif m is None:
            path, rule, bid = "[unknown]", 0, ""
        elif kernel:
            path, rule = _kernel_dso(m.path), 1
            if path == "[kernel.kallsyms]":
                kernel_text = m.pgoff  # runtime address of _text: the KASLR slide
            bid = m.build_id or build_ids.get((-1, path)) or \
                build_ids.get((-1, m.path), "")
        else:
            path, bid = self._user_dso(m, pid, build_ids)
            rule = 2
        return (path, bid, rule, m.start if m else 0, m.pgoff if m else 0, kernel_text,
                KERNEL if kernel and path != "[unknown]" else None)

    def _locate_in(self, facts: tuple, locs: dict, depth: int, addr: int) -> int:
        """The location of a frame at `addr` of a mapping with these _map_facts: one per
        (DSO path, offset or address, leaf or caller), in `locs`."""
        path, bid, rule, start, pgoff, kernel_text, kind = facts
        is_return = depth > 0  # callers: return addresses
        tables = locs.get(path)
        if tables is None:  # (offset or address -> location)
            tables = locs[path] = ({}, {}, {}, {})
        if rule == 0:
            offset, table, value = None, tables[2 + is_return], addr
        else:
            # (perf's map__map_ip, in u64: a damaged pgoff wraps, as there)
            offset = addr if rule == 1 else (addr - start + pgoff) & _U64
            table, value = tables[is_return], offset
        loc = table.get(value)
        if loc is None:
            p = self.p
            mid = p.mapping(path, kind=kind, build_id=bid)
            if kernel_text:
                p.mappings[mid].pgoff = kernel_text
            loc = table[value] = self._unnamed_location(mid, addr, offset, is_return)
        return loc

    def _unnamed_location(self, mid: int, addr: int, offset: int | None,
                          is_return: bool) -> int:
        """Profile.add_unnamed_location, its function interned by the int its name is
        made of (unresolved_name: within one mapping the offset, or the address, gives
        one name) instead of by (name, mapping, False)."""
        p = self.p
        kind = p.mappings[mid].kind
        by_offset = offset is not None and kind != KERNEL and kind != UNKNOWN
        named = self._funcs.get(2 * mid + by_offset)
        if named is None:
            named = self._funcs[2 * mid + by_offset] = {}
        value = offset if by_offset else addr
        functions = named.get(value)
        if functions is None:
            fid = self._id(len(p.functions))
            functions = named[value] = (fid,)
            p.functions.append(Function(fid, unresolved_name(p, mid, addr, offset),
                                        "[unknown]", mid, False))
        ix = self._id(len(p.locations))
        p.locations.append(Location(ix, mid, addr, functions, offset, None, is_return))
        return ix

    def _id(self, n: int) -> int:
        """The shared int object `n` (see _ints)."""
        ints = self._ints
        if n >= len(ints):
            ints.extend(range(len(ints), n + 4096))
        return ints[n]

    @staticmethod
    def _user_dso(m: Map, pid: int, build_ids: dict) -> tuple[str, str]:
        """(path, build-id) of a user-space mapping: anonymous executable memory is JIT
        code named by perf-PID.map; the build-id from the record or the header."""
        path = m.path
        if path.startswith(_ANON_PREFIXES):
            path = f"/tmp/perf-{pid}.map"
        return path, m.build_id or build_ids.get((pid, m.path)) or \
            build_ids.get((-1, m.path), "")

    # ---- metadata -------------------------------------------------------------------------
    def _metadata(self, warnings: list[str], damaged: str | None) -> None:
        p, f, meta = self.p, self.features, self.p.meta
        meta.hostname, meta.os_release, meta.arch = f.hostname, f.os_release, f.arch
        meta.perf_version, meta.cpu_desc = f.perf_version, f.cpu_desc
        meta.cpus_online, meta.cpus_available = f.cpus_online, f.cpus_available
        meta.cmdline = " ".join(f.cmdline) if f.cmdline else None
        if f.first_sample_ns is not None and f.last_sample_ns and \
                f.last_sample_ns > f.first_sample_ns:
            meta.duration_s = (f.last_sample_ns - f.first_sample_ns) / 1e9
        meta.lost_samples = self.lost
        # every sampling event is listed, also those without samples; the dummy event
        # that -a adds for sideband is not one
        for a in self.attrs:
            if a.is_dummy:
                continue
            ev = p.events[p.event(a.name or a.default_name())]
            if a.freq:
                ev.frequency = float(a.sample_period_or_freq)
            elif a.sample_period_or_freq:
                ev.period = a.sample_period_or_freq
        if damaged:
            meta.damaged = damaged
            p.notes.append(damaged)
        p.notes.extend(warnings)
        if self.lost:
            p.notes.append(f"perf lost {self.lost} samples while recording (its buffers "
                           f"overflowed); shares are of the samples it kept")
        if self.dwarf:
            p.notes.append(DWARF_NOTE)
        if not len(p):
            p.notes.append(NO_SAMPLES_NOTE)


def _kernel_dso(path: str) -> str:
    """`[kernel.kallsyms]_text` -> `[kernel.kallsyms]`; a module file -> `[module]`."""
    if path.startswith("[kernel.kallsyms]"):
        return "[kernel.kallsyms]"
    base = path.rsplit("/", 1)[-1]
    for ext in (".ko.xz", ".ko.zst", ".ko.gz", ".ko"):
        if base.endswith(ext):
            return "[" + base[:-len(ext)].replace("-", "_") + "]"
    return path

