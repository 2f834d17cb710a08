"""Which threads each stack's samples come from, kept small.

The rules ask it of every stack (`Context.thread_of`). A dict per stack was the largest
thing the diagnosis held: 107 MiB for the 340,000 stacks of a 2M-sample capture, nearly
all of them sampled on one thread only. Here such a stack is one entry, its tid (its
samples are the stack's weight), and only stacks of several threads keep a dict.
"""
from __future__ import annotations

from collections.abc import Iterator


class StackThreads:
    """stack id -> {tid: samples}, read like the dict it replaces (get, items, [], in,
    len), stacks in first-seen order; the dicts it hands out are new, not to be kept."""

    __slots__ = ("_tid", "_many", "_weights")

    def __init__(self, pairs, weights: dict[int, int]) -> None:
        """`pairs`: ((stack id, tid), samples) in first-seen order; `weights`: the
        stacks' weights, which a stack of one thread gives as its samples (a stack whose
        samples differ from its weight keeps a dict)."""
        self._tid: dict[int, int | None] = {}  # stack -> its one tid, None: see _many
        self._many: dict[int, dict[int, int]] = {}
        self._weights = weights
        tids: dict[int, int] = {}  # one int object per tid, not one per stack
        one, many = self._tid, self._many
        for (sid, tid), n in pairs:
            tid = tids.setdefault(tid, tid)
            if sid not in one:
                one[sid] = tid
                if n != weights.get(sid):
                    one[sid] = None
                    many[sid] = {tid: n}
                continue
            d = many.get(sid)
            if d is None:
                first = one[sid]
                d = many[sid] = {first: weights[sid]}
                one[sid] = None
            d[tid] = n

    def get(self, sid: int, default=None):
        tid = self._tid.get(sid, _ABSENT)
        if tid is _ABSENT:
            return default
        if tid is None:
            return self._many[sid]
        return {tid: self._weights[sid]}

    def __getitem__(self, sid: int) -> dict[int, int]:
        got = self.get(sid, _ABSENT)
        if got is _ABSENT:
            raise KeyError(sid)
        return got

    def __contains__(self, sid: int) -> bool:
        return sid in self._tid

    def __len__(self) -> int:
        return len(self._tid)

    def sum_into(self, out: dict[int, int], sids) -> None:
        """out[tid] += the samples of each of these stacks on thread tid (Context.threads:
        the same sums, in the same order, as walking get(sid).items(), without a dict
        per stack)."""
        one, many, weights, get = self._tid, self._many, self._weights, out.get
        for sid in sids:
            tid = one.get(sid, _ABSENT)
            if tid is None:
                for t, n in many[sid].items():
                    out[t] = get(t, 0) + n
            elif tid is not _ABSENT:
                out[tid] = get(tid, 0) + weights[sid]

    def on_any(self, sid: int, tids: set[int]) -> bool:
        """Has the stack samples on any of these threads?"""
        tid = self._tid.get(sid, _ABSENT)
        if tid is None:
            return not tids.isdisjoint(self._many[sid])
        return tid is not _ABSENT and tid in tids

    def only_on(self, sid: int, tid: int) -> bool:
        """Are all the stack's samples on thread tid?"""
        one = self._tid.get(sid, _ABSENT)
        if one is None:
            many = self._many[sid]
            return len(many) == 1 and tid in many
        return one == tid

    def items(self) -> Iterator[tuple[int, dict[int, int]]]:
        many, weights = self._many, self._weights
        for sid, tid in self._tid.items():
            yield sid, (many[sid] if tid is None else {tid: weights[sid]})


_ABSENT = object()
