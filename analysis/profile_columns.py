"""The profile's tables as numpy columns, for passes that are array operations.

pprof's model stored as arrays: the stacks as one column of location ids with offsets
(CSR: stack s is locations[offsets[s]:offsets[s + 1]], leaf first), and per location its
mapping and its functions (CSR again: inline frames, leaf-most first). A pass over every
frame of every stack is then a gather and a bincount instead of a Python loop over tuples.

The columns are derived from the profile's lists and cached on it: stacks are only
appended to, so the list's length tells whether the stack columns are stale; the
location columns are taken per pass (symbolization rewrites a location's functions in
place, and a pass runs after it).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from .location_table import LocationTable
from .stack_table import StackTable, check_columns


@dataclass(frozen=True)
class Csr:
    """Rows of ints as one column and offsets: row r is values[offsets[r]:offsets[r + 1]]."""

    offsets: np.ndarray  # int64, rows + 1, offsets[0] == 0
    values: np.ndarray  # int32

    @property
    def rows(self) -> int:
        return len(self.offsets) - 1

    def lengths(self, rows: np.ndarray | None = None) -> np.ndarray:
        o = self.offsets
        if rows is None:
            return np.diff(o)
        return o[rows + 1] - o[rows]

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions into values of the given rows' items, in row order; each item's
        index into `rows`)."""
        lengths = self.lengths(rows)
        ix = index_type(max(len(self.values), len(rows)))  # (4 bytes an item when it can)
        owner = np.repeat(np.arange(len(rows), dtype=ix), lengths)
        base = (self.offsets[rows] - (np.cumsum(lengths) - lengths)).astype(ix)
        pos = np.arange(int(lengths.sum()), dtype=ix) + base[owner]
        return pos, owner

    def row_of_items(self) -> np.ndarray:
        """The row of each item of values (int32 while the rows fit it)."""
        return np.repeat(np.arange(self.rows, dtype=index_type(self.rows)), self.lengths())


def index_type(n: int) -> np.dtype:
    """int32 for indexes below n when they fit it (half the memory of int64 for the
    millions of frames a pass gathers), else int64. Arithmetic that may pass 2^31 (a
    row times a count of ids) casts to int64 first."""
    return np.dtype(np.int32) if n < 1 << 31 else np.dtype(np.int64)


def csr_of(rows: list, limit: int, what: str) -> Csr:
    """Rows (tuples of ints) as a Csr; an item outside 0..limit-1 is an IndexError (the
    ids come from uploads: a negative one would index from the end)."""
    n = len(rows)
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(offsets[-1]))
    if values.size and (values.min() < 0 or values.max() >= limit):
        raise IndexError(f"{what} out of range")
    return Csr(offsets, values.astype(np.int32))


def stack_table(profile) -> Csr:
    """profile.stacks as a Csr of location ids, cached while no stack is added."""
    stacks = profile.stacks
    key = (id(stacks), len(stacks), len(profile.locations))
    cached = profile._cache.get("stack_table")
    if cached is None or cached[0] != key:
        if type(stacks) is StackTable:
            # the loaded columns themselves (profile_io checked them against the
            # locations when it read them), or new ones with a transform's changes
            columns = stacks.columns()
            wrong = None if stacks.is_plain() else \
                check_columns(*columns, len(profile.locations))
            if wrong:
                raise IndexError(wrong)
            table = Csr(*(_read_only(c, t) for c, t in zip(columns, (np.int64, np.int32))))
        else:
            table = csr_of(stacks, len(profile.locations), "a location id")
        cached = profile._cache["stack_table"] = (key, table)
    return cached[1]


def _read_only(column, dtype) -> np.ndarray:
    """A view of an array.array's buffer that no pass can write through (the columns
    are shared: a StackTable's never change)."""
    view = np.frombuffer(column, dtype=dtype) if len(column) else np.zeros(0, dtype=dtype)
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class LocationArrays:
    """Per location id: its mapping, its functions (leaf-most inline frame first) and the
    function that owns its address (the last of them; -1 when it has none)."""

    mapping: np.ndarray  # int32
    functions: Csr
    owner: np.ndarray  # int32

    @classmethod
    def of(cls, locations, n_functions: int, loc_functions: list | None = None):
        """`locations`: a list of Location or a LocationTable, whose columns are taken
        as they are (read-only views)."""
        columns = locations.functions_columns() if loc_functions is None and \
            type(locations) is LocationTable else None
        if columns is not None:
            offsets, ids = columns
            if ids.size and (ids.min() < 0 or ids.max() >= n_functions):
                raise IndexError("a function id out of range")
            functions = Csr(_read_only_array(offsets), _read_only_array(ids))
            mapping = _read_only_array(locations.mapping_column())
        else:
            lf = loc_functions if loc_functions is not None else \
                locations.functions_of_all() if type(locations) is LocationTable else \
                [loc.functions for loc in locations]
            functions = csr_of(lf, n_functions, "a function id")
            mapping = locations.mapping_column().astype(np.int64) \
                if type(locations) is LocationTable else \
                np.fromiter((loc.mapping_id for loc in locations), dtype=np.int64,
                            count=len(locations))
        if mapping.size and (mapping.min() < 0 or mapping.max() > np.iinfo(np.int32).max):
            raise IndexError("a mapping id out of range")  # (before it could wrap)
        mapping = mapping.astype(np.int32, copy=False)
        lengths = functions.lengths()
        owner = np.full(len(lengths), -1, dtype=np.int32)
        has = lengths > 0
        owner[has] = functions.values[functions.offsets[1:][has] - 1]
        return cls(mapping, functions, owner)


def _read_only_array(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


#: the dict methods a WeightDict fills itself before (reads) and forgets its columns in
#: (changes)
_DICT_READS = ("__getitem__", "__iter__", "__contains__", "__reversed__", "__eq__",
               "__ne__", "__or__", "__ror__", "__repr__", "get", "keys", "values",
               "items", "copy")
_DICT_CHANGES = ("__setitem__", "__delitem__", "__ior__", "pop", "popitem", "clear",
                 "update", "setdefault")


class WeightDict(dict):
    """A {stack id: weight} dict made from columns, which it keeps for the passes that
    read it as columns (weight_columns: a dict of 400,000 stacks took 5 ms to read back
    each time, two dozen times a report); any change to it forgets them.

    The dict itself is filled when something first reads it as a dict, not before: most
    selections are read only as columns, and two of them held as dicts were 52 MiB of
    a 4M-sample report's peak (400,000 stacks, an int object and a slot each). Until
    then the instance is a WeightDict, whose dict methods fill it and turn it into a
    _FilledWeightDict, where they are dict's own again (C speed)."""

    __slots__ = ("_columns",)

    def __init__(self, sids: np.ndarray, w: np.ndarray) -> None:
        super().__init__()
        self._columns = (sids.astype(np.int64), w.astype(np.int64))

    def _fill(self) -> None:
        if type(self) is WeightDict:
            sids, w = self._columns
            dict.update(self, zip(sids.tolist(), w.tolist()))
            self.__class__ = _FilledWeightDict

    def __len__(self) -> int:
        return len(self._columns[0]) if type(self) is WeightDict else dict.__len__(self)

    def __bool__(self) -> bool:
        return len(self) > 0

    def _filling(name):  # noqa: N805 - a decorator factory of the class body
        def read(self, *args, **kwargs):
            self._fill()
            return getattr(dict, name)(self, *args, **kwargs)
        read.__name__ = name
        return read

    def _forget(name):  # noqa: N805 - a decorator factory of the class body
        def changed(self, *args, **kwargs):
            self._fill()
            self._columns = None
            return getattr(dict, name)(self, *args, **kwargs)
        changed.__name__ = name
        return changed

    for _name in _DICT_READS:
        locals()[_name] = _filling(_name)
    for _name in _DICT_CHANGES:
        locals()[_name] = _forget(_name)
    del _name, _filling, _forget
    __hash__ = None

    def __reduce__(self):
        """copy and pickle: the columns (a filled one is a dict again)."""
        if self._columns is None:
            return dict, (dict(self),)
        return WeightDict, self._columns


class _FilledWeightDict(WeightDict):
    """A WeightDict read as a dict once: dict's own reads (C speed: a slot wrapper
    assigned here is the base's C function in the type's slot); the changes are
    WeightDict's (its _fill does nothing here), which forget the columns."""

    __slots__ = ()
    for _name in _DICT_READS + ("__len__",):
        locals()[_name] = getattr(dict, _name)
    del _name


class WeightColumns(tuple):
    """(stack ids, weights) of a {stack id: weight} dict made once, for a dict many
    passes read (diagnosis.Context.weights): weight_columns hands them back as they are."""

    __slots__ = ()

    def __new__(cls, weights: dict[int, int], n_stacks: int):
        return super().__new__(cls, weight_columns(weights, n_stacks))


def take(values: np.ndarray, index: np.ndarray, default) -> np.ndarray:
    """values[index] where index >= 0, `default` where it is negative (-1: none), even
    when values is empty (np.where would index it at 0 first)."""
    out = np.full(len(index), default, dtype=values.dtype)
    at = index >= 0
    out[at] = values[index[at]]
    return out


def kept_columns(weights) -> tuple[np.ndarray, np.ndarray] | None:
    """The (stack ids, weights) a WeightColumns or a WeightDict keeps, in its order; None
    for any other dict, or a WeightDict changed since (reading them fills no dict)."""
    if isinstance(weights, WeightColumns):
        return weights
    return weights._columns if isinstance(weights, WeightDict) else None


def weight_arrays(weights) -> tuple[np.ndarray, np.ndarray]:
    """A {stack id: weight} dict as (stack ids, weights), int64, in the dict's order: the
    columns it keeps (kept_columns), else read from the dict. No bound is checked
    (weight_columns checks)."""
    kept = kept_columns(weights)
    if kept is not None:
        return kept
    n = len(weights)
    return (np.fromiter(weights.keys(), dtype=np.int64, count=n),
            np.fromiter(weights.values(), dtype=np.int64, count=n))


def weights_by_stack(weights, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The weights by stack id (int64, `size` of them) and which stacks have one, from
    the dict's columns when it keeps them (a generator over 100,000 stacks was 35 ms of
    a report); ids outside 0..size-1 are left out."""
    sids, w = weight_arrays(weights)
    out, has = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=bool)
    inside = (sids >= 0) & (sids < size)
    out[sids[inside]], has[sids[inside]] = w[inside], True
    return out, has


def weight_columns(weights, n_stacks: int) -> tuple[np.ndarray, np.ndarray]:
    """weight_arrays, a stack id outside the stacks an IndexError. WeightColumns are
    returned as made (their ids were checked then)."""
    if isinstance(weights, WeightColumns):
        return weights
    sids, w = weight_arrays(weights)
    if sids.size and (sids.min() < 0 or sids.max() >= n_stacks):
        raise IndexError("a stack id out of range")
    return sids, w
