"""The pprof export (analysis/export/pprof.py) read back with the protobuf reader: sample
totals and per-function flat and cum (pprof's rules: flat is a sample's first line, cum
counts a function once per sample) equal ours (the explorer's functions table) and perf's
own numbers (perf report's self shares and event count, perf script's stacks) on the
spinpool 1.0.0 busy capture symbolized with its bundles; a selection's totals equal the
explorer's for that selection and perf script's for that thread and time range; the
off-CPU and wall views in nanoseconds."""
import gzip
import re
from collections import Counter

import pytest

from analysis import explore
from analysis.errors import AnalysisError
from analysis.export.pprof import (MESSAGES, function_totals, pprof_bytes, read_pprof,
                                   to_pprof)
from analysis.importers import load
from analysis.symbols import symbolize
from analysis.transforms import parse as parse_transforms
from conftest import FIXTURES, SPINPOOL
from inline_profile import inline_profile
from script_selection import script_selection
from truth import truth_report

CASE = "1.0.0-busy"
SAMPLES = 973  # perf report: "# Samples: 973 of event 'cpu-clock:ppp'"
EVENT_COUNT = 9828282730  # perf report: "# Event count (approx.): 9828282730"


@pytest.fixture(scope="module")
def busy():
    p = load(SPINPOOL / f"{CASE}.perf.data")
    # inline=False: perf's truth files were made without inline frames
    symbolize(p, [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "kernel-symbols.zip",
                  SPINPOOL / f"{CASE}.perf.data.tar.bz2"], inline=False)
    return p


@pytest.fixture(scope="module")
def whole(busy):
    data = pprof_bytes(busy, time_nanos=1_700_000_000_000_000_000, comment="spinpool")
    assert data[:2] == b"\x1f\x8b"  # gzipped, as pprof writes its files
    return read_pprof(data)


def _names(msg):
    strings = msg.string_table
    return {f.id: strings[f.name] for f in msg.function}


def _by_name(msg, totals):
    names = _names(msg)
    out = Counter()
    for fid, v in totals.items():
        out[names[fid]] += v
    return out


def _perf_script_totals(path):
    """name -> samples whose stack holds it (once per sample), from `perf script` with
    every symbol; [unknown] frames left out (we name them DSO+offset)."""
    frame = re.compile(r"^\s+[0-9a-f]+ (.*?)(?:\+0x[0-9a-f]+)? \(([^()]*)\)$")
    totals, leaves, n, names = Counter(), Counter(), 0, None
    for line in path.read_text().splitlines() + [""]:
        m = frame.match(line)
        if m:
            if names is not None:
                if not names:
                    leaves[m.group(1)] += 1
                names.append(m.group(1))
        elif line.strip() == "":
            if names is not None:
                totals.update(set(names) - {"[unknown]"})
                names = None
        elif not line.startswith("#"):
            n += 1
            names = []
    return n, totals, leaves


def test_the_message_is_profile_proto(whole):
    strings = whole.string_table
    assert strings[0] == ""
    assert [(strings[t.type], strings[t.unit]) for t in whole.sample_type] == \
        [("samples", "count"), ("cpu", "nanoseconds")]
    assert strings[whole.default_sample_type] == "cpu"
    assert (strings[whole.period_type.type], strings[whole.period_type.unit]) == \
        ("cpu", "nanoseconds")
    assert whole.period == round(1e9 / 99)  # -F 99
    assert whole.duration_nanos == 4_987_646_146  # the perf.data's time range
    assert whole.time_nanos == 1_700_000_000_000_000_000
    assert [strings[c] for c in whole.comment] == ["spinpool"]
    # ids are nonzero and every reference resolves
    mappings = {m.id: m for m in whole.mapping}
    functions = {f.id for f in whole.function}
    locations = {loc.id: loc for loc in whole.location}
    assert 0 not in mappings and 0 not in functions and 0 not in locations
    for loc in whole.location:
        assert loc.mapping_id in mappings and loc.line
        assert all(ln.function_id in functions for ln in loc.line)
    assert all(lid in locations for s in whole.sample for lid in s.location_id)
    by_file = {strings[m.filename]: strings[m.build_id] for m in whole.mapping}
    assert by_file["/usr/lib/x86_64-linux-gnu/libc.so.6"] == \
        "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
    assert by_file["/opt/qualla-1.0.0/bin/libqualla.so"] == \
        "abc4bdbc2be6358ce43990b764daff42500785f3"
    assert by_file["/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"] == ""  # perf had none
    # labels: the thread's name, tid and pid
    keys = Counter(strings[lb.key] for s in whole.sample for lb in s.label)
    assert keys["thread"] == keys["tid"] == keys["pid"] == len(whole.sample)
    tids = Counter()
    for s in whole.sample:
        labels = {strings[lb.key]: lb for lb in s.label}
        assert strings[labels["thread"].str] == "api"
        tids[labels["tid"].num] += s.value[0]
    assert dict(tids) == {18192: 482, 18193: 491}  # perf script's two workers


def test_totals_equal_perf_report(whole):
    assert sum(s.value[0] for s in whole.sample) == SAMPLES
    assert sum(s.value[1] for s in whole.sample) == EVENT_COUNT
    samples, truth = truth_report(SPINPOOL / f"{CASE}.truth-report.txt")
    assert samples == SAMPLES
    flat, cum = function_totals(whole)
    flat_names = _by_name(whole, flat)
    # every self share perf reported (--no-children --sort sym), as a sample count
    assert {n: round(pct * SAMPLES / 100) for n, pct in truth.items()} == \
        {n: v for n, v in flat_names.items() if v}
    # and totals: the samples whose stack holds the function, from perf script's stacks
    n, perf_totals, perf_leaves = _perf_script_totals(SPINPOOL / f"{CASE}.truth-script.txt")
    assert n == SAMPLES
    cum_names = _by_name(whole, cum)
    assert {k: cum_names[k] for k in perf_totals} == dict(perf_totals)
    assert cum_names["do_syscall_64"] == 473  # perf report --children: 48.61%
    assert {k: flat_names[k] for k in perf_leaves if k != "[unknown]"} == \
        {k: v for k, v in perf_leaves.items() if k != "[unknown]"}


def test_function_totals_equal_ours(busy, whole):
    flat, cum = function_totals(whole)
    table = explore.functions(busy, explore.Query(), limit=100_000)
    assert table["total"] == SAMPLES
    ours = {f["f"] + 1: (f["s"], f["t"]) for f in table["functions"]}
    assert {fid: (flat.get(fid, 0), cum[fid]) for fid in cum} == ours
    # the same names and DSOs
    names = _names(whole)
    assert {names[f["f"] + 1] for f in table["functions"]} == \
        {f["n"] for f in table["functions"]}


def _assert_selection(profile, q, values=0, scale=1):
    msg = to_pprof(profile, q)
    flame = explore.flame(profile, q)
    table = explore.functions(profile, q, limit=100_000)
    assert sum(s.value[values] for s in msg.sample) == flame["total"] * scale
    flat, cum = function_totals(msg, values)
    ours = {f["f"] + 1: (f["s"] * scale, f["t"] * scale) for f in table["functions"]}
    assert {fid: (flat.get(fid, 0), cum[fid]) for fid in cum} == ours
    return msg, flame["total"]


def test_a_selection_exports_the_explorers_samples(busy):
    tids = sorted({t["tid"] for t in explore.threads(busy, explore.Query())["threads"]})
    assert len(tids) == 2
    q = explore.Query(tids=frozenset(tids[:1]), start=1.0, end=3.5)
    msg, total = _assert_selection(busy, q)
    # perf script's own samples of that tid in [t0 + 1, t0 + 3.5) s, t0 its first sample
    n, perf_totals, perf_leaves = script_selection(
        SPINPOOL / f"{CASE}.truth-script.txt", tids[:1], 1.0, 3.5)
    assert (tids[0], total) == (18192, n) and n == 239
    flat, cum = function_totals(msg)
    cum_names, flat_names = _by_name(msg, cum), _by_name(msg, flat)
    assert {k: cum_names[k] for k in perf_totals} == dict(perf_totals)
    assert {k: flat_names[k] for k in perf_leaves} == dict(perf_leaves)
    assert cum_names["do_syscall_64"] == perf_totals["do_syscall_64"] == 122
    assert msg.duration_nanos == 2_500_000_000
    assert msg.time_nanos == 0  # not given
    # every sample is of that thread
    strings = msg.string_table
    assert {lb.num for s in msg.sample for lb in s.label if strings[lb.key] == "tid"} == \
        set(tids[:1])
    # with a transform: do_syscall_64's samples dropped, as the page's drop does
    syscall = next(f for f in explore.functions(busy, explore.Query())["functions"]
                   if f["n"] == "do_syscall_64")
    q = explore.Query(transforms=parse_transforms(f"df-{syscall['f']}"))
    _, total = _assert_selection(busy, q)
    assert total == SAMPLES - 473


def test_off_cpu_and_wall_views_in_nanoseconds():
    p = load(FIXTURES / "offcpu" / "cpp-server-mutex" / "1.0.perf.data")
    for view, kind in (("off-cpu", "off_cpu"), ("wall", "wall")):
        msg, total_us = _assert_selection(p, explore.Query(view=view), scale=1000)
        strings = msg.string_table
        assert [(strings[t.type], strings[t.unit]) for t in msg.sample_type] == \
            [(kind, "nanoseconds")]
        assert total_us > 0
    assert sum(s.value[0] for s in to_pprof(p, explore.Query(view="off-cpu")).sample) == \
        20_147_410_000
    # the on-CPU view of that capture is its cpu-clock samples, not the sched_switch ones
    on = to_pprof(p)
    assert sum(s.value[0] for s in on.sample) == \
        explore.flame(p, explore.Query())["total"] > 0


def test_an_event_recorded_with_a_fixed_period():
    """page-faults/period=200/: perf.data stores no period per sample; each stands for 200."""
    p = load(FIXTURES / "perfdata" / "events.perf.data")
    ev = next(i for i, e in enumerate(p.events) if e.name.startswith("page-faults"))
    msg = to_pprof(p, explore.Query(event=ev))
    strings = msg.string_table
    assert [(strings[t.type], strings[t.unit]) for t in msg.sample_type] == \
        [("samples", "count"), ("page-faults", "count")]
    assert [sum(s.value[i] for s in msg.sample) for i in (0, 1)] == [345, 345 * 200]
    assert msg.period == 200


def test_refusals_and_an_empty_capture():
    p = load(FIXTURES / "perfdata" / "events.perf.data")
    with pytest.raises(AnalysisError):
        to_pprof(p, explore.Query(event=9))
    with pytest.raises(AnalysisError):
        to_pprof(p, explore.Query(view="off-cpu"))  # no context switches
    idle = load(SPINPOOL / "1.1.0-idle.perf.data")  # no samples at all: a valid profile
    msg = read_pprof(pprof_bytes(idle))
    assert len(msg.sample) == 0 and msg.string_table[0] == ""


def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _fields(buf):
    """(field number, value) of a protobuf message, by the wire format alone: varints
    as ints, length-delimited fields as bytes."""
    i, out = 0, []
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        else:
            raise AssertionError(f"wire type {wire} in field {number}")
        out.append((number, value))
    return out


def _packed(buf):
    i, out = 0, []
    while i < len(buf):
        v, i = _varint(buf, i)
        out.append(v)
    return out


def test_an_independent_reader_of_the_bytes(busy):
    """The file read with a decoder of the protobuf wire format written here from
    profile.proto's field numbers (not our message classes): the string table with ""
    first, the samples' values, the value types, the mappings' file names."""
    raw = gzip.decompress(pprof_bytes(busy))
    top = _fields(raw)
    strings = [v.decode() for n, v in top if n == 6]
    assert strings[0] == "" and len(strings) == len(set(strings))
    types = []
    for n, v in top:
        if n == 1:  # ValueType: type = 1, unit = 2
            f = dict(_fields(v))
            types.append((strings[f[1]], strings[f[2]]))
    assert types == [("samples", "count"), ("cpu", "nanoseconds")]
    totals = [0, 0]
    locations = set()
    for n, v in top:
        if n == 2:  # Sample: location_id = 1, value = 2 (packed), label = 3
            f = _fields(v)
            values = [x for k, b in f if k == 2 for x in _packed(b)]
            totals[0] += values[0]
            totals[1] += values[1]
            locations.update(x for k, b in f if k == 1 for x in _packed(b))
    assert totals == [SAMPLES, EVENT_COUNT]
    ids = {dict(_fields(v))[1] for n, v in top if n == 4}  # Location.id = 1
    assert locations <= ids
    files = {strings[dict(_fields(v))[5]] for n, v in top if n == 3}  # Mapping.filename
    assert "/opt/qualla-1.0.0/bin/libqualla.so" in files
    fields = MESSAGES["Profile"].DESCRIPTOR.fields_by_name
    assert {n: f.number for n, f in fields.items()} == {
        "sample_type": 1, "sample": 2, "mapping": 3, "location": 4, "function": 5,
        "string_table": 6, "drop_frames": 7, "keep_frames": 8, "time_nanos": 9,
        "duration_nanos": 10, "period_type": 11, "period": 12, "comment": 13,
        "default_sample_type": 14}


def test_inline_frames_are_lines_of_one_location():
    """A location where `helper` (helper.h:7) was inlined into `outer` (app.c:12) is one
    Location with two Lines, the inlined callee first (profile.proto's order). pprof's
    flat goes to the innermost line (helper), our table's self to the symbol holding the
    address (outer, as perf report counts it); cum is the same."""
    p, _ = inline_profile(build_id="ab" * 20, period=1000, tid=7)
    msg = read_pprof(pprof_bytes(p))
    strings = msg.string_table
    names = _names(msg)
    loc = next(x for x in msg.location if x.address == 0x20)
    assert [(names[ln.function_id], ln.line) for ln in loc.line] == \
        [("helper", 7), ("outer", 12)]
    files = {strings[f.name]: strings[f.filename] for f in msg.function}
    assert files == {"helper": "helper.h", "outer": "app.c", "leaf": "", "main": ""}
    (mapping,) = msg.mapping
    assert mapping.has_inline_frames and mapping.has_line_numbers and mapping.has_filenames
    assert strings[mapping.build_id] == "ab" * 20
    flat, cum = function_totals(msg)
    assert {names[f]: v for f, v in flat.items()} == {"leaf": 3, "helper": 2, "main": 1}
    table = explore.functions(p, explore.Query())["functions"]
    assert {f["n"]: f["s"] for f in table if f["s"]} == {"leaf": 3, "outer": 2, "main": 1}
    assert {names[f]: v for f, v in cum.items()} == {f["n"]: f["t"] for f in table}
    assert [(strings[t.type], strings[t.unit]) for t in msg.sample_type] == \
        [("samples", "count"), ("cycles", "count")]
    assert sum(s.value[1] for s in msg.sample) == 6000
