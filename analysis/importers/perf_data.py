"""perf.data (PERFILE2), read natively: no `perf` binary, any perf version's files.

Two passes. The first walks the records once, keeping samples in compact columns with
their call chains interned, and the sideband (MMAP, MMAP2, COMM, FORK) in a list. The
second replays both in time order, as perf does, so each sample is resolved against the
maps its process had at that moment (exec, dlopen and re-mmaps change them); resolution
is cached per (process, maps generation, chain), so a chain seen 10,000 times in a
steady process is resolved once.

Frames become locations with their DSO, file offset (perf's map_ip) and build-id;
naming them is symbolization's job (step 3), until then they read `libfoo.so+0x2458`.
"""
from __future__ import annotations

import gzip
import mmap
import os
import shutil
import struct
import tempfile
from array import array

from ..perfdata import records as R
from ..perfdata.attr import REGS_USER, STACK_USER, TID, TIME, Attr, parse_attr
from ..perfdata.header import (FileHeader, Features, apply_feature, parse_build_ids,
                               read_features, read_header)
from ..perfdata.maps import AddressSpaces, Map
from ..perfdata.sample import SampleReader
from ..profile import KERNEL, UNKNOWN, Profile, unresolved_name
from ..textio import Source

NAME = "perf-data"

PERF_CONTEXT_MAX = 0xFFFFFFFFFFFFF001  # values at or above are context markers
_CTX_KERNEL, _CTX_USER = 0xFFFFFFFFFFFFFF80, 0xFFFFFFFFFFFFFE00
_CTX_GUEST_KERNEL, _CTX_GUEST_USER = 0xFFFFFFFFFFFFF780, 0xFFFFFFFFFFFFF600
_CTX_HV, _CTX_GUEST = 0xFFFFFFFFFFFFFFE0, 0xFFFFFFFFFFFFF800
_CTX_USER_DEFERRED = 0xFFFFFFFFFFFFFD80
MODE_KERNEL, MODE_USER = 1, 2
_MARKER_MODE = {_CTX_KERNEL: MODE_KERNEL, _CTX_USER: MODE_USER, _CTX_HV: 3,
                _CTX_GUEST_KERNEL: 4, _CTX_GUEST_USER: 5, _CTX_GUEST: 4}
_MISC_COMM_EXEC = 1 << 13
_MISC_MMAP_BUILD_ID = 1 << 14
_PROT_EXEC = 4
_ANON_PREFIXES = ("//anon", "/dev/zero", "/anon_hugepage", "[anon:", "/memfd:")

_SIDE_MMAP, _SIDE_COMM, _SIDE_FORK = 0, 1, 2


def sniff_bytes(head: bytes) -> bool:
    return head[:8] in (b"PERFILE2", b"2ELIFREP")


def parse(source: Source) -> Profile:
    with _mapped(source) as buf:
        return _Reader(buf, len(buf)).read()


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
        if self.fh.read(2) == b"\x1f\x8b":
            self.fh.seek(0)
            self.tmp = tempfile.TemporaryFile()
            with gzip.GzipFile(fileobj=self.fh) as gz:
                shutil.copyfileobj(gz, self.tmp, 1 << 20)
            target = self.tmp
        else:
            self.fh.seek(0)
            target = self.fh
        try:
            fileno = target.fileno()
        except (OSError, AttributeError):
            self.tmp = tempfile.TemporaryFile()
            shutil.copyfileobj(target, self.tmp, 1 << 20)
            target, fileno = self.tmp, self.tmp.fileno()
        target.flush() if hasattr(target, "flush") else None
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
        self.buf, self.length = buf, length
        self.p = Profile(NAME)
        self.h: FileHeader = read_header(buf, length)
        self.e = self.h.endian
        self.features = Features() if self.h.pipe else read_features(buf, self.h)
        self.attrs: list[Attr] = list(self.h.attrs)
        self.by_id: dict[int, Attr] = {}
        self.readers: dict[int, SampleReader] = {}
        self.event_of_attr: dict[int, int] = {}
        # sample columns (file order)
        self.c_time = array("q")
        self.c_pid = array("i")
        self.c_tid = array("i")
        self.c_cpu = array("i")
        self.c_period = array("q")
        self.c_event = array("i")
        self.c_chain = array("i")
        self.chain_ix: dict[tuple, int] = {}
        self.chains: list[tuple[tuple[int, int], ...]] = []  # (mode, address) leaf first
        self.side: list[tuple] = []  # (time, seq, kind, ...)
        self.thread_names: dict[int, str] = {}  # THREAD_MAP: comm of threads perf saw
        self.lost = 0
        self.bad_samples = 0
        self.dwarf = False

    # ---- pass 1: walk ----------------------------------------------------------------
    def read(self) -> Profile:
        self._index_attrs()
        walk = R.Walk(self.buf, self.h.data_offset, self.h.data_offset + self.h.data_size,
                      self.e)
        last_time = 0
        seq = 0
        e = self.e
        for rtype, misc, b, s, end, fpos in walk:
            seq += 1
            if rtype == R.SAMPLE:
                t = self._sample(misc, b, s, end)
                if t is not None:
                    last_time = t
            elif rtype in (R.MMAP, R.MMAP2, R.COMM, R.FORK):
                t = self._record_time(b, s, end) or 0
                if t == 0 and not self._has_sideband_time():
                    t = last_time
                self._sideband(rtype, misc, b, s, end, t, seq)
            elif rtype == R.LOST:
                self.lost += struct.unpack_from(e + "QQ", b, s)[1]
            elif rtype == R.LOST_SAMPLES:
                self.lost += struct.unpack_from(e + "Q", b, s)[0]
            elif rtype == R.HEADER_ATTR:
                self._header_attr(b, s, end)
            elif rtype == R.HEADER_FEATURE:
                (feat,) = struct.unpack_from(e + "Q", b, s)
                try:
                    apply_feature(self.features, feat, bytes(b[s + 8:end]), e)
                except (struct.error, ValueError, IndexError):
                    self.h.warnings.append(f"feature record {feat} at byte {fpos} is "
                                           f"damaged; skipped")
                if feat == 12:
                    self._index_attrs()
            elif rtype == R.HEADER_BUILD_ID:
                self.features.build_ids.update(parse_build_ids(bytes(b[s - 8:end]), e))
            elif rtype == R.EVENT_UPDATE:
                self._event_update(b, s, end)
            elif rtype == R.THREAD_MAP:
                self._thread_map(b, s, end)
        warnings = self.h.warnings + walk.warnings
        self._replay()
        self._metadata(warnings)
        return self.p

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

    def _attr_for(self, ident: int) -> Attr | None:
        if len(self.attrs) == 1 or not ident:
            return self.attrs[0] if self.attrs else None
        return self.by_id.get(ident, self.attrs[0] if self.attrs else None)

    def _sample(self, misc: int, b, s: int, end: int) -> int | None:
        attrs = self.attrs
        if not attrs:
            self.bad_samples += 1
            return None
        a0 = attrs[0]
        if len(attrs) > 1:
            off = a0.sample_id_offset()
            ident = struct.unpack_from(self.e + "Q", b, s + off)[0] if off is not None else 0
            attr = self._attr_for(ident)
        else:
            attr = a0
        key = id(attr)
        reader = self.readers.get(key)
        if reader is None:
            reader = self.readers[key] = SampleReader(attr, self.e, self.features.arch)
            if attr.sample_type & (REGS_USER | STACK_USER) and attr.exclude_callchain_user:
                self.dwarf = True
        try:
            smp = reader.read(b, s, end)
        except struct.error:
            self.bad_samples += 1
            return None
        mode = misc & 7
        if smp.branch_from is not None and smp.chain is not None:
            ckey = (mode, smp.chain, smp.branch_from, smp.ip)
        elif smp.user_ip is not None:
            ckey = (mode, smp.chain, smp.user_ip, smp.ip)
        elif smp.chain:
            ckey = (mode, smp.chain)
        else:
            ckey = (mode, smp.ip)
        cid = self.chain_ix.get(ckey)
        if cid is None:
            cid = self.chain_ix[ckey] = len(self.chains)
            self.chains.append(self._frames(mode, smp))
        ev = self.event_of_attr.get(key)
        if ev is None:
            ev = self.event_of_attr[key] = self.p.event(attr.name or attr.default_name())
        self.c_time.append(smp.time)
        self.c_pid.append(smp.pid)
        self.c_tid.append(smp.tid)
        self.c_cpu.append(smp.cpu)
        self.c_period.append(smp.period)
        self.c_event.append(ev)
        self.c_chain.append(cid)
        return smp.time

    def _frames(self, mode: int, smp) -> tuple[tuple[int, int], ...]:
        """(cpumode, address) leaf first: markers switch the mode and are dropped."""
        frames: list[tuple[int, int]] = []
        if smp.chain:
            ips = struct.unpack(f"{self.e}{len(smp.chain) // 8}Q", smp.chain)
            cur = mode
            skip_next = False
            for v in ips:
                if skip_next:
                    skip_next = False
                    continue
                if v >= PERF_CONTEXT_MAX:
                    if v == _CTX_USER_DEFERRED:
                        skip_next = True  # a cookie follows, the user stack comes later
                    cur = _MARKER_MODE.get(v, cur)
                    continue
                frames.append((cur, v))
        if not frames:
            frames.append((mode, smp.ip))
        if smp.branch_from is not None:
            # LBR call stack: the kernel part from the chain, then the user leaf and the
            # call sites the branch records hold
            kernel = [f for f in frames if f[0] == MODE_KERNEL]
            user_leaf = next((f for f in frames if f[0] != MODE_KERNEL), (MODE_USER, smp.ip))
            frames = kernel + [user_leaf] + [(MODE_USER, a) for a in smp.branch_from if a]
        elif smp.user_ip is not None and (not frames or frames[-1][0] == MODE_KERNEL):
            frames.append((MODE_USER, smp.user_ip))  # DWARF mode: only the user leaf
        return tuple(frames)

    def _has_sideband_time(self) -> bool:
        return bool(self.attrs) and self.attrs[0].sample_id_all and \
            bool(self.attrs[0].sample_type & TIME)

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

    def _sideband(self, rtype: int, misc: int, b, s: int, end: int, t: int, seq: int) -> None:
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
                raw = bytes(b[name_at:end])
                path = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
                self.side.append((t, seq, _SIDE_MMAP, pid, start, length, pgoff, path,
                                  build_id, executable, misc & 7))
            elif rtype == R.COMM:
                pid, tid = struct.unpack_from(e + "ii", b, s)
                comm = bytes(b[s + 8:end]).split(b"\0", 1)[0].decode("utf-8", "replace")
                self.side.append((t, seq, _SIDE_COMM, pid, tid, comm,
                                  bool(misc & _MISC_COMM_EXEC)))
            elif rtype == R.FORK:
                pid, ppid, tid, ptid = struct.unpack_from(e + "iiii", b, s)
                self.side.append((t, seq, _SIDE_FORK, pid, ppid, tid, ptid))
        except (struct.error, IndexError):
            self.h.warnings.append(f"a damaged record of type {rtype} was skipped")

    def _header_attr(self, b, s: int, end: int) -> None:
        (size,) = struct.unpack_from(self.e + "I", b, s + 4)
        size = size or 64
        a = parse_attr(b, s, min(size, end - s), self.e)
        n = (end - s - size) // 8
        if n > 0:
            a.ids = list(struct.unpack_from(f"{self.e}{n}Q", b, s + size))
        if not any(set(a.ids) & set(x.ids) for x in self.attrs):
            self.attrs.append(a)
        for i in a.ids:
            self.by_id[i] = a

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
        spaces = AddressSpaces()
        comms: dict[int, str] = dict(self.thread_names)
        side = sorted(self.side, key=lambda x: (x[0], x[1]))
        times = self.c_time
        order = sorted(range(len(times)), key=times.__getitem__)
        cache: dict[tuple[int, int, int], int] = {}
        locs: dict[tuple, int] = {}
        si, n_side = 0, len(side)
        build_ids = self.features.build_ids
        comm_ids: dict[str, int] = {}
        for row in order:
            t = times[row]
            while si < n_side and side[si][0] <= t:
                self._apply(side[si], spaces, comms)
                si += 1
            pid, tid = self.c_pid[row], self.c_tid[row]
            chain_id = self.c_chain[row]
            procs = spaces.procs.get(pid)
            gen = procs.generation if procs is not None else 0
            key = (pid, gen, spaces.kernel.generation, chain_id)
            sid = cache.get(key)
            if sid is None:
                sid = cache[key] = self._resolve(self.chains[chain_id], procs, spaces, pid,
                                                 locs, build_ids)
            comm = comms.get(tid)
            if comm is None:
                comm = f":{tid}"
            cid = comm_ids.get(comm)
            if cid is None:
                cid = comm_ids[comm] = p.string(comm)
            p.add_sample(sid, period=self.c_period[row], pid=pid, tid=tid,
                         cpu=self.c_cpu[row], time=t / 1e9, event_id=self.c_event[row],
                         comm_id=cid)

    @staticmethod
    def _apply(ev: tuple, spaces: AddressSpaces, comms: dict[int, str]) -> None:
        kind = ev[2]
        if kind == _SIDE_MMAP:
            _, _, _, pid, start, length, pgoff, path, build_id, executable, cpumode = ev
            if not executable:
                return
            spaces.mmap(pid, Map(start, start + length, pgoff, path, build_id, executable),
                        kernel=cpumode == MODE_KERNEL)
        elif kind == _SIDE_COMM:
            _, _, _, pid, tid, comm, is_exec = ev
            if is_exec and pid == tid:
                spaces.exec(pid)
            comms[tid] = comm
        elif kind == _SIDE_FORK:
            _, _, _, pid, ppid, tid, ptid = ev
            spaces.fork(pid, ppid)
            if ptid in comms and tid not in comms:
                comms[tid] = comms[ptid]

    def _resolve(self, frames, procs, spaces: AddressSpaces, pid: int, locs: dict,
                 build_ids: dict) -> int:
        p = self.p
        ids = []
        for mode, addr in frames:
            kernel = mode in (MODE_KERNEL, 4) or (mode == 0 and addr >= 0xffff800000000000)
            m = spaces.kernel.find(addr) if kernel else (procs.find(addr) if procs else None)
            if m is None and kernel and not spaces.kernel.maps:
                path, offset, bid = "[kernel.kallsyms]", addr, ""
            elif m is None:
                path, offset, bid = "[unknown]", None, ""
            elif kernel:
                path, offset = _kernel_dso(m.path), addr
                bid = m.build_id or build_ids.get((-1, path)) or \
                    build_ids.get((-1, m.path), "")
            else:
                path = m.path
                if path.startswith(_ANON_PREFIXES):
                    path = f"/tmp/perf-{pid}.map"
                offset = addr - m.start + m.pgoff
                bid = m.build_id or build_ids.get((pid, m.path)) or \
                    build_ids.get((-1, m.path), "")
            key = (path, offset if offset is not None else addr, offset is None)
            loc = locs.get(key)
            if loc is None:
                mid = p.mapping(path, kind=KERNEL if kernel and path != "[unknown]" else None,
                                build_id=bid)
                if bid and not p.mappings[mid].build_id:
                    p.mappings[mid].build_id = bid
                mapping = p.mappings[mid]
                name = unresolved_name(p, mid, addr, offset if mapping.kind != UNKNOWN
                                       else None)
                fid = p.function(name, mid, resolved=False, system_name="[unknown]")
                loc = locs[key] = p.add_location(mid, addr, (fid,), dso_offset=offset)
            ids.append(loc)
        return p.stack(tuple(ids))

    # ---- metadata -------------------------------------------------------------------------
    def _metadata(self, warnings: list[str]) -> None:
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
        p.notes.extend(warnings)
        if self.lost:
            p.notes.append(f"perf lost {self.lost} samples while recording (its buffers "
                           f"overflowed); shares are of the samples it kept")
        if self.bad_samples:
            p.notes.append(f"{self.bad_samples} damaged samples were skipped")
        if self.dwarf:
            p.notes.append("recorded with --call-graph dwarf: kernel frames and the "
                           "user-space leaf are shown; the user frames above the leaf need "
                           "DWARF unwinding of the saved stacks, which perfweb does not do "
                           "yet")
        if not len(p):
            p.notes.append("the capture holds no samples: the process did not run on a CPU "
                           "while perf recorded (idle, 0% CPU)")


def _kernel_dso(path: str) -> str:
    """`[kernel.kallsyms]_text` -> `[kernel.kallsyms]`; a module file -> `[module]`."""
    if path.startswith("[kernel.kallsyms]"):
        return "[kernel.kallsyms]"
    base = path.rsplit("/", 1)[-1]
    for ext in (".ko.xz", ".ko.zst", ".ko.gz", ".ko"):
        if base.endswith(ext):
            return "[" + base[:-len(ext)].replace("-", "_") + "]"
    return path

