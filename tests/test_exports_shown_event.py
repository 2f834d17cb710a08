"""Exports show the event the page shows (issue 36, bugs 1-3): a capture recorded as the
upload page recommends (`-e cpu-clock -e sched:sched_switch --switch-events`) exports
its CPU samples, not its switches nor both summed; speedscope gets each thread's samples
in time order, under the thread's name, weighted in the event's unit; the folded
download names frames as the page does. Ground truth: perf script's text of the same
perf.data, recorded with it (tests/fixtures/offcpu/cpp-server-mutex)."""
from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from analysis.export.folded import FoldOptions, fold
from analysis.export.speedscope import to_speedscope, unit_of
from analysis.importers import load, perf_script
from analysis.symbols import symbolize

FIX = Path(__file__).parent / "fixtures" / "offcpu" / "cpp-server-mutex"
CAPTURE = FIX / "1.1.perf.data"
ROOT = Path(__file__).resolve().parents[1]
_EVENT_LINE = re.compile(r"^(\S.*?)\s+(\d+)\s+(?:\[\d+\]\s+)?([\d.]+):\s+(\d+)\s+(\S+):\s*$")


def _truth() -> dict[int, list[tuple[float, int, str]]]:
    """perf script's cpu-clock samples per thread: (time, period, leaf symbol), in the
    order perf printed them (time order)."""
    per: dict[int, list] = defaultdict(list)
    with gzip.open(FIX / "1.1.perf.data.script.txt.gz", "rt") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        m = _EVENT_LINE.match(line)
        if m and m.group(5).startswith("cpu-clock"):
            leaf = lines[i + 1].split(None, 1)[1].rsplit(" (", 1)[0].rsplit("+0x", 1)[0]
            per[int(m.group(2))].append((float(m.group(3)), int(m.group(4)), leaf))
    return per


@pytest.fixture(scope="module")
def capture():
    """The capture named with the program it recorded (beside it), as perf script was."""
    p = load(CAPTURE)
    symbolize(p, [str(FIX / "gateway-1.1")], inline=False)
    return p


def test_the_capture_has_both_events(capture):
    names = [e.name for e in capture.events]
    assert names == ["sched:sched_switch", "cpu-clock/freq=499/"]
    assert [capture.sample_count(i) for i in range(2)] == [8442, 2384]
    assert capture.default_event() == 1  # the page shows the CPU samples


def test_speedscope_holds_the_cpu_samples_per_thread_in_time_order(capture):
    truth = _truth()
    assert sum(map(len, truth.values())) == 2384
    doc = to_speedscope(capture)
    frames = doc["shared"]["frames"]
    got = {}
    for prof in doc["profiles"]:
        m = re.fullmatch(r"(.+) \((\d+)\)", prof["name"])
        assert m, prof["name"]  # "comm (tid)", as perf names a thread
        tid = int(m.group(2))
        assert prof["unit"] == "nanoseconds" and prof["type"] == "sampled"
        assert prof["endValue"] == sum(prof["weights"])
        got[tid] = (m.group(1), prof["weights"],
                    [frames[s[-1]]["name"] for s in prof["samples"]])
    assert set(got) == set(truth)
    for tid, rows in truth.items():
        comm, weights, leaves = got[tid]
        assert comm.startswith("gw-") or comm == "python3"
        assert weights == [period for _, period, _ in rows]  # ns, as perf script prints
        # each sample's leaf as perf script names it, in perf script's order (the
        # kernel's and libc's frames read as addresses here: no kallsyms or libc given)
        assert len(leaves) == len(rows)
        named = [(a, b) for a, (_, _, b) in zip(leaves, rows)
                 if not re.match(r"0x|.*\+0x", a)]
        assert len(named) > len(rows) * 0.8 and all(a == b for a, b in named)


def test_speedscope_of_another_event_and_units():
    assert unit_of("cpu-clock/freq=499/") == unit_of("task-clock:u") == "nanoseconds"
    assert unit_of("off-cpu µs") == unit_of("wall µs") == "microseconds"
    assert unit_of("cycles") == unit_of("sched:sched_switch") == "none"
    p = load(CAPTURE)
    doc = to_speedscope(p, event_id=0)
    assert sum(len(prof["samples"]) for prof in doc["profiles"]) == 8442
    assert {prof["unit"] for prof in doc["profiles"]} == {"none"}


def _cli(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "analysis", "report", *args],
                          capture_output=True, text=True, check=True, cwd=ROOT).stdout


def test_the_cli_exports_the_page_event_unless_told():
    folded = _cli(str(CAPTURE), "--format", "folded", "--weight", "samples")
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines()) == 2384
    switches = _cli(str(CAPTURE), "--format", "folded", "--weight", "samples",
                    "--event", "sched:sched_switch")
    assert sum(int(line.rsplit(" ", 1)[1]) for line in switches.splitlines()) == 8442
    doc = json.loads(_cli(str(CAPTURE), "--format", "speedscope"))
    assert sum(len(prof["samples"]) for prof in doc["profiles"]) == 2384
    off = json.loads(_cli(str(CAPTURE), "--format", "speedscope", "--view", "off-cpu"))
    assert {prof["unit"] for prof in off["profiles"]} == {"microseconds"}


NAMED = """gateway 100/100 [000] 1.000000: 10101010 cpu-clock:
\t    1111 std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke+0x10 (/bin/x)
\t    2222 main+0x20 (/bin/x)

"""


def test_the_folded_download_names_frames_as_the_page_does():
    p = perf_script.parse(io.BytesIO(NAMED.encode()))
    name = "std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke"
    assert p.functions[p.locations[p.stacks[0][0]].functions[0]].name == name
    assert list(fold(p, FoldOptions(weight="samples", names_as_shown=True))) == \
        [f"gateway;main;{name}"]
    # (stackcollapse-perf.pl's spelling, kept for the tools' own conventions)
    assert list(fold(p, FoldOptions(weight="samples"))) == \
        ["gateway;main;std::_Function_handler<void "]
