"""The diagnosis' walks along stacks (the first frame of a kind from the leaf, what lies
above it, each stack's bits of categories) as array operations on the stacks' function
paths (StackSets.paths: leaf first, inline frames expanded).

A walk "from the leaf until a frame is marked" is, over all the stacks at once: the
entries whose mark is set, and of those the first of each stack. Results come out in the
order of the stack ids given (a dict's, for weights), as the loops these replace gave.
"""
from __future__ import annotations

import numpy as np

from ..column_ops import first_met, view
from ..location_table import file_offsets
from ..profile_columns import WeightDict, kept_columns, take, weight_columns
from .stack_sums import StackSets

_U64 = np.uint64


def sid_array(sids, n_stacks: int) -> np.ndarray:
    """Stack ids (a dict's keys, a list, an array('i')) as int64; one outside the stacks
    is an IndexError."""
    kept = kept_columns(sids)
    if kept is not None:
        out = kept[0]  # (the columns: a WeightDict's dict is not filled to read them)
    else:
        out = np.fromiter(sids.keys() if isinstance(sids, dict) else sids, dtype=np.int64)
    if out.size and (out.min() < 0 or out.max() >= n_stacks):
        raise IndexError("a stack id out of range")
    return out


def entries(sets: StackSets, sids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(function id of each entry of these stacks' paths, leaf first; the index into
    sids of its stack)."""
    paths = sets.paths()
    pos, row = paths.gather(sids)
    return paths.values[pos], row


def first_of_rows(row: np.ndarray, hit: np.ndarray, n_rows: int) -> np.ndarray:
    """Per row, the index of its first entry where `hit` is set; -1 for none. `row` is
    non-decreasing (each row's entries together, in order)."""
    return _first_per_row(hit, n_rows, row.__getitem__)


def first_of_csr_rows(offsets: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """first_of_rows of rows given by their offsets (a Csr's: row r's entries are
    offsets[r]:offsets[r + 1]) instead of a row per entry."""
    return _first_per_row(hit, len(offsets) - 1,
                          lambda idx: np.searchsorted(offsets, idx, side="right") - 1)


def _first_per_row(hit: np.ndarray, n_rows: int, rows_of) -> np.ndarray:
    """FRAME_CHUNK entries at a time: the hits' indexes (8 bytes each, every frame of a
    capture's stacks) were a report's peak. `rows_of(indexes)`: their rows."""
    out = np.full(n_rows, -1, dtype=np.int64)
    for lo in range(0, len(hit), FRAME_CHUNK):
        idx = np.flatnonzero(hit[lo:lo + FRAME_CHUNK])
        if not idx.size:
            continue
        idx += lo
        r = rows_of(idx)
        start = np.ones(idx.size, dtype=bool)
        np.not_equal(r[1:], r[:-1], out=start[1:])
        r, idx = r[start], idx[start]
        unset = out[r] < 0  # (a row an earlier chunk began has its first there)
        out[r[unset]] = idx[unset]
    return out


#: entries first_of_rows reads at a time
FRAME_CHUNK = 1 << 20


def _marks(marks, n_functions: int) -> np.ndarray:
    m = view(marks, np.uint8)
    if len(m) < n_functions:
        raise IndexError("a function id out of range")
    return m


def _in_chunks(s: np.ndarray):
    """s a STACK_CHUNK of stacks at a time: the walks below make several temporaries a
    frame (8 bytes a function's mask, the gathers' indexes), which for every frame of a
    capture at once were most of a report's peak (200 MiB of a 990,000-sample one)."""
    for a in range(0, max(len(s), 1), STACK_CHUNK):
        yield s[a:a + STACK_CHUNK]


def used_functions(sets: StackSets, sids, flags: bytearray) -> None:
    """flags[f] = 1 for each function of these stacks."""
    for s in _in_chunks(sid_array(sids, sets.n_stacks)):
        funcs, _ = entries(sets, s)
        view(flags, np.uint8)[funcs] = 1


def stack_masks(sets: StackSets, sids, fmask, loc_kernel, mask, leaf_mask, kernel_leaf,
                used: bytearray) -> None:
    """Per stack id of sids: mask[sid] the OR of fmask over its functions, leaf_mask[sid]
    fmask of its first function (0 without one), kernel_leaf[sid] 1 when its leaf
    location is kernel code (loc_kernel by location id); used[f] = 1 for each function
    of these stacks."""
    fm, lk = view(fmask, _U64), view(loc_kernel, np.uint8)
    for s in _in_chunks(sid_array(sids, sets.n_stacks)):
        funcs, row = entries(sets, s)
        bits = fm[funcs]
        acc = np.zeros(len(s), dtype=_U64)
        np.bitwise_or.at(acc, row, bits)
        view(mask, _U64)[s] = acc
        first = first_of_rows(row, np.ones(len(row), dtype=bool), len(s))
        view(leaf_mask, _U64)[s] = take(bits, first, 0)
        leaf = sets.leaf_locations(s)
        view(kernel_leaf, np.uint8)[s] = take(lk, leaf, 0) != 0
        view(used, np.uint8)[funcs] = 1


def select(weights: dict[int, int], mask, leaf_mask, any_bits: int, all_bits: int,
           none_bits: int, leaf_bits: int, idle) -> dict[int, int]:
    """The stacks of weights (in its order) whose mask has a bit of any_bits (when not
    0), every bit of all_bits and none of none_bits, whose leaf mask has a bit of
    leaf_bits (when not 0), and that are not flagged in idle (None: no test)."""
    m, lm = view(mask, _U64), view(leaf_mask, _U64)
    sids, w = weight_columns(weights, len(m))
    sm = m[sids]
    keep = (sm & _U64(all_bits)) == _U64(all_bits)
    if any_bits:
        keep &= (sm & _U64(any_bits)) != 0
    if none_bits:
        keep &= (sm & _U64(none_bits)) == 0
    if leaf_bits:
        keep &= (lm[sids] & _U64(leaf_bits)) != 0
    if idle is not None:
        keep &= view(idle, np.uint8)[sids] == 0
    return WeightDict(sids[keep], w[keep])


def first_marked(sets: StackSets, sids, marked, keep: int = 1, into=None):
    """Per stack id, the first function (from the leaf) of the stack that is marked,
    when its mark is at least `keep`: {sid: function} in sids' order, or into[sid] =
    function (array 'i' by stack id, returned)."""
    marks = _marks(marked, sets.n_functions)
    got_s, got_f = [], []
    for s in _in_chunks(sid_array(sids, sets.n_stacks)):
        funcs, row = entries(sets, s)
        mk = marks[funcs]
        first = first_of_rows(row, mk != 0, len(s))
        found = first >= 0
        found[found] = mk[first[found]] >= keep
        got_s.append(s[found])
        got_f.append(funcs[first[found]])
    s, f = np.concatenate(got_s), np.concatenate(got_f)
    if into is not None:
        col = view(into, np.int32)
        if s.size and s.max() >= len(col):
            raise IndexError("a stack id out of range")
        col[s] = f
        return into
    return dict(zip(s.tolist(), f.tolist()))


def decided_above(sets: StackSets, sids, marks) -> bytes:
    """Per stack id of sids, what the frames above its first function marked 1 decide:
    0 when none is marked 1 or the first one above it marked 3 or 4 is marked 4, 1 when
    that one is marked 3, 2 when there is none (rules._whose's walk)."""
    marked = _marks(marks, sets.n_functions)
    parts = []
    for s in _in_chunks(sid_array(sids, sets.n_stacks)):
        funcs, row = entries(sets, s)
        mk = marked[funcs]
        start = first_of_rows(row, mk == 1, len(s))
        started = start >= 0
        # entries above the start (later in the path) marked 3 or 4
        after = np.arange(len(row)) > np.where(started, start, len(row))[row]
        decider = first_of_rows(row, after & ((mk == 3) | (mk == 4)), len(s))
        out = np.where(started, 2, 0).astype(np.uint8)
        has = decider >= 0
        out[has] = (mk[decider[has]] == 3).astype(np.uint8)
        parts.append(out.tobytes())
    return b"".join(parts)


def callers_above(sets: StackSets, weights: dict[int, int], marks) -> dict[int, int]:
    """Per weighted stack, the first function marked 1 from the leaf, then the first
    marked 2 above it: that caller's weights summed, callers in the order first met."""
    sids, w = weight_columns(weights, sets.n_stacks)
    marked = _marks(marks, sets.n_functions)
    keys, sums = [], []
    for a in range(0, max(len(sids), 1), STACK_CHUNK):
        s = sids[a:a + STACK_CHUNK]
        funcs, row = entries(sets, s)
        mk = marked[funcs]
        start = first_of_rows(row, mk == 1, len(s))
        after = np.arange(len(row)) > np.where(start >= 0, start, len(row))[row]
        caller = first_of_rows(row, after & (mk == 2), len(s))
        has = caller >= 0
        keys.append(funcs[caller[has]])
        sums.append(w[a:a + STACK_CHUNK][has])
    return _sums_first_met(np.concatenate(keys), np.concatenate(sums))


def leaf_values(sets: StackSets, weights: dict[int, int], fn_mapping, by_mapping: list
                ) -> dict:
    """stack id -> by_mapping[m] for each stack of weights (in its order) whose leaf
    function (the first of its path) is in mapping m and by_mapping[m] is not None."""
    sids, _ = weight_columns(weights, sets.n_stacks)
    paths = sets.paths()
    has = paths.lengths(sids) > 0
    leaf = paths.values[paths.offsets[sids[has]]]
    fm = view(fn_mapping, np.int32)
    m = fm[leaf]
    if m.size and (m.min() < 0 or m.max() >= len(by_mapping)):
        raise IndexError("leaf_values: a mapping id out of range")
    return {sid: by_mapping[mid] for sid, mid in zip(sids[has].tolist(), m.tolist())
            if by_mapping[mid] is not None}


def unnamed_leaf_sums(sets: StackSets, weights: dict[int, int], resolved, fn_mapping
                      ) -> dict[int, int] | None:
    """Per mapping, the weights of the stacks whose leaf function (the first of the leaf
    location's functions) has no name, mappings in the order of their first such stack;
    empty stacks are skipped. None when a leaf location has no function."""
    sids, w = weight_columns(weights, sets.n_stacks)
    leaf = sets.leaf_locations(sids)
    has = leaf >= 0
    sids, w, leaf = sids[has], w[has], leaf[has]
    lf = sets.locations.functions
    if np.any(lf.lengths(leaf) == 0):
        return None
    f = lf.values[lf.offsets[leaf]]
    unnamed = view(resolved, np.uint8)[f] == 0
    return _sums_first_met(view(fn_mapping, np.int32)[f[unnamed]], w[unnamed])


def split_functions(used, resolved, fn_mapping) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The function ids flagged in used, in id order: the named ones (resolved), and the
    others per mapping (mappings in the order of their first function)."""
    ids = np.flatnonzero(view(used, np.uint8)).astype(np.int32)
    named = view(resolved, np.uint8)[ids] != 0
    rest = ids[~named]
    m = view(fn_mapping, np.int32)[rest]
    order = np.argsort(m, kind="stable")
    ms, rs = m[order], rest[order]
    cut = np.flatnonzero(np.diff(ms)) + 1
    groups = dict(zip(ms[np.r_[0, cut]].tolist() if ms.size else [],
                      np.split(rs, cut) if ms.size else []))
    firsts = {mid: int(g[0]) for mid, g in groups.items()}
    return ids[named], {mid: groups[mid] for mid in sorted(groups, key=firsts.get)}


def _sums_first_met(keys: np.ndarray, w: np.ndarray) -> dict[int, int]:
    """{key: its weights summed}, keys in the order first met."""
    (values,), sums = first_met(keys, weights=w)
    return dict(zip(values.tolist(), sums.tolist()))


def group_stacks(frames, group, weights: dict[int, int]) -> dict[int, dict[int, int]]:
    """The stacks of weights that have a frame (frames: a function id or -1 by stack id)
    by group[function] (-1: in none): {group: {stack: weight}}, groups in the order of
    their first stack, each group's stacks in weights' order."""
    fr, gr = view(frames, np.int32), view(group, np.int32)
    sids, w = weight_columns(weights, len(fr))
    f = fr[sids]
    has = f >= 0
    sids, w, g = sids[has], w[has], gr[f[has]]
    has = g >= 0
    sids, w, g = sids[has], w[has], g[has]
    (order,), _ = first_met(g)
    out: dict[int, dict[int, int]] = {k: {} for k in order.tolist()}
    for k, sid, x in zip(g.tolist(), sids.tolist(), w.tolist()):
        out[k][sid] = x
    return out


def frame_sums(stacks: dict[int, int], frames, flags, unflagged: bytearray):
    """(flagged weight, unflagged weight, unflagged stacks, {frame: weight} of the flagged
    in the order first met) of stacks each with a frame (frames by stack id; a stack
    without one is a KeyError), split by flags[frame]; the unflagged stacks are marked 1
    in unflagged (by stack id)."""
    fr = view(frames, np.int32)
    sids, w = weight_columns(stacks, len(fr))
    f = fr[sids]
    if np.any(f < 0):
        raise KeyError(int(sids[np.argmax(f < 0)]))
    yes = view(flags, np.uint8)[f] != 0
    view(unflagged, np.uint8)[sids[~yes]] = 1
    return (int(w[yes].sum()), int(w[~yes].sum()), int((~yes).sum()),
            _sums_first_met(f[yes], w[yes]))


def hot_span(sets: StackSets, locations: list, stacks: dict[int, int], span: int,
             only=None) -> tuple[int, int, int]:
    """The leaf locations' weights summed by each leaf's file offset (its address when
    the offset is None), and the window of fewer than `span` bytes of those keys with the
    most weight: (its first key, its last, the weight), the lowest such window on a tie;
    (0, 0, 0) when there is none. `only` (a flag by stack id): the stacks it marks."""
    sids, w = weight_columns(stacks, sets.n_stacks)
    if only is not None:
        keep = view(only, np.uint8)[sids] != 0
        sids, w = sids[keep], w[keep]
    leaf = sets.leaf_locations(sids)
    has = leaf >= 0
    leaf, w = leaf[has], w[has]
    if not leaf.size:
        return 0, 0, 0
    key = file_offsets(locations, leaf)
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    start = np.ones(len(key), dtype=bool)
    np.not_equal(key[1:], key[:-1], out=start[1:])
    at = np.flatnonzero(start)
    keys, sums = key[at], np.add.reduceat(w, at)
    cums = np.concatenate(([0], np.cumsum(sums)))
    gap = np.uint64(span - 1)
    lower = np.where(keys >= gap, keys - gap, np.uint64(0))
    lo = np.searchsorted(keys, lower, side="left")
    total = cums[1:] - cums[lo]
    hi = int(np.argmax(total))
    if total[hi] <= 0:
        return 0, 0, 0
    return int(keys[lo[hi]]), int(keys[hi]), int(total[hi])


def user_frames(sets: StackSets, weights: dict[int, int], loc_user: np.ndarray):
    """Of the stacks of weights (in its order) with user frames (loc_user: a location's
    physical function when it is user code, else -1): (stack ids, weights, how many of
    their locations are user code, the function of the outermost such location, and of
    the one before it or -1). Stacks of kernel code only are left out."""
    st = sets.stacks
    sids, w = weight_columns(weights, st.rows)
    # (STACK_CHUNK stacks at a time: the per-frame temporaries of every frame of every
    # stack at once were a 4M-sample report's peak)
    parts = [_user_frames(st, sids[a:a + STACK_CHUNK], loc_user)
             for a in range(0, max(len(sids), 1), STACK_CHUNK)]
    n, outer, before = (np.concatenate(c) for c in zip(*parts))
    has = n > 0
    return sids[has], w[has], n[has], outer[has], before[has]


#: stacks user_frames walks at a time
STACK_CHUNK = 1 << 16


def _user_frames(st, sids: np.ndarray, loc_user: np.ndarray):
    """user_frames' (user frames, outer function, the one before it) of these stacks."""
    pos, row = st.gather(sids)
    u = loc_user[st.values[pos]]
    del pos
    idx = np.flatnonzero(u >= 0)
    r = row[idx]
    del row
    n = np.bincount(r, minlength=len(sids))
    last = np.ones(len(idx), dtype=bool)
    np.not_equal(r[1:], r[:-1], out=last[:-1])
    outer = np.full(len(sids), -1, dtype=np.int64)
    before = np.full(len(sids), -1, dtype=np.int64)
    at = np.flatnonzero(last)
    outer[r[at]] = u[idx[at]]
    prev = at[(at > 0) & (n[r[at]] > 1)]
    before[r[prev]] = u[idx[prev - 1]]
    return n, outer, before


def cut_stacks(frames, kind, short: int, broken: bytearray):
    """stack_rules.broken_stacks over user_frames' columns: kind[f] says of each outer
    function 1 an address no file maps, 2 no thread entry point, 0 an entry point. A
    stack is broken when its outer function is of kind 1, or of kind 2 with at most
    `short` user frames; broken[sid] = 1 for each. (broken samples, {the function each
    broken stack is cut in: weight} first met first, user samples, most user frames)."""
    sids, w, n, outer, before = frames
    kd = view(kind, np.uint8)[outer]
    cut = (kd == 1) | ((kd == 2) & (n <= short))
    view(broken, np.uint8)[sids[cut]] = 1
    origin = np.where((kd == 1) & (n > 1), before, outer)
    return (int(w[cut].sum()), _sums_first_met(origin[cut], w[cut]), int(w.sum()),
            int(n.max()) if n.size else 0)


def classify(weights: dict[int, int], mask, leaf_mask, idle, kernel_leaf,
             classes: list[tuple[int, int]]):
    """diagnosis.time_in's pass: each stack of weights not flagged idle is busy (their
    weight summed; kernel: of those flagged in kernel_leaf) and goes to the first of
    classes, (bits, leaf_bits) pairs, whose bits meet its mask or whose leaf_bits meet
    its leaf mask. (busy, kernel, the class indexes in the order their first stack came,
    per class {sid: weight} in the weights' order)."""
    m, lm = view(mask, _U64), view(leaf_mask, _U64)
    if not len(lm) == len(idle) == len(kernel_leaf) == len(m):
        raise ValueError("classify: columns of different lengths")
    sids, w = weight_columns(weights, len(m))
    keep = view(idle, np.uint8)[sids] == 0
    sids, w = sids[keep], w[keep]
    kernel = int(w[view(kernel_leaf, np.uint8)[sids] != 0].sum())
    cls = np.full(len(sids), len(classes), dtype=np.int64)
    sm, slm = m[sids], lm[sids]
    for k in reversed(range(len(classes))):  # (the first class that meets wins)
        bits, leaf_bits = classes[k]
        cls[((sm & _U64(bits)) != 0) | ((slm & _U64(leaf_bits)) != 0)] = k
    (order,), _ = first_met(cls[cls < len(classes)])
    per: list[dict[int, int]] = [{} for _ in classes]
    for k in order.tolist():
        at = cls == k
        per[k] = WeightDict(sids[at], w[at])
    return int(w.sum()), kernel, order.tolist(), per
