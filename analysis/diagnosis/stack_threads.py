"""Which threads each stack's samples come from, kept small.

The rules ask it of every stack (`Context.thread_of`). A dict per stack was the largest
thing the diagnosis held: 107 MiB for the 340,000 stacks of a 2M-sample capture, nearly
all of them sampled on one thread only. Here every stack is a few bytes of arrays indexed
by stack id: a stack of one thread is its tid (its samples are the stack's weight), a
stack of several a range of flat (tid, samples) arrays, built by sorting the samples'
(stack, thread) columns.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterator

import numpy as np

from ..column_ops import first_met, first_met_of_chunks, view
from ..profile_columns import Csr, index_type, kept_columns, weights_by_stack

_ABSENT, _ONE, _MANY = 0, 1, 2


#: rows of_samples sums (stack, thread) pairs of at a time
PAIR_CHUNK = 1 << 18


class StackThreads:
    """stack id -> {tid: samples}, read like the dict it replaces (get, items, [], in,
    len), stacks in first-seen order; the dicts it hands out are new, not to be kept."""

    __slots__ = ("_order", "_tid", "_state", "_off", "_mtid", "_mn", "_weights", "_by_sid")

    def __init__(self, pairs, weights: dict[int, int]) -> None:
        """`pairs`: ((stack id, tid), samples) in first-seen order; `weights`: the
        stacks' weights, which a stack of one thread gives as its samples (a stack whose
        samples differ from its weight keeps its own)."""
        per: dict[int, dict[int, int]] = {}
        for (sid, tid), n in pairs:
            per.setdefault(sid, {})[tid] = n
        size = max(per, default=-1) + 1
        self._set(array("i", per), array("i", [0]) * size, bytearray(size), weights)
        off, mtid, mn = [0], array("i"), array("q")
        for sid, d in per.items():
            (tid, n), = d.items() if len(d) == 1 else ((None, None),)
            if tid is not None and n == weights.get(sid):
                self._state[sid], self._tid[sid] = _ONE, tid
                continue
            self._state[sid], self._tid[sid] = _MANY, len(off) - 1
            mtid.extend(d)
            mn.extend(d.values())
            off.append(len(mtid))
        self._off, self._mtid, self._mn = array("q", off), mtid, mn

    def _set(self, order, tid, state, weights) -> None:
        self._order, self._tid, self._state, self._weights = order, tid, state, weights
        self._by_sid = None

    def _weight(self, sid: int) -> int:
        """The weight of a stack the weights have, read by stack id from their columns
        when they keep them (a WeightDict's dict is not filled for it)."""
        if kept_columns(self._weights) is None:
            return self._weights[sid]
        if self._by_sid is None:
            self._by_sid, _ = weights_by_stack(self._weights, len(self._state))
        return int(self._by_sid[sid])

    @classmethod
    def of_samples(cls, profile, event_id: int | None, weights: dict[int, int]
                   ) -> StackThreads:
        """The samples' threads per stack, of one event (None: every event); `weights`
        the same samples' weights per stack (stack_weights of that event)."""
        unit = profile.unit_rows()
        every = event_id is None or (unit and profile.sample_count(event_id) ==
                                     len(profile.s_stack))
        size = len(profile.stacks)
        self = cls.__new__(cls)
        self._set(array("i", [0]) * size, array("i", [0]) * size, bytearray(size), weights)
        stack, tid = view(profile.s_stack, np.int32), view(profile.s_tid, np.int32)
        count = None if unit else np.asarray(profile.s_count, dtype=np.int64)
        if not every:
            rows = view(profile.s_event, np.int32) == event_id
            stack, tid = stack[rows], tid[rows]
            count = None if count is None else count[rows]
        if stack.size and (stack.min() < 0 or stack.max() >= size):
            raise IndexError("a stack id out of range")
        # each stack's first row, and the stacks some row of which is on another thread
        # than that row's (few: nearly every stack is sampled on one thread)
        first = np.full(size, len(stack), dtype=np.int64)
        np.minimum.at(first, stack, np.arange(len(stack), dtype=index_type(len(stack) + 1)))
        met = np.flatnonzero(first < len(stack))
        order = met[np.argsort(first[met])]
        first_tid = np.zeros(size, dtype=np.int32)
        first_tid[met] = tid[first[met]]
        several = np.zeros(size, dtype=bool)
        several[stack[tid != first_tid[stack]]] = True
        state, tids = view(self._state, np.uint8), view(self._tid, np.int32)
        one = met[~several[met]]
        state[one], tids[one] = _ONE, first_tid[one]
        # the others' (stack, thread) pairs, each stack's together in the order first met
        # (a chunk of rows at a time, the rows picked within it: on a system-wide text of
        # 4M samples, 83% of the rows are such stacks', and whole-column copies and
        # sorts were 120 MiB, the report's peak)
        def chunks():
            for a in range(0, max(len(stack), 1), PAIR_CHUNK):
                rows = several[stack[a:a + PAIR_CHUNK]]
                yield ((stack[a:a + PAIR_CHUNK][rows], tid[a:a + PAIR_CHUNK][rows]),
                       None if count is None else count[a:a + PAIR_CHUNK][rows])
        (p_stack, p_tid), p_n = first_met_of_chunks(chunks())
        by_stack = np.argsort(p_stack, kind="stable")
        p_stack, p_tid, p_n = p_stack[by_stack], p_tid[by_stack], p_n[by_stack]
        many = np.flatnonzero(several)
        state[many] = _MANY
        tids[many] = np.arange(len(many))
        off = np.zeros(len(many) + 1, dtype=np.int64)
        np.cumsum(np.bincount(p_stack, minlength=size)[many], out=off[1:])
        self._order = array("i", order.astype(np.int32).tobytes())
        self._off = array("q", off.tobytes())
        self._mtid = array("i", p_tid.astype(np.int32).tobytes())
        self._mn = array("q", p_n.astype(np.int64).tobytes())
        return self

    def _many(self, sid: int) -> dict[int, int]:
        k = self._tid[sid]
        a, b = self._off[k], self._off[k + 1]
        return dict(zip(self._mtid[a:b], self._mn[a:b]))

    def _kind(self, sid: int) -> int:
        return self._state[sid] if 0 <= sid < len(self._state) else _ABSENT

    def get(self, sid: int, default=None):
        kind = self._kind(sid)
        if kind == _ONE:
            return {self._tid[sid]: self._weight(sid)}
        if kind == _MANY:
            return self._many(sid)
        return default

    def __getitem__(self, sid: int) -> dict[int, int]:
        got = self.get(sid, None)
        if got is None:
            raise KeyError(sid)
        return got

    def __contains__(self, sid: int) -> bool:
        return self._kind(sid) != _ABSENT

    def __len__(self) -> int:
        return len(self._order)

    def sum_into(self, out: dict[int, int], sids) -> None:
        """out[tid] += the samples of each of these stacks on thread tid (Context.threads:
        the same sums, in the same order, as walking get(sid).items(), without a dict
        per stack)."""
        state, one_tid = view(self._state, np.uint8), view(self._tid, np.int32)
        s = _known(sids, len(state))
        kind = state[s]
        one = kind == _ONE
        dense, has = weights_by_stack(self._weights, len(state))
        if not has[s[one]].all():
            raise KeyError("a stack of one thread without a weight")
        w_one = dense[s[one]]
        # each stack's (thread, samples), walking the stacks in order
        k = one_tid[s[kind == _MANY]].astype(np.int64)
        many = Csr(view(self._off, np.int64), view(self._mtid, np.int32))
        pos, _ = many.gather(k)
        length = np.where(one, 1, 0)
        length[kind == _MANY] = many.lengths(k)
        at = np.repeat(np.arange(len(s)), length)
        tid = np.empty(len(at), dtype=np.int64)
        n = np.empty(len(at), dtype=np.int64)
        first = np.cumsum(length) - length
        tid[first[one]], n[first[one]] = one_tid[s[one]], w_one
        rest = np.ones(len(at), dtype=bool)
        rest[first[one]] = False
        tid[rest], n[rest] = many.values[pos], view(self._mn, np.int64)[pos]
        (tids,), sums = first_met(tid, weights=n)
        for t, x in zip(tids.tolist(), sums.tolist()):
            out[t] = out.get(t, 0) + x

    def on_any(self, sid: int, tids: set[int]) -> bool:
        """Has the stack samples on any of these threads?"""
        kind = self._kind(sid)
        if kind == _ONE:
            return self._tid[sid] in tids
        if kind == _MANY:
            k = self._tid[sid]
            return not tids.isdisjoint(self._mtid[self._off[k]:self._off[k + 1]])
        return False

    def only_on(self, sid: int, tid: int) -> bool:
        """Are all the stack's samples on thread tid?"""
        kind = self._kind(sid)
        if kind == _ONE:
            return self._tid[sid] == tid
        if kind == _MANY:
            k = self._tid[sid]
            a = self._off[k]
            return self._off[k + 1] - a == 1 and self._mtid[a] == tid
        return False

    def mark_only_on(self, sids, tid: int, flags: bytearray) -> None:
        """flags[sid] = 1 for each of these stacks whose samples are all on thread tid
        (only_on of each, over the arrays)."""
        state, tids = view(self._state, np.uint8), view(self._tid, np.int32)
        s = _known(sids, len(state))
        kind = state[s]
        yes = (kind == _ONE) & (tids[s] == tid)
        many = np.flatnonzero(kind == _MANY)
        k = tids[s[many]]
        off, mtid = view(self._off, np.int64), view(self._mtid, np.int32)
        alone = off[k + 1] - off[k] == 1
        yes[many[alone]] = mtid[off[k[alone]]] == tid
        view(flags, np.uint8)[s[yes]] = 1

    def stacks(self):
        """The stack ids, in first-seen order (no dict made per stack)."""
        return iter(self._order)

    def items(self) -> Iterator[tuple[int, dict[int, int]]]:
        state, tids, weight = self._state, self._tid, self._weight
        for sid in self._order:
            yield sid, ({tids[sid]: weight(sid)} if state[sid] == _ONE else self._many(sid))


def _known(sids, size: int) -> np.ndarray:
    """The stack ids (a dict's keys or any iterable) that can have threads (as `get`
    reads them, an id outside the arrays has none)."""
    kept = kept_columns(sids)
    s = kept[0] if kept is not None else \
        np.fromiter(sids, dtype=np.int64)  # (a dict's keys: its values may be anything)
    return s[(s >= 0) & (s < size)]
