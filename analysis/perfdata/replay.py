"""The replay of a perf.data file on columns: each sample's stack and thread name from the
maps and names of its time, each distinct thing resolved once.

perf resolves a sample's addresses against the process maps as they were when it was
taken (MMAP/MMAP2, FORK and an exec COMM change them; perf_data._Reader._apply). Walked
sample by sample in time order, a (process, call chain) pair's stack stays the same
while neither that process's maps nor the kernel's change. Here that is a key: (pid,
chain, the process's generation, the kernel's generation), a generation being the number
of changes to those maps before the sample; each key is resolved once, against the maps
of its generation, and so is each distinct frame, each location and each thread name.
Ids (locations, functions, mappings, stacks, strings) come out in the order the walk
sample by sample gave them (_Reader._replay_rows, the reference the tests compare this
with): the order in which each is first met in (time, frame) order.
"""
from __future__ import annotations

import bisect
from array import array

import numpy as np

from ..column_ops import (dense_ids, dense_ids_by_lead, dense_ids_in_chunks, distinct_rows,
                          view)
from ..location_table import HAS_DSO, RETURN, LocationTable
from ..profile import KERNEL, KERNEL_ADDR, UNKNOWN, Function, unresolved_name
from ..profile_columns import Csr, index_type
from ..stack_table import StackTable

PERF_CONTEXT_MAX = 0xFFFFFFFFFFFFF001  # values at or above are context markers
CTX_USER_DEFERRED = 0xFFFFFFFFFFFFFD80  # (a cookie follows; the user stack comes later)
MODE_KERNEL, MODE_USER = 1, 2
#: perf_event.h's context markers -> the cpumode of the frames after them (another
#: marker value leaves the mode as it was)
MARKER_MODE = {0xFFFFFFFFFFFFFF80: MODE_KERNEL, 0xFFFFFFFFFFFFFE00: MODE_USER,
               0xFFFFFFFFFFFFFFE0: 3, 0xFFFFFFFFFFFFF780: 4, 0xFFFFFFFFFFFFF600: 5,
               0xFFFFFFFFFFFFF800: 4}
SIDE_MMAP, SIDE_COMM, SIDE_FORK = 0, 1, 2
_U64 = (1 << 64) - 1
_SPACE_BISECT = 64  # (a space with fewer frames is searched by bisect, not numpy)
#: chains chain_frames decodes at a time; frames numbered, and stacks' frames hashed,
#: at a time (a sort of a million frames by space, address and kind took 80 MiB, the
#: import's peak)
CHAIN_CHUNK, FRAME_CHUNK = 1 << 16, 1 << 18


def is_kernel(mode: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """A frame is the kernel's by its cpumode (kernel, guest kernel), or, when the
    chain gave none, by its address."""
    return (mode == 1) | (mode == 4) | ((mode == 0) & (addr >= np.uint64(KERNEL_ADDR)))


def changes(side: list) -> tuple[np.ndarray, np.ndarray]:
    """Per sideband record: whether it changes the kernel's maps, and the pid whose maps
    it changes (-2**31 - 1: none), as _Reader._apply says."""
    kernel = np.zeros(len(side), dtype=bool)
    pid = np.full(len(side), -(1 << 31) - 1, dtype=np.int64)
    for j, ev in enumerate(side):
        kind = ev[2]
        if kind == SIDE_MMAP:
            if ev[9] == MODE_KERNEL or ev[3] == -1:
                kernel[j] = True
            else:
                pid[j] = ev[3]
        elif kind == SIDE_COMM:
            if ev[6] and ev[3] == ev[4]:
                pid[j] = ev[3]
        else:
            pid[j] = ev[3]
    return kernel, pid


class Generations:
    """(the kernel's generation, the process's) of samples: how many of the sideband
    records before each (seg of them) changed those maps."""

    def __init__(self, side: list) -> None:
        k_change, p_change = changes(side)
        self.kernel = np.concatenate(([0], np.cumsum(k_change)))
        at = np.flatnonzero(p_change >= -(1 << 31))
        # (pid, record) as one int64 key, the pid moved to 0..2^32-1
        self.keys = np.sort(((p_change[at] + (1 << 31)) << 32) | at)
        self.ix = index_type(len(side) + 1)

    def of(self, pids: np.ndarray, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        base = (pids.astype(np.int64) + (1 << 31)) << 32
        process = np.searchsorted(self.keys, base | seg, side="left") - \
            np.searchsorted(self.keys, base, side="left")
        return self.kernel[seg].astype(self.ix), process.astype(self.ix)


def generations(pids: np.ndarray, seg: np.ndarray, side: list
                ) -> tuple[np.ndarray, np.ndarray]:
    """Generations(side).of(pids, seg)."""
    return Generations(side).of(pids, seg)


def chain_frames(r, chains: np.ndarray, chunk: int = CHAIN_CHUNK
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frames of these chain ids, leaf first: (each chain's first frame, n + 1 of
    them; each frame's cpumode; its address). A packed chain is decoded as
    _Reader.frames_py decodes it: markers set the mode and are dropped, a chain with no
    address is its sample's ip; the others (branch records, a DWARF user leaf, no chain,
    a deferred user stack, whose marker hides the value after it) by
    _Reader.chain_frames. `chunk` chains at a time: the decoding's temporaries are
    about 50 bytes a raw frame (150 MiB at once for bench-size's 2M samples)."""
    is_rest = np.zeros(len(r.chain_modes), dtype=bool)
    is_rest[np.fromiter(r.chain_rest, dtype=np.int64, count=len(r.chain_rest))] = True
    parts = [_chain_frames(r, chains[a:a + chunk], is_rest[chains[a:a + chunk]])
             for a in range(0, len(chains), chunk)]
    first = np.zeros(len(chains) + 1, dtype=np.int64)
    if parts:
        np.cumsum(np.concatenate([c for c, _, _ in parts]), out=first[1:])
        return first, np.concatenate([m for _, m, _ in parts]), \
            np.concatenate([a for _, _, a in parts])
    return first, np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.uint64)


def _chain_frames(r, chains: np.ndarray, rest: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """chain_frames of a chunk: (each chain's frame count, the modes, the addresses);
    `rest`: the chains not packed (r.chain_rest's)."""
    blob = np.frombuffer(r.chain_blob, dtype=np.dtype(">u8" if r.e == ">" else "<u8"))
    packed = Csr(np.frombuffer(r.chain_ends, dtype=np.int64) // 8, blob)
    modes = np.frombuffer(r.chain_modes, dtype=np.int8)
    ips = view(r.chain_ips, np.uint64)
    plain = np.flatnonzero(~rest)
    pos, owner = packed.gather(chains[plain])
    deferred = owner[blob[pos] == np.uint64(CTX_USER_DEFERRED)]
    if len(deferred):
        rest[plain[deferred]] = True
        plain = np.flatnonzero(~rest)
        pos, owner = packed.gather(chains[plain])
    v = blob[pos].astype(np.uint64)
    # each frame's mode: that of the last marker with a mode before it in its chain,
    # else the chain's
    set_to = np.full(len(v), -1, dtype=np.int8)
    for value, mode in MARKER_MODE.items():
        set_to[v == np.uint64(value)] = mode
    last = np.where(set_to >= 0, np.arange(len(v), dtype=index_type(len(v))), -1)
    np.maximum.accumulate(last, out=last)
    lengths = packed.lengths(chains[plain])
    own = last >= (np.cumsum(lengths) - lengths)[owner]
    mode = np.where(own, set_to[np.maximum(last, 0)], modes[chains[plain]][owner])
    frame = v < np.uint64(PERF_CONTEXT_MAX)
    listed = np.bincount(owner[frame], minlength=len(plain))  # a plain chain's frames
    counts = np.zeros(len(chains), dtype=np.int64)
    counts[plain] = listed
    empty = plain[counts[plain] == 0]
    counts[empty] = 1  # (no address: the sample's ip)
    others = dict(zip(np.flatnonzero(rest).tolist(),
                      map(r.chain_frames, chains[rest].tolist())))
    for i, frames in others.items():
        counts[i] = len(frames)
    first = np.zeros(len(chains) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    out_mode = np.empty(int(first[-1]), dtype=np.int8)
    out_addr = np.empty(int(first[-1]), dtype=np.uint64)
    # (gather keeps the chains' order: a plain chain's frames go to its first place on)
    f_owner = owner[frame]
    done = np.cumsum(listed) - listed  # the frames of the plain chains before
    at = (first[plain] - done)[f_owner] + np.arange(len(f_owner))
    out_mode[at], out_addr[at] = mode[frame], v[frame]
    out_mode[first[empty]] = modes[chains[empty]]
    out_addr[first[empty]] = ips[chains[empty]]
    for i, frames in others.items():
        for d, (m, addr) in enumerate(frames):
            out_mode[first[i] + d], out_addr[first[i] + d] = m, addr
    return counts, out_mode, out_addr


def replay(r, order: array, side: list) -> tuple[array, array]:
    """(each sample's stack id, its thread name's string id), the samples in time order
    (`order`), the sideband records sorted by time (`side`); the locations, functions,
    mappings and stacks are made in the reader's profile as the walk made them. (The
    steps are functions so that each one's temporaries are gone before the next: at
    2M samples, a column of the samples is 8 or 16 MiB.)"""
    p = r.p
    key_of, keys, comm_of, (c_tid, c_seg) = _sample_keys(r, view(order, np.int32), side)
    first, frame_of, (d_space, d_addr, d_ret), (s_kernel, s_pid, s_seg) = \
        _distinct_frames(r, keys)
    snaps, comm_ids = _walk(r, side, s_seg, s_kernel, s_pid, c_tid, c_seg)
    loc_of_frame = _locate(r, snaps, d_space, d_addr, d_ret, s_kernel, s_pid)
    del snaps, d_space, d_addr, d_ret
    # the stacks: each key's locations, numbered as Profile.stack numbers them
    locs = loc_of_frame.astype(np.int32)[frame_of] if len(frame_of) else \
        np.zeros(0, dtype=np.int32)
    del frame_of
    sid_of_key, rows = distinct_rows(first, locs, chunk=FRAME_CHUNK)
    p.stacks = StackTable.of_rows(first, locs, rows)
    return (array("i", sid_of_key.astype(np.int32)[key_of].tobytes()),
            array("i", np.asarray(comm_ids, dtype=np.int32)[comm_of].tobytes()))


def _sample_keys(r, rows: np.ndarray, side: list):
    """(each sample's key id; the keys' pid, chain, kernel generation, process
    generation and sideband position where first met; each sample's (thread, sideband
    position) id; those pairs' columns), the samples in time order (`rows`)."""
    gens = Generations(side)
    # the sideband records applied before each sample
    seg = np.searchsorted(np.array([ev[0] for ev in side], dtype=np.uint64),
                          view(r.c_time, np.uint64)[rows], side="right").astype(gens.ix)
    pid = view(r.c_pid, np.int32)[rows]
    chain = view(r.c_chain, np.int32)[rows]
    key_of, keys = dense_ids_by_lead(chain, len(r.chain_ips), pid, *gens.of(pid, seg))
    del pid, chain
    k_seg = seg[_first_rows(key_of, len(keys[0]))] if len(rows) else seg[:0]
    comm_of, pairs = dense_ids(view(r.c_tid, np.int32)[rows], seg)
    return key_of, (keys[1], keys[0], keys[2], keys[3], k_seg), \
        comm_of.astype(index_type(len(pairs[0]))), pairs


def _distinct_frames(r, keys):
    """(where each key's frames start, n + 1 of them; each frame's distinct frame id;
    the distinct frames' space, address and whether a return address; the spaces'
    kernel flag, pid and the sideband position where each is first needed)."""
    k_pid, k_chain, k_kgen, k_pgen, k_seg = keys  # (each key's)
    # every key's frames, and each distinct frame (its address in the maps of its space:
    # the kernel's of a kernel generation, a process's of its generation)
    first, f_mode, f_addr = chain_frames(r, k_chain.astype(np.int64))
    lengths = np.diff(first)
    f_key = np.repeat(np.arange(len(k_pid), dtype=index_type(len(k_pid))), lengths)
    kernel = is_kernel(f_mode, f_addr)
    del f_mode
    f_ret = np.ones(len(f_key), dtype=bool)
    f_ret[first[:-1][lengths > 0]] = False  # (the leaf: not a return address)
    space_of, (s_kernel, s_pid, s_gen) = dense_ids(
        kernel.view(np.int8), np.where(kernel, 0, k_pid[f_key]),
        np.where(kernel, k_kgen[f_key], k_pgen[f_key]))
    del kernel
    frame_of, (d_space, d_addr, d_ret) = dense_ids_in_chunks(
        space_of, f_addr, f_ret.view(np.int8), chunk=FRAME_CHUNK)
    del f_addr, f_ret
    s_kernel, d_ret = s_kernel.astype(bool), d_ret.astype(bool)
    d_first = _first_rows(frame_of, len(d_space))
    s_seg = k_seg[f_key[d_first]][_first_rows(d_space, len(s_kernel))] if len(d_space) \
        else k_seg[:0]
    return first, frame_of, (d_space, d_addr, d_ret), (s_kernel, s_pid, s_seg)


def _first_rows(ids: np.ndarray, k: int) -> np.ndarray:
    """Each id's first row, the ids numbered 0..k-1 in the order first met."""
    first = np.full(k, len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids)))
    return first


def _walk(r, side: list, s_seg, s_kernel, s_pid, c_tid, c_seg):
    """The sideband records applied in time order, as the walk applied them: each
    space's maps taken when its generation is first needed (a ProcessMaps' lists are
    replaced on every change, never edited: holding them is a snapshot), each (thread,
    sideband position)'s name when first needed, interned in the order first met."""
    from ..perfdata.maps import AddressSpaces
    p = r.p
    spaces = AddressSpaces()
    comms: dict[int, str] = dict(r.thread_names)
    snaps: list = [None] * len(s_seg)
    comm_ids: list[int] = [0] * len(c_tid)
    by_space = np.argsort(s_seg, kind="stable").tolist()
    s_seg_l, kern_l, pid_l = s_seg.tolist(), s_kernel.tolist(), s_pid.tolist()
    c_tid_l, c_seg_l = c_tid.tolist(), c_seg.tolist()
    si = ci = 0
    for j in range(len(side) + 1):
        while si < len(by_space) and s_seg_l[by_space[si]] == j:
            s = by_space[si]
            if kern_l[s]:
                snaps[s] = (spaces.kernel.maps, spaces.kernel.starts,
                            bool(spaces.kernel.maps))
            else:
                pm = spaces.procs.get(pid_l[s])
                snaps[s] = (pm.maps, pm.starts, True) if pm is not None else None
            si += 1
        while ci < len(c_tid_l) and c_seg_l[ci] == j:
            t = c_tid_l[ci]
            comm = comms.get(t)
            comm_ids[ci] = p.string(comm if comm is not None else f":{t}")
            ci += 1
        if j < len(side):
            r._apply(side[j], spaces, comms)
    return snaps, comm_ids


def _locate(r, snaps, d_space, d_addr, d_ret, s_kernel, s_pid) -> np.ndarray:
    """The location of each distinct frame: its mapping in its space's maps (a frame in
    none: the kernel's when the kernel has no maps at all, else [unknown]), then what
    that mapping says (_Reader._map_facts: the DSO, how an address becomes its offset)."""
    n = len(d_space)
    found = np.full(n, -1, dtype=np.int64)  # the index of each frame's map in its space's
    order = np.argsort(d_space, kind="stable")
    for frames in np.split(order, np.flatnonzero(np.diff(d_space[order])) + 1) if n else ():
        snap = snaps[int(d_space[frames[0]])]
        if snap is not None and snap[0]:
            found[frames] = _find(snap[0], snap[1], d_addr[frames])
    # each distinct mapping once (one Map object may be in several spaces of a process)
    hit = np.flatnonzero(found >= 0)
    pair_of, (p_space, p_found) = dense_ids(d_space[hit], found[hit])
    maps: list = []
    map_id: dict = {}
    ids = []
    kernel_l, pid_l = s_kernel.tolist(), s_pid.tolist()
    for s, m in zip(p_space.tolist(), p_found.tolist()):
        mp = snaps[s][0][m]
        key = (kernel_l[s], -1 if kernel_l[s] else pid_l[s], id(mp))
        ix = map_id.get(key)
        if ix is None:
            ix = map_id[key] = len(maps)
            maps.append((kernel_l[s], pid_l[s], mp))
        ids.append(ix)
    map_ix = np.full(n, -1, dtype=np.int64)  # index into `maps`
    map_ix[hit] = np.array(ids, dtype=np.int64)[pair_of]
    # the two kinds of frame in no mapping: the kernel's without maps, and [unknown]
    no_kernel_maps = np.array([snap is None or not snap[2] for snap in snaps], dtype=bool)
    facts = [r._map_facts(kern, pid, m) for kern, pid, m in maps] + \
        [r._map_facts(True, -1, None, kernel_maps=False),
         r._map_facts(False, -1, None)]
    info = np.where(map_ix >= 0, map_ix, np.where(
        s_kernel[d_space] & no_kernel_maps[d_space], len(maps), len(maps) + 1))
    return _locations(r, facts, info, d_addr, d_ret)


def _locations(r, facts: list, info: np.ndarray, addr: np.ndarray, ret: np.ndarray
               ) -> np.ndarray:
    """Each frame's location: one per (DSO path, offset or address, leaf or caller),
    made as _Reader._locate_in makes it, in the order the frames come."""
    paths: dict[str, int] = {}
    path_id = np.array([paths.setdefault(f[0], len(paths)) for f in facts], dtype=np.int64)
    rule = np.array([f[2] for f in facts], dtype=np.int8)
    start = np.array([f[3] for f in facts], dtype=np.uint64)
    pgoff = np.array([f[4] for f in facts], dtype=np.uint64)
    r_ = rule[info]
    # (perf's map__map_ip, in u64: a damaged pgoff wraps, as there)
    value = np.where(r_ == 2, addr - start[info] + pgoff[info], addr)
    table = np.where(r_ == 0, 2 + ret, ret).astype(np.int8)
    loc_of = dense_ids(path_id[info], table, value)[0]
    first = _first_rows(loc_of, int(loc_of.max(initial=-1)) + 1)
    return _new_locations(r, facts, info[first], addr[first], value[first], ret[first],
                          rule[info[first]])[loc_of]


def _new_locations(r, facts: list, info, addr, value, ret, rule) -> np.ndarray:
    """The locations of these frames, one each, in this order, as
    _Reader._unnamed_location makes them: each in its mapping (made on first use, a
    build-id learnt later kept), its function interned by the mapping and the offset
    (a DSO's frame) or the address (others), named unresolved_name."""
    p = r.p
    mapping, mappings = p.mapping, p.mappings
    # each fact's mapping, made in the order the locations first use them (a build-id
    # learnt later kept: Profile.mapping keeps the first one given)
    used = _first_rows(info, len(facts))
    mid_of = np.full(len(facts), -1, dtype=np.int64)
    for i in np.argsort(used, kind="stable")[:int((used < len(info)).sum())].tolist():
        path, bid, _rule, _start, _pgoff, _text, kind = facts[i]
        mid_of[i] = mapping(path, kind=kind, build_id=bid)
    # the kernel's text offset: of the last location made in the mapping that has one
    last = np.full(len(facts), -1, dtype=np.int64)
    np.maximum.at(last, info, np.arange(len(info), dtype=np.int64))
    for i in np.argsort(last, kind="stable").tolist():
        if last[i] >= 0 and facts[i][5]:
            mappings[int(mid_of[i])].pgoff = facts[i][5]
    mid = mid_of[info]
    kind = [m.kind for m in mappings]
    by_offset = (rule != 0) & ~np.isin(mid, [i for i, k in enumerate(kind)
                                             if k in (KERNEL, UNKNOWN)])
    fn_of, _ = dense_ids(mid, by_offset.view(np.int8), np.where(by_offset, value, addr))
    fn_first = _first_rows(fn_of, int(fn_of.max(initial=-1)) + 1)
    if p.locations or p.functions:
        raise RuntimeError("the replay on columns makes a profile's first locations")
    addrs, mids_l = addr[fn_first].tolist(), mid[fn_first].tolist()
    offsets = value[fn_first].tolist()
    by_offset_l = (rule[fn_first] != 0).tolist()
    p.functions.extend(
        Function(fid, unresolved_name(p, m, a, o if known else None), "[unknown]", m, False)
        for fid, (m, a, o, known) in enumerate(zip(mids_l, addrs, offsets, by_offset_l)))
    n = len(mid)
    known = rule != 0
    p.locations = LocationTable({
        "mapping": array("i", mid.astype(np.int32).tobytes()),
        "address": array("Q", addr.astype(np.uint64).tobytes()),
        "dso_offset": array("Q", np.where(known, value, 0).astype(np.uint64).tobytes()),
        "symbol_offset": array("Q", bytes(8 * n)),
        "flags": array("B", (ret.astype(np.uint8) * RETURN | known.astype(np.uint8) * HAS_DSO)
                       .tobytes()),
        "f_offsets": array("q", np.arange(n + 1, dtype=np.int64).tobytes()),
        "f_ids": array("i", fn_of.astype(np.int32).tobytes()),
        "l_offsets": array("q", bytes(8 * (n + 1))), "l_files": array("i"),
        "l_lines": array("q")}, [])
    return np.arange(n, dtype=np.int64)


def _find(maps: list, starts: list, addrs: np.ndarray) -> np.ndarray:
    """ProcessMaps.find of each address: the index of the map holding it, or -1."""
    ends = [m.end for m in maps]
    if len(addrs) < _SPACE_BISECT or max(ends) > _U64 or starts[-1] > _U64:
        # (a hostile MMAP's start + length passes 2^64: Python's ints compare it)
        out = []
        for a in addrs.tolist():
            i = bisect.bisect_right(starts, a) - 1
            out.append(i if i >= 0 and a < maps[i].end else -1)
        return np.array(out, dtype=np.int64)
    s = np.array(starts, dtype=np.uint64)
    e = np.array(ends, dtype=np.uint64)
    i = np.searchsorted(s, addrs, side="right") - 1
    ok = (i >= 0) & (addrs < e[np.maximum(i, 0)])
    return np.where(ok, i, -1)
