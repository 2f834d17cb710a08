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

from ..column_ops import dense_ids, view
from ..profile import KERNEL, KERNEL_ADDR, UNKNOWN, Function, Location, unresolved_name
from ..profile_columns import Csr

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


def generations(pids: np.ndarray, seg: np.ndarray, side: list
                ) -> tuple[np.ndarray, np.ndarray]:
    """(the kernel's generation, the process's) of each sample: how many of the sideband
    records before it (seg of them) changed those maps."""
    k_change, p_change = changes(side)
    kernel = np.concatenate(([0], np.cumsum(k_change)))[seg]
    at = np.flatnonzero(p_change >= -(1 << 31))
    # (pid, record) as one int64 key, the pid moved to 0..2^32-1
    keys = np.sort(((p_change[at] + (1 << 31)) << 32) | at)
    base = (pids.astype(np.int64) + (1 << 31)) << 32
    process = np.searchsorted(keys, base | seg, side="left") - \
        np.searchsorted(keys, base, side="left")
    return kernel, process


def chain_frames(r, chains: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frames of these chain ids, leaf first: (each chain's first frame, n + 1 of
    them; each frame's cpumode; its address). A packed chain is decoded as
    _Reader.frames_py decodes it: markers set the mode and are dropped, a chain with no
    address is its sample's ip; the others (branch records, a DWARF user leaf, no chain,
    a deferred user stack, whose marker hides the value after it) by
    _Reader.chain_frames."""
    blob = np.frombuffer(r.chain_blob, dtype=np.dtype(">u8" if r.e == ">" else "<u8"))
    packed = Csr(np.frombuffer(r.chain_ends, dtype=np.int64) // 8, blob)
    modes = np.frombuffer(r.chain_modes, dtype=np.int8)
    ips = view(r.chain_ips, np.uint64)
    rest = np.fromiter((c in r.chain_rest for c in chains.tolist()), dtype=bool,
                       count=len(chains))
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
    last = np.where(set_to >= 0, np.arange(len(v)), -1)
    np.maximum.accumulate(last, out=last)
    lengths = packed.lengths(chains[plain])
    own = last >= (np.cumsum(lengths) - lengths)[owner]
    mode = np.where(own, set_to[np.maximum(last, 0)], modes[chains[plain]][owner])
    frame = v < np.uint64(PERF_CONTEXT_MAX)
    counts = np.zeros(len(chains), dtype=np.int64)
    counts[plain] = np.bincount(owner[frame], minlength=len(plain))
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
    f_owner = plain[owner[frame]]  # (in chain order: gather keeps it)
    at = first[f_owner] + _ranks(f_owner)
    out_mode[at], out_addr[at] = mode[frame], v[frame]
    out_mode[first[empty]] = modes[chains[empty]]
    out_addr[first[empty]] = ips[chains[empty]]
    for i, frames in others.items():
        for d, (m, addr) in enumerate(frames):
            out_mode[first[i] + d], out_addr[first[i] + d] = m, addr
    return first, out_mode, out_addr


def _ranks(owner: np.ndarray) -> np.ndarray:
    """Each item's place among those of its owner, the owners in nondecreasing order."""
    start = np.ones(len(owner), dtype=bool)
    start[1:] = owner[1:] != owner[:-1]
    first = np.flatnonzero(start)
    return np.arange(len(owner)) - np.repeat(first, np.diff(np.append(first, len(owner))))


def replay(r, order: array, side: list) -> tuple[array, array]:
    """(each sample's stack id, its thread name's string id), the samples in time order
    (`order`), the sideband records sorted by time (`side`); the locations, functions,
    mappings and stacks are made in the reader's profile as the walk made them."""
    p = r.p
    rows = view(order, np.int32)
    n = len(rows)
    times = view(r.c_time, np.uint64)[rows]
    seg = np.searchsorted(np.array([ev[0] for ev in side], dtype=np.uint64), times,
                          side="right")  # the sideband records applied before each
    pid = view(r.c_pid, np.int32)[rows]
    tid = view(r.c_tid, np.int32)[rows]
    k_gen, p_gen = generations(pid, seg, side)
    key_of, (k_pid, k_chain, k_kgen, k_pgen) = dense_ids(
        pid, view(r.c_chain, np.int32)[rows], k_gen, p_gen)
    k_seg = seg[_first_rows(key_of, len(k_pid))] if n else seg[:0]
    comm_of, (c_tid, c_seg) = dense_ids(tid, seg)
    # every key's frames, and each distinct frame (its address in the maps of its space:
    # the kernel's of a kernel generation, a process's of its generation)
    first, f_mode, f_addr = chain_frames(r, k_chain.astype(np.int64))
    f_key = np.repeat(np.arange(len(k_pid)), np.diff(first))
    kernel = is_kernel(f_mode, f_addr)
    f_ret = np.ones(len(f_key), dtype=bool)
    f_ret[first[:-1][np.diff(first) > 0]] = False  # (the leaf: not a return address)
    space_of, (s_kernel, s_pid, s_gen) = dense_ids(
        kernel.view(np.int8), np.where(kernel, 0, k_pid[f_key]), np.where(kernel, k_kgen[f_key], k_pgen[f_key]))
    frame_of, (d_space, d_addr, d_ret) = dense_ids(space_of, f_addr, f_ret.view(np.int8))
    s_kernel, d_ret = s_kernel.astype(bool), d_ret.astype(bool)
    d_first = _first_rows(frame_of, len(d_space))
    s_seg = k_seg[f_key[d_first]][_first_rows(d_space, len(s_kernel))] if len(d_space) \
        else k_seg[:0]
    snaps, comm_ids = _walk(r, side, s_seg, s_kernel, s_pid, c_tid, c_seg)
    loc_of_frame = _locate(r, snaps, d_space, d_addr, d_ret, s_kernel, s_pid)
    # the stacks: each key's locations, interned as Profile.stack interns them
    r._id(len(p.locations))
    shared = np.array(r._ints[:len(p.locations)], dtype=object)  # (the shared ints)
    locs = shared[loc_of_frame[frame_of]].tolist() if len(frame_of) else []
    bounds = first.tolist()
    stack_ix, stacks = r._stacks, p.stacks
    get = stack_ix.get
    sids = []
    for stack in [tuple(locs[a:b]) for a, b in zip(bounds, bounds[1:])]:
        sid = get(stack)
        if sid is None:
            sid = stack_ix[stack] = r._id(len(stacks))
            stacks.append(stack)
        sids.append(sid)
    sid_of_key = np.array(sids, dtype=np.int32)
    return (array("i", sid_of_key[key_of].tobytes()),
            array("i", np.asarray(comm_ids, dtype=np.int32)[comm_of].tobytes()))


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
    mids, text = [], {}
    for i in info.tolist():
        path, bid, _rule, _start, _pgoff, kernel_text, kind = facts[i]
        mid = mapping(path, kind=kind, build_id=bid)
        if kernel_text:
            text[mid] = kernel_text  # (the last one made sets it, as one by one)
        mids.append(mid)
    for mid, kernel_text in text.items():
        mappings[mid].pgoff = kernel_text
    mid = np.array(mids, dtype=np.int64)
    kind = [m.kind for m in mappings]
    by_offset = (rule != 0) & ~np.isin(mid, [i for i, k in enumerate(kind)
                                             if k in (KERNEL, UNKNOWN)])
    fn_of, _ = dense_ids(mid, by_offset.view(np.int8), np.where(by_offset, value, addr))
    fn_first = _first_rows(fn_of, int(fn_of.max(initial=-1)) + 1)
    n_loc, n_fn = len(p.locations), len(p.functions)
    r._id(n_loc + len(mid) + len(fn_first))  # (the shared ints of the new ids)
    ints = r._ints
    offsets = [None if ru == 0 else v for ru, v in zip(rule.tolist(), value.tolist())]
    addrs, mids_l = addr.tolist(), mid.tolist()
    functions = p.functions
    owned = []
    for k, f in enumerate(fn_first.tolist()):
        fid = ints[n_fn + k]
        functions.append(Function(fid, unresolved_name(p, mids_l[f], addrs[f], offsets[f]),
                                  "[unknown]", mids_l[f], False))
        owned.append((fid,))
    p.locations.extend(
        Location(ints[n_loc + i], m, a, owned[fn], o, None, rt) for i, (m, a, fn, o, rt) in
        enumerate(zip(mids_l, addrs, fn_of.tolist(), offsets, ret.tolist())))
    return np.arange(n_loc, n_loc + len(mid), dtype=np.int64)


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
