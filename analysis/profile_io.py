"""Saving a profile after analysis and loading it back, so the dashboard can compute any
view (zoomed flame graph, threads, time range) without importing the capture again.

The format is ours and plain: a magic line, a JSON document with the tables (mappings,
functions, locations, events, strings, metadata), the stacks as two raw little-endian
columns (offsets and location ids: analysis.stack_table), then the per-sample columns the
same way. No pickle: a stored file is data, never code. Optional sections follow: the
context switches, and the flame graph's prepared tree (analysis.tree_index), saved so
that a web process loading the profile has its flame graphs at once.

The stacks are columns since PWPROF2, the locations since PWPROF3 (analysis.
location_table; written before the stacks): read as they are, a loaded profile holds no
object per location or frame. Files of the earlier formats are still read, into the
lists they always gave; a profile whose locations do not fit the columns (an address
outside 64 bits, from a text input) is written as PWPROF2.
"""
from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import asdict
from operator import attrgetter
from typing import BinaryIO

from . import jsonio, tree_index
from . import column_ops
from .errors import AnalysisError
from .gc_pause import paused_gc
from .offcpu.switches import SwitchLog
from .profile import Event, Function, Location, Mapping, Metadata, Profile
from .location_table import COLUMNS as LOCATION_COLUMNS
from .location_table import LocationTable
from .location_table import check_columns as check_location_columns
from .stack_table import StackTable, check_columns

MAGIC = b"PWPROF3\n"
#: the second format: the locations a table of the JSON document
MAGIC_2 = b"PWPROF2\n"
#: the first format: the stacks a table of the JSON document too
MAGIC_1 = b"PWPROF1\n"
#: the context-switch columns follow the sample columns (files without them end there)
_SWITCHES = b"SWITCHES"
#: ... then the top-down tree index (files without it build it when first asked)
_TREE_INDEX = b"TREEIDX1"
_COLUMNS = ("s_stack", "s_count", "s_period", "s_pid", "s_tid", "s_cpu", "s_time",
            "s_event", "s_comm")


#: tables are encoded this many rows at a time: the JSON of a 2M-sample capture's tables
#: is 100 MB, and the lists of lists it was made from several hundred more (issue 16)
_ROWS = 20_000


def _doc_chunks(profile: Profile, location_files: list[str] | None):
    """The JSON document of the tables, in pieces: byte for byte orjson's encoding of the
    whole document (no spaces, keys in this order), never all of it in memory. With
    `location_files` the locations are columns written after it, and the document holds
    their source file names instead."""
    dumps = jsonio.dumps
    # rows as tuples from attrgetter (orjson writes a tuple as the list it was): no
    # Python-level list per row (a diverse capture has 60,000 locations and functions;
    # the stacks are tuples already)
    six = attrgetter("mapping_id", "address", "functions", "dso_offset", "symbol_offset",
                     "is_return")
    tables = (
        ("mappings", attrgetter("path", "kind", "build_id", "start", "limit", "pgoff",
                                "deleted"), profile.mappings),
        ("functions", attrgetter("name", "system_name", "mapping_id", "resolved"),
         profile.functions),
        ("locations", lambda loc: six(loc) + (loc.lines,) if loc.lines else six(loc),
         profile.locations if location_files is None else ()),
    )
    yield b'{"meta":' + dumps(asdict(profile.meta))
    for key, row, rows in tables:
        yield b',"' + key.encode() + b'":['
        for i in range(0, len(rows), _ROWS):
            if i:
                yield b","
            part = rows[i:i + _ROWS]
            yield dumps(list(map(row, part)))[1:-1]
        yield b"]"
    rest = dumps({
        **({} if location_files is None else {"location_files": location_files}),
        "events": [[e.name, e.frequency, e.period] for e in profile.events],
        "strings": profile.strings,
        "notes": profile.notes,
        "coverage": profile.coverage,
        "approximate": profile.approximate,
        "truncated_tail": profile.truncated_tail,
        "switches_recorded": profile.switches.recorded,
        "switches_watched": profile.switches.watched,
    })
    yield b"," + rest[1:]


def _location_table(profile: Profile) -> LocationTable | None:
    """The locations as the columns PWPROF3 writes; None when they do not fit them."""
    return LocationTable.of(profile.locations)


def dump(profile: Profile, out: BinaryIO) -> None:
    table = _location_table(profile)
    location_files = None if table is None else table.columns()[1]
    out.write(MAGIC if table is not None else MAGIC_2)
    if out.seekable():  # the length first, written when known
        at = out.tell()
        out.write(struct.pack("<Q", 0))
        n = 0
        for chunk in _doc_chunks(profile, location_files):
            out.write(chunk)
            n += len(chunk)
        end = out.tell()
        out.seek(at)
        out.write(struct.pack("<Q", n))
        out.seek(end)
    else:
        blob = b"".join(_doc_chunks(profile, location_files))
        out.write(struct.pack("<Q", len(blob)))
        out.write(blob)
    if table is not None:
        columns = table.columns()[0]
        for name, _ in LOCATION_COLUMNS:
            _write_column(out, columns[name])
    offsets, values = StackTable.of(profile.stacks).columns()
    _write_column(out, offsets)
    _write_column(out, values)
    for name in _COLUMNS:  # (a column the profile does not keep is written as its value
        # again and again: the file's format is unchanged)
        if name == "s_count" and not profile.has_count_column():
            _write_same(out, "q", 1, len(profile.s_stack))
        elif name == "s_period" and not profile.has_period_column():
            _write_same(out, "Q", profile.period_value(), len(profile.s_stack))
        else:
            _write_column(out, getattr(profile, name))
    if len(profile.switches):  # the context switches, when the capture has them
        out.write(_SWITCHES)
        for name in SwitchLog.COLUMNS:
            _write_column(out, getattr(profile.switches, name))
    index = tree_index.build(profile, leaf_first=False)  # the capture page's first view
    if index is not None:
        out.write(_TREE_INDEX)
        out.write(struct.pack("<Q", index.depth))
        for col in (index.func, index.end, index.node_of):
            _write_column(out, col)


def _write_column(out: BinaryIO, col: array) -> None:
    if sys.byteorder != "little":
        col = array(col.typecode, col)
        col.byteswap()
    data = memoryview(col).cast("B")  # (no copy: a 4M-sample time column is 32 MB)
    out.write(struct.pack("<cQ", col.typecode.encode(), len(data)))
    out.write(data)


def _write_same(out: BinaryIO, code: str, value: int, n: int) -> None:
    """A column of n items of one value, written without making it."""
    out.write(struct.pack("<cQ", code.encode(), 8 * n))
    chunk = struct.pack("<" + code, value) * min(n, 1 << 16)
    while n:
        k = min(n, 1 << 16)
        out.write(chunk if k == 1 << 16 else chunk[:8 * k])
        n -= k


def _read_column(src: BinaryIO) -> array:
    code, size = struct.unpack("<cQ", src.read(9))
    col = array(code.decode())
    col.frombytes(src.read(size))
    if sys.byteorder != "little":
        col.byteswap()
    return col


def load(src: BinaryIO) -> Profile:
    magic = src.read(len(MAGIC))
    if magic not in (MAGIC, MAGIC_2, MAGIC_1):
        raise AnalysisError("not a saved perfweb profile")
    (n,) = struct.unpack("<Q", src.read(8))
    blob = src.read(n)
    # the tables are a few hundred thousand container objects and no cycle: the
    # collector's passes over them were two thirds of the time (0.45 -> 0.15 s on the
    # diverse capture of issue 16); only the decoding is paused, not the reads from
    # storage (see gc_pause)
    with paused_gc():
        doc = jsonio.loads(blob)
        files = doc.pop("location_files", None) if type(doc) is dict else None
        if (magic == MAGIC) != (type(files) is list) or \
                (files is not None and doc.get("locations")):
            raise AnalysisError("a damaged saved profile: its locations")
        p = _tables(doc)
    del blob, doc
    if magic == MAGIC:
        columns = {name: _read_column(src) for name, _ in LOCATION_COLUMNS}
        wrong = check_location_columns(columns, files, len(p.mappings), len(p.functions))
        if wrong:
            raise AnalysisError(f"a damaged saved profile: {wrong}")
        p.locations = LocationTable(columns, files)
    if magic in (MAGIC, MAGIC_2):
        offsets, values = _read_column(src), _read_column(src)
        if offsets.typecode != "q" or values.typecode != "i":
            raise AnalysisError("a damaged saved profile: its stack columns' types")
        wrong = check_columns(offsets, values, len(p.locations))
        if wrong:
            raise AnalysisError(f"a damaged saved profile: {wrong}")
        p.stacks = StackTable(offsets, values)
    for name in _COLUMNS:
        col = _read_column(src)
        if name == "s_count" and col.typecode == "q" and column_ops.all_equal(col, 1):
            col = None  # every row counts 1: no column kept (Profile.s_count)
        setattr(p, name, col)  # (s_period: one of one value is kept as it, not a column)
    section = src.read(len(_SWITCHES))
    if section == _SWITCHES:
        for name in SwitchLog.COLUMNS:
            setattr(p.switches, name, _read_column(src))
        section = src.read(len(_TREE_INDEX))
    if section == _TREE_INDEX:
        (depth,) = struct.unpack("<Q", src.read(8))
        func, end, node_of = (_read_column(src) for _ in range(3))
        tree_index.keep(p, tree_index.TreeIndex(False, depth, func, end, node_of))
    return p


def _tables(doc: dict) -> Profile:
    """The profile of a saved document's tables (the sample columns follow it; since
    PWPROF3 the locations too: an empty list here)."""
    p = Profile(doc["meta"].get("format", ""))
    p.meta = Metadata(**doc["meta"])
    for i, (path, kind, build_id, start, limit, pgoff, deleted) in enumerate(doc["mappings"]):
        p.mappings.append(Mapping(i, path, kind, build_id, start, limit, pgoff, deleted))
        p._mapping_ix.setdefault(path, i)
    # A name spelled the same demangled and as the input gave it is one str, as when
    # it was made, not two; the interning index is built when a view first adds one.
    p.functions = [Function(i, name, name if system_name == name else system_name,
                            mapping_id, resolved)
                   for i, (name, system_name, mapping_id, resolved)
                   in enumerate(doc["functions"])]
    p._function_ix = None
    loc_ids = list(range(len(doc["locations"])))  # (a stack's location id is one of these)
    p.locations = [Location(i, mid, address, tuple(funcs), dso_offset, sym_off, is_return,
                            tuple((f, n) for f, n in lines[0]) if lines else ())
                   for i, (mid, address, funcs, dso_offset, sym_off, is_return, *lines)
                   in zip(loc_ids, doc["locations"])]
    # First format: each stack's location ids are looked up in one list of ints, so
    # that every frame of every stack points at a shared int object (a JSON decoder
    # makes a new int object, 32 bytes, for each id above 256). Saved stacks are unique
    # (they were interned when made): no index is built until a transform asks to
    # intern a new one.
    if "stacks" in doc:
        p.stacks = [tuple(map(loc_ids.__getitem__, s)) for s in doc["stacks"]]
    p._stack_ix = None
    for name, freq, period in doc["events"]:
        p.events[p.event(name)] = Event(name, freq, period)
    for s in doc["strings"]:
        p.string(s)
    p.notes = doc["notes"]
    p.coverage = doc["coverage"]
    p.approximate = doc["approximate"]
    p.truncated_tail = doc["truncated_tail"]
    p.switches.recorded = doc.get("switches_recorded", False)
    p.switches.watched = doc.get("switches_watched", [])
    return p
