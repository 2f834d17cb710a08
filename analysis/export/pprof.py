"""pprof's `profile.proto` (gzipped), what `go tool pprof`, Pyroscope, Parca and Grafana
read: the profile model already follows its design (mappings, functions, locations with
inline frames as several lines, samples with values and labels), so the export is a
renumbering into the message plus a string table.

The message classes are made here, at import time, from a descriptor written out field by
field after github.com/google/pprof/proto/profile.proto (package perftools.profiles): no
protoc and no generated file. The `protobuf` package encodes and decodes them.

What is exported is one event's samples (or an off-CPU or wall view, in nanoseconds) of a
selection: the explorer's query (analysis.explore.Query: threads, time range, event, view,
transforms), through the explorer's own selection code, so the totals are the page's.
"""
from __future__ import annotations

import gzip
import math
from collections import Counter

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ..errors import AnalysisError
from ..offcpu.views import ON_CPU, OFF_CPU
from ..profile import NO_ID, Profile
from .selected import Selected, select

_F = descriptor_pb2.FieldDescriptorProto
_INT64, _UINT64, _BOOL, _STRING, _MESSAGE = (_F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_BOOL,
                                            _F.TYPE_STRING, _F.TYPE_MESSAGE)
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

#: profile.proto's messages: (field, number, type, repeated, message type)
SCHEMA = {
    "Profile": [
        ("sample_type", 1, _MESSAGE, True, "ValueType"),
        ("sample", 2, _MESSAGE, True, "Sample"),
        ("mapping", 3, _MESSAGE, True, "Mapping"),
        ("location", 4, _MESSAGE, True, "Location"),
        ("function", 5, _MESSAGE, True, "Function"),
        ("string_table", 6, _STRING, True, None),  # "" at index 0
        ("drop_frames", 7, _INT64, False, None),
        ("keep_frames", 8, _INT64, False, None),
        ("time_nanos", 9, _INT64, False, None),
        ("duration_nanos", 10, _INT64, False, None),
        ("period_type", 11, _MESSAGE, False, "ValueType"),
        ("period", 12, _INT64, False, None),
        ("comment", 13, _INT64, True, None),
        ("default_sample_type", 14, _INT64, False, None),
    ],
    "ValueType": [("type", 1, _INT64, False, None), ("unit", 2, _INT64, False, None)],
    "Sample": [
        ("location_id", 1, _UINT64, True, None),  # leaf first
        ("value", 2, _INT64, True, None),
        ("label", 3, _MESSAGE, True, "Label"),
    ],
    "Label": [("key", 1, _INT64, False, None), ("str", 2, _INT64, False, None),
              ("num", 3, _INT64, False, None), ("num_unit", 4, _INT64, False, None)],
    "Mapping": [
        ("id", 1, _UINT64, False, None),
        ("memory_start", 2, _UINT64, False, None),
        ("memory_limit", 3, _UINT64, False, None),
        ("file_offset", 4, _UINT64, False, None),
        ("filename", 5, _INT64, False, None),
        ("build_id", 6, _INT64, False, None),
        ("has_functions", 7, _BOOL, False, None),
        ("has_filenames", 8, _BOOL, False, None),
        ("has_line_numbers", 9, _BOOL, False, None),
        ("has_inline_frames", 10, _BOOL, False, None),
    ],
    "Location": [
        ("id", 1, _UINT64, False, None),
        ("mapping_id", 2, _UINT64, False, None),
        ("address", 3, _UINT64, False, None),
        ("line", 4, _MESSAGE, True, "Line"),  # inlined callees first, the caller last
        ("is_folded", 5, _BOOL, False, None),
    ],
    "Line": [("function_id", 1, _UINT64, False, None), ("line", 2, _INT64, False, None),
             ("column", 3, _INT64, False, None)],
    "Function": [
        ("id", 1, _UINT64, False, None),
        ("name", 2, _INT64, False, None),
        ("system_name", 3, _INT64, False, None),
        ("filename", 4, _INT64, False, None),
        ("start_line", 5, _INT64, False, None),
    ],
}
PACKAGE = "perftools.profiles"


def _classes() -> dict:
    fdp = descriptor_pb2.FileDescriptorProto(name="perfweb/pprof/profile.proto",
                                             package=PACKAGE, syntax="proto3")
    for name, fields in SCHEMA.items():
        msg = fdp.message_type.add(name=name)
        for fname, number, ftype, repeated, type_name in fields:
            f = msg.field.add(name=fname, number=number, type=ftype,
                              label=_MANY if repeated else _ONE)
            if type_name:
                f.type_name = f".{PACKAGE}.{type_name}"
    pool = descriptor_pool.DescriptorPool()  # our own: another copy may be registered
    pool.Add(fdp)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{PACKAGE}.{name}")) for name in SCHEMA}


MESSAGES = _classes()
PprofProfile = MESSAGES["Profile"]

#: events whose period is a time in nanoseconds
_TIME_EVENTS = ("cpu-clock", "task-clock")


class _Strings:
    def __init__(self) -> None:
        self.table = [""]
        self.ix = {"": 0}

    def __call__(self, s: str) -> int:
        i = self.ix.get(s)
        if i is None:
            i = self.ix[s] = len(self.table)
            self.table.append(s)
        return i


def _value_types(sel: Selected) -> tuple[list[tuple[str, str]], int]:
    """(type, unit) of each value and the index of the one a reader shows first."""
    if sel.view != ON_CPU:
        return [("off_cpu" if sel.view == OFF_CPU else "wall", "nanoseconds")], 0
    event = sel.event_name
    if not sel.has_periods and not _fixed_period(sel):
        return [("samples", "count")], 0
    if event.startswith(_TIME_EVENTS):
        return [("samples", "count"), ("cpu", "nanoseconds")], 1
    base = event.split(":")[0].split("/")[0]
    return [("samples", "count"), (base or "events", "count")], 1


def _fixed_period(sel: Selected) -> int:
    """The event's period when perf.data records none per sample (`-c N`, `/period=N/`:
    every sample stands for N events)."""
    if sel.event is None or sel.view != ON_CPU:
        return 0
    return sel.profile.events[sel.event].period or 0


def to_pprof(profile: Profile, q=None, *, time_nanos: int | None = None,
             comment: str = "") -> PprofProfile:
    """The pprof message of the query's samples (the whole default event when q is
    None). AnalysisError for a query the explorer would refuse."""
    sel = select(profile, q)
    p = sel.profile
    s = _Strings()
    out = PprofProfile()
    types, default = _value_types(sel)
    for t, u in types:
        out.sample_type.add(type=s(t), unit=s(u))
    out.default_sample_type = s(types[default][0])
    if sel.view == ON_CPU and sel.event is not None:
        e = p.events[sel.event]
        unit = types[-1]
        out.period_type.type, out.period_type.unit = s(unit[0]), s(unit[1])
        if e.period:
            out.period = e.period
        elif e.frequency:
            out.period = round(1e9 / e.frequency) if unit[1] == "nanoseconds" else \
                round(e.frequency)
    elif sel.view != ON_CPU:
        out.period_type.type, out.period_type.unit = s(types[0][0]), s("nanoseconds")
        out.period = 1000  # a view's rows are weighed in µs

    # one Sample per stack and thread (pprof sums samples alike; a million samples of a
    # few thousand stacks stay a few thousand messages)
    k_thread, k_tid, k_pid = s("thread"), s("tid"), s("pid")
    n_values = len(types)
    fixed = 0 if sel.has_periods else _fixed_period(sel)
    counts = p.counts()
    periods = p.periods()
    rows: dict[tuple[int, int, int, int], list[int]] = {}
    stack, pid, tid, comm = p.s_stack, p.s_pid, p.s_tid, p.s_comm
    for i in sel.rows:
        key = (stack[i], pid[i], tid[i], comm[i])
        v = rows.get(key)
        if v is None:
            v = rows[key] = [0] * n_values
        if sel.view != ON_CPU:
            v[0] += counts[i] * 1000  # µs -> ns
        else:
            v[0] += counts[i]
            if n_values > 1:
                v[1] += periods[i] or counts[i] * fixed
    used_locations: set[int] = set()
    for (sid, pid_, tid_, comm_id), values in rows.items():
        locs = p.stacks[sid]
        used_locations.update(locs)
        sample = out.sample.add(location_id=[lid + 1 for lid in locs], value=values)
        if comm_id >= 0:
            sample.label.add(key=k_thread, str=s(p.strings[comm_id]))
        if tid_ != NO_ID:
            sample.label.add(key=k_tid, num=tid_)
        if pid_ != NO_ID:
            sample.label.add(key=k_pid, num=pid_)

    used_functions: dict[int, tuple[str, int]] = {}  # id -> (file, line) first seen
    mapping_facts: dict[int, list[bool]] = {}  # functions, filenames, lines, inline
    for lid in sorted(used_locations):
        loc = p.locations[lid]
        facts = mapping_facts.setdefault(loc.mapping_id, [True, False, False, False])
        lines = loc.lines if len(loc.lines) == len(loc.functions) else ()
        pl = out.location.add(id=lid + 1, mapping_id=loc.mapping_id + 1,
                              address=loc.address & 0xFFFF_FFFF_FFFF_FFFF)
        for j, fid in enumerate(loc.functions):
            file, line = lines[j] if lines else ("", 0)
            pl.line.add(function_id=fid + 1, line=max(0, line))
            if fid not in used_functions or (file and not used_functions[fid][0]):
                used_functions[fid] = (file, line)
            if file:
                facts[1] = True
            if line > 0:
                facts[2] = True
        if len(loc.functions) > 1:
            facts[3] = True
    for fid in sorted(used_functions):
        fn = p.functions[fid]
        file, _ = used_functions[fid]
        out.function.add(id=fid + 1, name=s(fn.name), system_name=s(fn.system_name),
                         filename=s(file))
    for mid in sorted(mapping_facts):
        m = p.mappings[mid]
        has_functions, has_filenames, has_lines, has_inline = mapping_facts[mid]
        out.mapping.add(id=mid + 1, memory_start=m.start, memory_limit=m.limit,
                        file_offset=m.pgoff & 0xFFFF_FFFF_FFFF_FFFF, filename=s(m.path),
                        build_id=s(m.build_id), has_functions=has_functions,
                        has_filenames=has_filenames, has_line_numbers=has_lines,
                        has_inline_frames=has_inline)
    if time_nanos is not None:
        out.time_nanos = time_nanos + round(sel.offset_s * 1e9)
    if sel.duration_s is not None and math.isfinite(sel.duration_s):
        out.duration_nanos = round(sel.duration_s * 1e9)
    if comment:
        out.comment.append(s(comment))
    out.string_table.extend(s.table)
    return out


def pprof_bytes(profile: Profile, q=None, **kw) -> bytes:
    """The gzipped message, as pprof writes its files."""
    return gzip.compress(to_pprof(profile, q, **kw).SerializeToString(), compresslevel=6)


def read_pprof(data: bytes) -> PprofProfile:
    """A .pb.gz (or a plain .pb) read back."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    msg = PprofProfile()
    msg.ParseFromString(data)
    return msg


def function_totals(msg: PprofProfile, value_index: int = 0) -> tuple[dict, dict]:
    """Per function id: (flat, cum) as pprof computes them: flat is the first line of
    a sample's first location (with inline frames, the innermost inlined function), cum
    counts a function once per sample."""
    lines = {loc.id: [ln.function_id for ln in loc.line] for loc in msg.location}
    flat: Counter = Counter()
    cum: Counter = Counter()
    for sample in msg.sample:
        v = sample.value[value_index]
        if not sample.location_id:
            continue
        first = lines[sample.location_id[0]]
        if first:
            flat[first[0]] += v
        seen = set()
        for lid in sample.location_id:
            seen.update(lines[lid])
        for fid in seen:
            cum[fid] += v
    return dict(flat), dict(cum)


__all__ = ["AnalysisError", "MESSAGES", "PprofProfile", "function_totals", "pprof_bytes",
           "read_pprof", "to_pprof"]
