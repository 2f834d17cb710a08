"""The profile's locations as columns, read like the list of Location objects the
importers and the symbolization pass build.

A profile keeps its locations this way once nothing rewrites them (compact_locations, at
the end of an import and of symbolization) and when it is loaded (analysis.profile_io
reads the saved columns as they are): about 40 bytes a location instead of a slotted
object with a tuple or two (about 280 bytes; a third of a loaded diverse profile), and
a pass that works on columns (profile_columns.LocationArrays) gets the mapping and
function columns without walking objects. Passes written against the list
(`profile.locations[lid]`, iterating) get each location as a Location made when asked.

A Location made from the columns is a copy: changing it changes nothing in the table.
The one pass that rewrites locations in place (analysis.symbols) takes them as a list
first (expand_locations) and compacts them again when it ends. The columns never
change once made: a location appended goes to a list after them (a transform's view
appends the locations it makes, see copy).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

import numpy as np


@dataclass(slots=True)  # 100,000 of them in a diverse capture
class Location:
    """One frame address. `functions` is leaf-most inline frame first (pprof's Line order)."""

    id: int
    mapping_id: int
    address: int  # as the input gave it: runtime IP, or what the text printed (0: none)
    functions: tuple[int, ...]
    #: Offset of the frame in its DSO's file-offset space (perf's map_ip: IP - map start +
    #: pgoff; the raw IP for the kernel), when known: perf.data always knows it, perf 6.1
    #: text prints it for user DSOs, `perf report` as `[.] 0x0000000000002458`. With the
    #: build-id it is what symbolization needs; None when only an absolute IP is known.
    dso_offset: int | None = None
    symbol_offset: int | None = None  # the "+0x38" perf printed after the symbol
    #: A caller frame: `address` is where the call returns to, so symbols are looked up
    #: at address - 1 (the call itself), which may lie in another function when the
    #: call was the last instruction of a noreturn path.
    is_return: bool = False
    #: (file, line) of each of `functions`, from DWARF line tables; () when unknown
    lines: tuple[tuple[str, int], ...] = ()


#: the flags column's bits
RETURN, HAS_DSO, HAS_SYMBOL = 1, 2, 4

#: name -> typecode of the columns, in the order a saved profile writes them
COLUMNS = (("mapping", "i"), ("address", "Q"), ("dso_offset", "Q"), ("symbol_offset", "Q"),
           ("flags", "B"), ("f_offsets", "q"), ("f_ids", "i"), ("l_offsets", "q"),
           ("l_files", "i"), ("l_lines", "q"))


class LocationTable:
    """Location id -> Location, over immutable columns (functions and lines as CSR)."""

    __slots__ = ("_c", "_files", "_n", "_tail", "_fview")

    def __init__(self, columns: dict[str, array], files: list[str]) -> None:
        """columns: COLUMNS by name; files: the source file names l_files points into.
        The caller checks them (check_columns)."""
        self._c = columns
        self._files = files
        self._n = len(columns["mapping"])
        self._tail: list[Location] = []
        self._fview = memoryview(columns["f_ids"])  # (its slices are made faster)

    @classmethod
    def of(cls, locations) -> "LocationTable | None":
        """The locations as one table; None when a value does not fit its column (an
        address or offset outside 64 bits, a line number outside 63 bits: text inputs can
        spell anything), and the caller keeps the list."""
        if type(locations) is LocationTable:
            return locations if locations.is_plain() else cls.of(list(locations))
        n = len(locations)
        try:
            mapping = array("i", [loc.mapping_id for loc in locations])
            address = array("Q", [loc.address for loc in locations])
            dso = array("Q", [d if d is not None else 0
                              for d in (loc.dso_offset for loc in locations)])
            sym = array("Q", [s if s is not None else 0
                              for s in (loc.symbol_offset for loc in locations)])
            flags = array("B", [(RETURN if loc.is_return else 0) |
                                (HAS_DSO if loc.dso_offset is not None else 0) |
                                (HAS_SYMBOL if loc.symbol_offset is not None else 0)
                                for loc in locations])
            f_ids = array("i", chain.from_iterable(loc.functions for loc in locations))
            files: dict[str, int] = {}
            with_lines = [loc for loc in locations if loc.lines]
            l_files = array("i", [files.setdefault(f, len(files))
                                  for loc in with_lines for f, _ in loc.lines])
            l_lines = array("q", [line for loc in with_lines for _, line in loc.lines])
        except (OverflowError, TypeError):
            return None
        f_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(loc.functions) for loc in locations), dtype=np.int64,
                              count=n), out=f_offsets[1:])
        l_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(loc.lines) for loc in locations), dtype=np.int64,
                              count=n), out=l_offsets[1:])
        return cls({"mapping": mapping, "address": address, "dso_offset": dso,
                    "symbol_offset": sym, "flags": flags,
                    "f_offsets": array("q", f_offsets.tobytes()), "f_ids": f_ids,
                    "l_offsets": array("q", l_offsets.tobytes()), "l_files": l_files,
                    "l_lines": l_lines}, list(files))

    # ---- reading like a list ---------------------------------------------------------
    def __len__(self) -> int:
        return self._n + len(self._tail)

    def __getitem__(self, lid):
        if type(lid) is slice:
            return [self[i] for i in range(*lid.indices(len(self)))]
        if lid < 0:
            lid += len(self)
        if 0 <= lid < self._n:
            return self._made(lid)
        if lid < 0:
            raise IndexError("location id out of range")
        return self._tail[lid - self._n]

    def _made(self, lid: int) -> Location:
        c = self._c
        fo, flags = c["f_offsets"], c["flags"][lid]
        lo = c["l_offsets"]
        a, b = lo[lid], lo[lid + 1]
        lines = tuple(zip(map(self._files.__getitem__, c["l_files"][a:b]),
                          c["l_lines"][a:b])) if b > a else ()
        return Location(lid, c["mapping"][lid], c["address"][lid],
                        tuple(self._fview[fo[lid]:fo[lid + 1]]),
                        c["dso_offset"][lid] if flags & HAS_DSO else None,
                        c["symbol_offset"][lid] if flags & HAS_SYMBOL else None,
                        bool(flags & RETURN), lines)

    def __iter__(self):
        c = self._c
        fo = c["f_offsets"].tolist()
        functions = map(tuple, map(c["f_ids"].tolist().__getitem__,
                                   map(slice, fo, fo[1:])))
        flags = c["flags"].tolist()
        dso = map(_known, c["dso_offset"].tolist(), (f & HAS_DSO for f in flags))
        sym = map(_known, c["symbol_offset"].tolist(), (f & HAS_SYMBOL for f in flags))
        yield from map(Location, range(self._n), c["mapping"].tolist(),
                       c["address"].tolist(), functions, dso, sym,
                       (bool(f & RETURN) for f in flags), self._all_lines())
        yield from self._tail

    def _all_lines(self):
        c = self._c
        lo = c["l_offsets"].tolist()
        files, names, lines = c["l_files"].tolist(), self._files, c["l_lines"].tolist()
        for a, b in zip(lo, lo[1:]):
            yield tuple(zip(map(names.__getitem__, files[a:b]), lines[a:b])) if b > a \
                else ()

    def fields(self, lids: list[int]) -> tuple[list, list, list, list]:
        """(functions, mapping ids, whether each has no lines, addresses) of these
        locations, gathered from the columns without making the locations (the folded
        export reads these four of every location its stacks hold)."""
        if self._tail or not lids or min(lids) < 0 or max(lids) >= self._n:
            return _fields_of([self[lid] for lid in lids])
        c = self._c
        ix = np.asarray(lids, dtype=np.int64)
        fo = np.frombuffer(c["f_offsets"], dtype=np.int64)
        view = self._fview
        functions = [tuple(view[a:b]) for a, b in zip(fo[ix].tolist(), fo[ix + 1].tolist())]
        lo = np.frombuffer(c["l_offsets"], dtype=np.int64)
        return (functions, np.frombuffer(c["mapping"], dtype=np.int32)[ix].tolist(),
                (lo[ix + 1] == lo[ix]).tolist(),
                np.frombuffer(c["address"], dtype=np.uint64)[ix].tolist())

    def shape(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(each location's mapping id, every function id of every location, each
        location's number of functions, its number of lines): what profile_check
        checks, from the columns of a plain table."""
        if self._tail:
            made = list(self)
            n_funcs = np.fromiter(map(len, map(_FUNCTIONS, made)), dtype=np.int64,
                                  count=len(made))
            return (np.fromiter(map(_MAPPING, made), dtype=np.int64, count=len(made)),
                    np.fromiter(chain.from_iterable(map(_FUNCTIONS, made)),
                                dtype=np.int64, count=int(n_funcs.sum())),
                    n_funcs, np.fromiter(map(len, map(_LINES, made)), dtype=np.int64,
                                         count=len(made)))
        c = self._c
        offsets, ids = self.functions_columns()
        return (self.mapping_column(), ids, np.diff(offsets),
                np.diff(np.frombuffer(c["l_offsets"], dtype=np.int64)))

    def functions_of_all(self) -> list[tuple[int, ...]]:
        """Each location's functions, without making the locations."""
        fo = self._c["f_offsets"].tolist()
        rows = list(map(tuple, map(self._c["f_ids"].tolist().__getitem__,
                                   map(slice, fo, fo[1:]))))
        return rows + [loc.functions for loc in self._tail]

    def __eq__(self, other) -> bool:
        if isinstance(other, (LocationTable, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # (mutable, like the list it stands for)

    # ---- changing like a list --------------------------------------------------------
    def append(self, location: Location) -> None:
        self._tail.append(location)

    def copy(self) -> "LocationTable":
        """A table over the same columns whose appended locations are its own."""
        other = object.__new__(LocationTable)
        other._c, other._files, other._n, other._fview = \
            self._c, self._files, self._n, self._fview
        other._tail = list(self._tail)
        return other

    def __reduce__(self):
        """copy, deepcopy and pickle (a memoryview has none): the columns, the tail."""
        return _restored, (self._c, self._files, self._tail)

    # ---- as columns ------------------------------------------------------------------
    def is_plain(self) -> bool:
        """Nothing appended: the columns are the whole table."""
        return not self._tail

    def columns(self) -> tuple[dict[str, array], list[str]]:
        """The columns and the file names of a plain table."""
        if not self.is_plain():
            raise ValueError("a table with appended locations: LocationTable.of it first")
        return self._c, self._files

    def mapping_column(self) -> np.ndarray:
        """Each location's mapping id (int32), without a copy when plain."""
        base = np.frombuffer(self._c["mapping"], dtype=np.int32) if self._n else \
            np.zeros(0, dtype=np.int32)
        if not self._tail:
            return base
        return np.concatenate([base, np.fromiter((loc.mapping_id for loc in self._tail),
                                                 dtype=np.int32, count=len(self._tail))])

    def functions_columns(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(offsets int64, function ids int32) of a plain table, without a copy; None
        with appended locations."""
        if self._tail:
            return None
        ids = self._c["f_ids"]
        return (np.frombuffer(self._c["f_offsets"], dtype=np.int64),
                np.frombuffer(ids, dtype=np.int32) if len(ids) else
                np.zeros(0, dtype=np.int32))

    def nbytes(self) -> int:
        """The columns' bytes and the file names' (the appended locations are counted
        by their owner)."""
        return sum(len(col) * col.itemsize for col in self._c.values()) + \
            sum(49 + len(f) for f in self._files)

    def appended(self) -> int:
        """How many locations are held beside the columns, as objects."""
        return len(self._tail)


_MAPPING, _FUNCTIONS, _LINES = (attrgetter("mapping_id"), attrgetter("functions"),
                                attrgetter("lines"))


def _known(value: int, flag: int):
    return value if flag else None


def _restored(columns: dict, files: list, tail: list) -> LocationTable:
    table = LocationTable(columns, files)
    table._tail = list(tail)
    return table


def check_columns(columns: dict[str, array], files: list, n_mappings: int,
                  n_functions: int) -> str | None:
    """What is wrong with location columns read from a file (None: nothing): every
    column of its type and length, CSR offsets from 0 to their values' length never
    going back, ids in range."""
    for name, code in COLUMNS:
        if name not in columns or columns[name].typecode != code:
            return f"the location column {name} is missing or of another type"
    n = len(columns["mapping"])
    for name in ("address", "dso_offset", "symbol_offset", "flags"):
        if len(columns[name]) != n:
            return f"the location column {name} has another length"
    for offsets, values, what in (("f_offsets", "f_ids", "functions"),
                                  ("l_offsets", "l_files", "lines")):
        o = np.frombuffer(columns[offsets], dtype=np.int64)
        if len(o) != n + 1 or o[0] != 0 or o[-1] != len(columns[values]):
            return f"the locations' {what} offsets do not span their values"
        if n and (np.diff(o) < 0).any():
            return f"the locations' {what} offsets go back"
    if len(columns["l_lines"]) != len(columns["l_files"]):
        return "the locations' line numbers and files differ in length"
    for name, bound, what in (("mapping", n_mappings, "mapping"),
                              ("f_ids", n_functions, "function"),
                              ("l_files", len(files), "file")):
        if len(columns[name]):
            v = np.frombuffer(columns[name], dtype=np.int32)
            if v.min() < 0 or v.max() >= bound:
                return f"a location's {what} id is out of range"
    if len(columns["flags"]) and \
            max(columns["flags"]) > RETURN | HAS_DSO | HAS_SYMBOL:
        return "a location's flags are unknown"
    if not all(type(f) is str for f in files):
        return "a location's file name is not text"
    return None


def compact_locations(profile) -> None:
    """The profile's locations as a table once nothing rewrites them in place (the end
    of an import, of symbolization); kept a list when a value does not fit."""
    table = LocationTable.of(profile.locations)
    if table is not None:
        profile.locations = table


def expand_locations(profile) -> None:
    """The profile's locations as a list of objects a pass may change in place (the
    symbolization pass names them; compact_locations when it is done)."""
    if type(profile.locations) is LocationTable:
        profile.locations = list(profile.locations)


def file_offsets(locations, lids: np.ndarray) -> np.ndarray:
    """Of the given locations, each one's file offset, its address when the offset is
    unknown (uint64): from the columns of a table, without making the locations."""
    if type(locations) is LocationTable and locations.is_plain():
        c = locations._c
        if not len(c["mapping"]):
            return np.zeros(len(lids), dtype=np.uint64)
        flags = np.frombuffer(c["flags"], dtype=np.uint8)[lids]
        return np.where(flags & HAS_DSO != 0,
                        np.frombuffer(c["dso_offset"], dtype=np.uint64)[lids],
                        np.frombuffer(c["address"], dtype=np.uint64)[lids])
    return np.fromiter((loc.address if loc.dso_offset is None else loc.dso_offset
                        for loc in map(locations.__getitem__, lids.tolist())),
                       dtype=np.uint64, count=len(lids))


def all_functions(locations) -> list[tuple[int, ...]]:
    """Per location id, its function ids (a table's without making its locations)."""
    if type(locations) is LocationTable:
        return locations.functions_of_all()
    return [loc.functions for loc in locations]


def all_lines(locations) -> list[tuple[tuple[str, int], ...]]:
    """Per location id, its (file, line) of each function ((): unknown)."""
    if type(locations) is LocationTable:
        return list(locations._all_lines()) + [loc.lines for loc in locations._tail]
    return [loc.lines for loc in locations]


def mapping_ids(locations) -> list[int]:
    """Per location id, its mapping id."""
    if type(locations) is LocationTable:
        return locations.mapping_column().tolist()
    return [loc.mapping_id for loc in locations]


def with_function(locations, fid: int) -> set[int]:
    """The ids of the locations with `fid` among their (inline) functions."""
    if type(locations) is LocationTable and locations.is_plain():
        offsets, ids = locations.functions_columns()
        at = np.flatnonzero(ids == fid)  # (a location's row: the last offset <= at)
        return set((np.searchsorted(offsets, at, side="right") - 1).tolist())
    return {lid for lid, functions in enumerate(all_functions(locations))
            if fid in functions}


class FunctionsOf(dict):
    """location id -> its function ids, each read from the table when first asked (a
    pass that reads the locations of some stacks: no tuple made for the others)."""

    def __init__(self, locations) -> None:
        super().__init__()
        self.locations = locations

    def __missing__(self, lid: int) -> tuple[int, ...]:
        functions = self[lid] = self.locations[lid].functions
        return functions


def functions_by_id(locations):
    """Something `[lid]` gives a location's functions: a list of them for a list of
    locations (what reading every one of them costs anyway), a FunctionsOf for a table."""
    if type(locations) is LocationTable:
        return FunctionsOf(locations)
    return [loc.functions for loc in locations]


def function_files(locations) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every (function, source file) pair the locations' lines give, as two aligned
    columns (function ids, file ids into the names returned), in location order."""
    if type(locations) is LocationTable and locations.is_plain():
        c = locations._c
        f_off = np.frombuffer(c["f_offsets"], dtype=np.int64)
        l_off = np.frombuffer(c["l_offsets"], dtype=np.int64)
        n_lines = np.diff(l_off)
        has = np.flatnonzero(n_lines > 0)
        if not has.size:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), []
        # a location's lines pair with its functions one to one (profile_check): the
        # first len(lines) of its function ids, at its function offset
        n = n_lines[has]
        owner = np.repeat(np.arange(len(has)), n)
        within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        fids = np.frombuffer(c["f_ids"], dtype=np.int32)[f_off[has][owner] + within]
        files = np.frombuffer(c["l_files"], dtype=np.int32)[l_off[has][owner] + within]
        return fids.astype(np.int64), files.astype(np.int64), locations._files
    names: dict[str, int] = {}
    fids: list[int] = []
    files: list[int] = []
    for loc in locations:
        for fid, (file, _) in zip(loc.functions, loc.lines):
            fids.append(fid)
            files.append(names.setdefault(file, len(names)))
    return np.array(fids, dtype=np.int64), np.array(files, dtype=np.int64), list(names)


def location_fields(locations, lids: list[int]) -> tuple[list, list, list, list]:
    """LocationTable.fields of a table or a list of locations."""
    if type(locations) is LocationTable:
        return locations.fields(lids)
    return _fields_of([locations[lid] for lid in lids])


def _fields_of(made: list[Location]) -> tuple[list, list, list, list]:
    """LocationTable.fields of Location objects."""
    return ([loc.functions for loc in made], [loc.mapping_id for loc in made],
            [not loc.lines for loc in made], [loc.address for loc in made])
