"""The profile's stacks as one column of location ids with offsets (CSR), read like the
list of tuples the importers build.

A profile keeps its stacks this way once its import has ended (Profile.compact_stacks)
and when it is loaded (analysis.profile_io reads the saved columns as they are): no
tuple and no int object per frame (on a diverse capture's 78,000 stacks, 4 MiB of the
29 MiB a loaded profile held), and a pass that works on columns
(profile_columns.stack_table) gets them without a copy. Passes written against
the list (`profile.stacks[sid]`, iterating) get each stack as a tuple made when asked:
about 0.25 us a stack against 0.05 us for a list's item, a few milliseconds a pass.

The columns never change once made (a numpy view of them may exist, and an array
exporting its buffer cannot grow): a stack appended goes to a list after them, a stack
replaced (a transform's copy, see copy) to a dict over them.
"""
from __future__ import annotations

from array import array
from itertools import chain

import numpy as np


class StackTable:
    """Stack id -> tuple of location ids (leaf first), over immutable CSR columns."""

    __slots__ = ("_offsets", "_values", "_view", "_n", "_tail", "_edits")

    def __init__(self, offsets: array, values: array) -> None:
        """offsets ('q', rows + 1, from 0, non-decreasing, ending at len(values)) and
        values ('i'): the caller checks them (profile_io.load does, with check_columns)."""
        self._offsets, self._values = offsets, values
        self._view = memoryview(values)  # (its slices are made faster than an array's)
        self._n = len(offsets) - 1
        self._tail: list[tuple[int, ...]] = []
        self._edits: dict[int, tuple[int, ...]] = {}

    @classmethod
    def of(cls, stacks) -> "StackTable":
        """The stacks (a list of tuples, or a StackTable) as one table."""
        if type(stacks) is StackTable:
            return stacks if stacks.is_plain() else cls(*stacks.columns())
        n = len(stacks)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, stacks), dtype=np.int64, count=n), out=offsets[1:])
        values = np.fromiter(chain.from_iterable(stacks), dtype=np.int32,
                             count=int(offsets[-1]))
        return cls(array("q", offsets.tobytes()), array("i", values.tobytes()))

    @classmethod
    def of_rows(cls, offsets: np.ndarray, values: np.ndarray, rows: np.ndarray
                ) -> "StackTable":
        """These rows (ascending) of CSR columns (offsets int64, values location ids)."""
        lengths = np.diff(offsets)
        kept = np.zeros(len(lengths), dtype=bool)
        kept[rows] = True
        new = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths[rows], out=new[1:])
        return cls(array("q", new.tobytes()),
                   array("i", values[np.repeat(kept, lengths)].astype(np.int32).tobytes()))

    # ---- reading like a list ---------------------------------------------------------
    def __len__(self) -> int:
        return self._n + len(self._tail)

    def __getitem__(self, sid):
        if type(sid) is slice:
            return [self[i] for i in range(*sid.indices(len(self)))]
        if sid < 0:
            sid += len(self)
        if self._edits:
            made = self._edits.get(sid)
            if made is not None:
                return made
        if 0 <= sid < self._n:
            b = self._offsets
            return tuple(self._view[b[sid]:b[sid + 1]])
        if sid < 0:
            raise IndexError("stack id out of range")
        return self._tail[sid - self._n]

    def __iter__(self):
        b = self._offsets.tolist()
        rows = map(tuple, map(self._values.tolist().__getitem__, map(slice, b, b[1:])))
        if self._edits:  # (a loop in C over the rows, a dict lookup more a row when edited)
            rows = map(self._edits.get, range(self._n), rows)
        yield from rows
        yield from self._tail

    def __eq__(self, other) -> bool:
        if isinstance(other, (StackTable, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # (mutable, like the list it stands for)

    # ---- changing like a list --------------------------------------------------------
    def append(self, stack: tuple[int, ...]) -> None:
        self._tail.append(stack)

    def __setitem__(self, sid: int, stack: tuple[int, ...]) -> None:
        if sid < 0:
            sid += len(self)
        if not 0 <= sid < len(self):
            raise IndexError("stack id out of range")
        if sid >= self._n:
            self._tail[sid - self._n] = stack
        else:
            self._edits[sid] = stack

    def copy(self) -> "StackTable":
        """A table over the same columns whose changes are its own (a transform's)."""
        other = object.__new__(StackTable)
        for name in ("_offsets", "_values", "_view", "_n"):
            setattr(other, name, getattr(self, name))
        other._tail, other._edits = list(self._tail), dict(self._edits)
        return other

    def __reduce__(self):
        """copy, deepcopy and pickle (a memoryview has none): the columns, the changes."""
        return _restored, (self._offsets, self._values, self._tail, self._edits)

    # ---- as columns ------------------------------------------------------------------
    def is_plain(self) -> bool:
        """Nothing appended or replaced: the columns are the whole table."""
        return not self._tail and not self._edits

    def columns(self) -> tuple[array, array]:
        """(offsets 'q', values 'i') of the whole table: the columns themselves when
        nothing was changed, else new ones, made with array operations (a transform's
        view of a loaded profile replaces some stacks of 100,000)."""
        if self.is_plain():
            return self._offsets, self._values
        offsets, values = self._merged()
        return array("q", offsets.tobytes()), array("i", values.tobytes())

    def _merged(self) -> tuple[np.ndarray, np.ndarray]:
        base_o = np.frombuffer(self._offsets, dtype=np.int64)
        base_v = np.frombuffer(self._values, dtype=np.int32) if len(self._values) else \
            np.zeros(0, dtype=np.int32)
        lengths = np.diff(base_o)
        edited = np.fromiter(sorted(self._edits), dtype=np.int64, count=len(self._edits))
        made = [self._edits[sid] for sid in edited.tolist()] + self._tail
        made_lengths = np.fromiter(map(len, made), dtype=np.int64, count=len(made))
        made_values = np.fromiter(chain.from_iterable(made), dtype=np.int64,
                                  count=int(made_lengths.sum()))
        if made_values.size and (made_values.min() < -(1 << 31) or
                                 made_values.max() >= 1 << 31):
            raise IndexError("a location id out of range")
        new_lengths = np.concatenate([lengths, made_lengths[len(edited):]])
        new_lengths[edited] = made_lengths[:len(edited)]
        offsets = np.zeros(len(new_lengths) + 1, dtype=np.int64)
        np.cumsum(new_lengths, out=offsets[1:])
        values = np.empty(int(offsets[-1]), dtype=np.int32)
        # the rows kept from the columns, moved to their new offsets
        kept = np.ones(self._n, dtype=bool)
        kept[edited] = False
        owner = np.repeat(np.arange(self._n), lengths)
        keep = kept[owner]
        values[(np.arange(len(base_v)) - base_o[owner] + offsets[owner])[keep]] = \
            base_v[keep]
        # the replaced and appended rows, in that order (sorted ids, then the tail)
        rows = np.concatenate([edited, np.arange(self._n, len(new_lengths))])
        made_owner = np.repeat(np.arange(len(rows)), made_lengths)
        made_start = np.cumsum(made_lengths) - made_lengths
        values[np.arange(len(made_values)) - made_start[made_owner] +
               offsets[rows][made_owner]] = made_values
        return offsets, values

    def frame_count(self) -> int:
        if self.is_plain():
            return len(self._values)
        return sum(map(len, self))

    def nbytes(self) -> int:
        """The columns' bytes (the changes are counted by their owner: own_rows)."""
        return len(self._offsets) * 8 + len(self._values) * 4

    def changed_rows(self) -> list[tuple[int, ...]]:
        """The stacks held beside the columns: replaced and appended ones."""
        return list(self._edits.values()) + self._tail

    def own_rows(self, origin) -> list[tuple[int, ...]]:
        """The stacks this table holds that `origin` (the table it was copied from)
        does not share: its replaced and appended ones."""
        if type(origin) is StackTable and origin._values is self._values:
            if origin is self:
                return []
            return list(self._edits.values()) + self._tail[len(origin._tail):]
        return list(self)


def _restored(offsets: array, values: array, tail: list, edits: dict) -> StackTable:
    table = StackTable(offsets, values)
    table._tail, table._edits = list(tail), dict(edits)
    return table


def frame_count(stacks) -> int:
    """Frames in all the stacks (a list of tuples or a StackTable)."""
    if type(stacks) is StackTable:
        return stacks.frame_count()
    return sum(map(len, stacks))


def check_columns(offsets: array, values: array, n_locations: int) -> str | None:
    """What is wrong with stack columns read from a file (None: nothing): offsets must
    run from 0 up to the values' length without going back, and every value must be a
    location id."""
    if len(offsets) < 1:
        return "no stack offsets"
    o = np.frombuffer(offsets, dtype=np.int64)
    if o[0] != 0 or o[-1] != len(values):
        return "stack offsets do not span the stack locations"
    if len(o) > 1 and (np.diff(o) < 0).any():
        return "stack offsets go back"
    if len(values):
        v = np.frombuffer(values, dtype=np.int32)
        if v.min() < 0 or v.max() >= n_locations:
            return "a stack's location id is out of range"
    return None
