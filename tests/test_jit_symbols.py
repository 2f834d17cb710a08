"""JIT symbol files as users have them, named as perf named them on the recording host.

The JDK's `jcmd PID Compiler.perfmap` (0x-prefixed start and size), V8's
--perf-basic-prof (plain hex) and BEAM's +JPperf (0x start only, gzipped) maps of the
holdout captures, each uploaded under the name it was kept as (bad.perf-21082.map), and
a jit-PID.dump recorded here with Node's --perf-prof: every JIT frame must get the name
perf script printed for it (ground truth: perf script with the map in place, perf
inject --jit for the dump) and every JIT function the same self samples.
"""
from __future__ import annotations

import collections
import gzip
import re
import shutil
import struct

import pytest

from analysis.aggregate.selection import stack_weights
from analysis.importers import load
from analysis.profile import JIT, UNKNOWN
from analysis.symbols import jitdump, perfmap
from analysis.symbols.symbolize import symbolize

from conftest import FIXTURES

HOLDOUT = FIXTURES / "realworld-holdout3"
JITDUMP = FIXTURES / "jitdump"
MAPS = [("jvm-exceptions", "bad.perf-21082.map"), ("jvm-exceptions", "fixed.perf-21695.map"),
        ("node-regex-backtrack", "bad.perf-1216.map"),
        ("node-regex-backtrack", "fixed.perf-4110.map"),
        ("erlang-large-message", "bad.perf-29344.map.gz"),
        ("erlang-large-message", "fixed.perf-29617.map.gz")]
_FRAME = re.compile(r"^\s+([0-9a-f]+) (.*?)(?:\+0x[0-9a-f]+)? \(([^)]*)\)$")


def _perf_script_samples(path):
    """[[(address, name, dso), ...leaf first] per sample] of perf script's text."""
    samples, cur = [], None
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            if not line[0].isspace():
                cur = []
                samples.append(cur)
                continue
            m = _FRAME.match(line.rstrip("\n"))
            assert m, line
            cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return samples


def _truth(samples, is_jit):
    """perf's name of each JIT frame, by (address, is the leaf), and self samples per
    JIT function."""
    names, leaves = {}, collections.Counter()
    for frames in samples:
        for depth, (address, name, dso) in enumerate(frames):
            if is_jit(dso):
                names[(address, depth == 0)] = name
                if depth == 0:
                    leaves[name] += 1
    return names, leaves


def _ours(p):
    names = {}
    for loc in p.locations:
        if p.mappings[loc.mapping_id].kind in (JIT, UNKNOWN):
            f = p.functions[loc.functions[-1]]
            names[(loc.address, not loc.is_return)] = f.system_name if f.resolved else \
                "[unknown]"
    leaves = collections.Counter()
    for sid, n in stack_weights(p).items():
        loc = p.locations[p.stacks[sid][0]] if p.stacks[sid] else None
        if loc is not None and p.mappings[loc.mapping_id].kind in (JIT, UNKNOWN):
            f = p.functions[loc.functions[-1]]
            leaves[f.system_name if f.resolved else "[unknown]"] += n
    return names, leaves


def _jit_coverage(cov):
    jit = [c for c in cov if c["kind"] == JIT]
    assert jit
    return jit


@pytest.mark.parametrize("case,map_name", MAPS, ids=[m for _, m in MAPS])
def test_perf_maps_name_jit_frames_as_perf_did(case, map_name):
    label = map_name.split(".")[0]
    p = load(HOLDOUT / case / f"{label}.perf.data")
    cov = symbolize(p, [HOLDOUT / case / map_name])
    assert not [n for n in p.notes if "not a symbol file" in n]
    truth, truth_leaves = _truth(_perf_script_samples(HOLDOUT / case /
                                                      f"{label}.script.txt.gz"),
                                 lambda dso: dso.startswith("/tmp/perf-"))
    names, leaves = _ours(p)
    assert len(truth) > 30
    assert {k: names.get(k) for k in truth} == truth
    assert {n: leaves[n] for n in truth_leaves} == truth_leaves
    for c in _jit_coverage(cov):  # the map is named as the source, and not asked for
        assert (c["status"], c["from"], c["source"], c["advice"]) == \
            ("resolved", "perf map", map_name, "")


def test_a_map_under_another_pid_or_none_names_the_jit_code_it_covers(tmp_path):
    """A map written in a container (PID 1 there) and another process's map without a
    PID in its name: the capture's JIT mapping takes the one that names its addresses."""
    case = HOLDOUT / "jvm-exceptions"
    shutil.copy(case / "bad.perf-21082.map", tmp_path / "perf-1.map")
    shutil.copy(HOLDOUT / "node-regex-backtrack" / "bad.perf-1216.map",
                tmp_path / "node.map")
    p = load(case / "bad.perf.data")
    cov = symbolize(p, [tmp_path / "node.map", tmp_path / "perf-1.map"])
    truth, _ = _truth(_perf_script_samples(case / "bad.script.txt.gz"),
                      lambda dso: dso.startswith("/tmp/perf-"))
    names, _ = _ours(p)
    assert {k: names.get(k) for k in truth} == truth
    (c,) = _jit_coverage(cov)
    assert (c["status"], c["source"]) == ("resolved", "perf-1.map")


def test_a_map_claimed_by_its_pid_is_not_taken_by_coverage(tmp_path):
    """A map whose name says the capture's PID is that process's, even when it names
    nothing: the coverage says so and asks for this run's map, naming the file given."""
    shutil.copy(HOLDOUT / "node-regex-backtrack" / "bad.perf-1216.map",
                tmp_path / "perf-21082.map")
    p = load(HOLDOUT / "jvm-exceptions" / "bad.perf.data")
    (c,) = _jit_coverage(symbolize(p, [tmp_path / "perf-21082.map"]))
    assert c["status"] == "missing" and c["resolved"] == 0
    assert "perf-21082.map names none of its sampled addresses" in c["reason"]


def test_a_partial_map_does_not_ask_for_itself(tmp_path):
    """Code the JIT made after the map was written stays unnamed: partial, and the
    advice says how to name the rest instead of asking for the file that was given."""
    lines = (HOLDOUT / "jvm-exceptions" / "bad.perf-21082.map").read_bytes().splitlines()
    (tmp_path / "bad.perf-21082.map").write_bytes(b"\n".join(lines[::2]) + b"\n")
    p = load(HOLDOUT / "jvm-exceptions" / "bad.perf.data")
    (c,) = _jit_coverage(symbolize(p, [tmp_path / "bad.perf-21082.map"]))
    assert c["status"] == "partial" and 0 < c["resolved"] < 1
    assert c["source"] == "bad.perf-21082.map" and "does not list" in c["reason"]
    assert "/tmp/perf-21082.map" not in c["advice"] and "jcmd" in c["advice"]


def test_perf_map_spellings_read_as_perf_reads_them():
    """util/symbol.c dso__load_perf_map: hex through strtoull (0x or not, blanks
    before), one separator, the rest is the name; names under 3 characters dropped."""
    data = (b"0x00007f93f4ec71c0 0x0000000000000270 void java.lang.Object.<init>()\n"
            b"18c4000 300 Builtin:DeoptimizationEntry_Eager\n"
            b"0x7f2e7481e000 68 $global::apply_fun_shared\n"
            b"  7f0000\t10 padded and tabbed\r\n"
            b"7f1000 10 ab\n"
            b"not a line\n"
            b"7f2000 0 sizeless")
    assert list(perfmap.entries(data)) == [
        (0x7f93f4ec71c0, 0x270, b"void java.lang.Object.<init>()"),
        (0x18c4000, 0x300, b"Builtin:DeoptimizationEntry_Eager"),
        (0x7f2e7481e000, 0x68, b"$global::apply_fun_shared"),
        (0x7f0000, 0x10, b"padded and tabbed"),
        (0x7f2000, 0, b"sizeless")]
    index = perfmap.parse(data)
    assert index.lookup(0x7f2000) == "sizeless" and index.lookup(0x7f2001) is None
    assert perfmap.looks_like_perf_map(data.split(b"\n", 1)[0])


def _jitdump_truth():
    """perf inject --jit's names of the capture's frames: the injected and the raw perf
    script texts have the same samples in the same order, frame for frame."""
    injected = _perf_script_samples(JITDUMP / "inject.script.txt.gz")
    raw = _perf_script_samples(JITDUMP / "raw.script.txt.gz")
    assert len(injected) == len(raw) > 400
    names, leaves = {}, collections.Counter()
    for inj, r in zip(injected, raw):
        assert len(inj) == len(r)
        for depth, ((_, name, dso), (address, _, raw_dso)) in enumerate(zip(inj, r)):
            # (frames perf inject moved out of the node binary's own mapping, where its
            # builtins are, are named from that binary without inject: not compared)
            if "jitted-" in dso and (raw_dso.startswith("/tmp/perf-") or
                                     raw_dso == "[unknown]"):
                names[(address, depth == 0)] = name
                if depth == 0:
                    leaves[name] += 1
    return names, leaves


def test_a_jitdump_names_the_jit_frames_as_perf_inject_does():
    (dump,) = JITDUMP.glob("jit-*.dump.gz")
    p = load(JITDUMP / "perf.data")
    cov = symbolize(p, [dump])
    truth, truth_leaves = _jitdump_truth()
    names, leaves = _ours(p)
    assert len(truth) > 40 and {k: names.get(k) for k in truth} == truth
    assert {n: leaves[n] for n in truth_leaves} == truth_leaves
    assert max(truth_leaves.values()) > 400  # the hot JavaScript function
    (c,) = _jit_coverage(cov)
    assert (c["status"], c["from"], c["source"]) == ("resolved", "jitdump", dump.name)


def _dump(records, order="<", version=1, pid=4242, header_size=40):
    out = struct.pack(order + "IIIIIIQQ", jitdump.MAGIC, version, header_size, 62, 0,
                      pid, 0, 0)
    for kind, body in records:
        out += struct.pack(order + "IIQ", kind, 16 + len(body), 0) + body
    return out


def _load_record(addr, size, index, name, order="<"):
    return 0, struct.pack(order + "IIQQQQ", 1, 1, addr, addr, size, index) + name + \
        b"\0" + b"\xcc" * size


@pytest.mark.parametrize("order", ["<", ">"])
def test_jitdump_records_loads_and_moves_in_either_byte_order(order):
    move = (1, struct.pack(order + "IIQQQQQ", 1, 1, 0, 0x1000, 0x3000, 0x100, 7))
    data = _dump([_load_record(0x1000, 0x100, 7, b"alpha", order),
                  _load_record(0x2000, 0x80, 8, b"beta", order), move,
                  (2, b"\0" * 40),  # debug info: not needed for names
                  _load_record(0x2040, 0x10, 9, b"gamma", order)], order)
    d = jitdump.parse(data)
    assert (d.pid, d.loads, d.stopped) == (4242, 3, "")
    look = d.index.lookup
    assert (look(0x1010), look(0x3010), look(0x2000), look(0x2045), look(0x2070),
            look(0x2080)) == ("alpha", "alpha", "beta", "gamma", "beta", None)


def test_a_hostile_jitdump_is_read_within_the_file():
    """Sizes that pass the end stop the reading (as perf stops), keeping what came
    before; a header perf refuses is refused with a sentence."""
    good = _load_record(0x1000, 0x10, 1, b"alpha")
    huge = struct.pack("<IIQ", 0, 0xFFFFFFFF, 0) + b"x" * 64
    d = jitdump.parse(_dump([good]) + huge)
    assert d.loads == 1 and "4,294,967,295 bytes long" in d.stopped
    d = jitdump.parse(_dump([good])[:-5])  # cut inside its only record
    assert d.loads == 0 and d.stopped
    no_nul = (0, struct.pack("<IIQQQQ", 1, 1, 0, 0x5000, 0x10, 2) + b"n" * 80)
    assert jitdump.parse(_dump([no_nul, good])).loads == 1
    for bad, says in ((_dump([], version=2), "version 2"),
                      (_dump([], header_size=1 << 31), "past the end"),
                      (b"DTiJ" + b"\0" * 8, "ends inside")):
        with pytest.raises(jitdump.JitdumpError, match=says):
            jitdump.parse(bad)


def test_a_damaged_jitdump_upload_is_a_note_not_a_failure(tmp_path):
    (tmp_path / "jit-31736.dump").write_bytes(_dump([], version=9))
    p = load(JITDUMP / "perf.data")
    symbolize(p, [tmp_path / "jit-31736.dump"])
    assert any("jit-31736.dump: unreadable (jitdump: version 9" in n for n in p.notes)
