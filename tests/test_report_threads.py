"""The report's threads list stays small (issue 16): the busiest THREADS_MAX threads, and a
count of the rest, against `perf report --sort pid` of a 151-thread capture."""
import re
from pathlib import Path

import pytest

from analysis import report as report_mod
from analysis.importers import load
from analysis.report import THREADS_MAX, build_report

HERE = Path(__file__).parent / "fixtures"
MANY = HERE / "perfdata" / "many-threads.perf.data"


def _perf_report_threads() -> dict[int, int]:
    """tid -> samples, from perf report -n --sort pid ("   0.88%   25   25675:pw-manythreads")."""
    rows = {}
    for line in (HERE / "perfdata" / "many-threads.report.txt").read_text().splitlines():
        m = re.match(r"^\s+[\d.]+%\s+(\d+)\s+(\d+):", line)
        if m:
            rows[int(m.group(2))] = int(m.group(1))
    assert len(rows) == 151, len(rows)
    return rows


def test_the_busiest_threads_are_listed_and_the_rest_counted():
    truth = _perf_report_threads()
    r = build_report(load(MANY))
    assert r["samples"] == sum(truth.values()) == 2839
    listed = {t["tid"]: t["samples"] for t in r["threads"]}
    assert len(listed) == THREADS_MAX == 100
    # every listed thread has perf's count, and none left out is busier than one listed
    assert all(truth[tid] == n for tid, n in listed.items())
    left = [n for tid, n in truth.items() if tid not in listed]
    assert max(left) <= min(listed.values())
    assert r["threads_rest"] == {"threads": 51, "samples": sum(left)}
    assert sum(listed.values()) + r["threads_rest"]["samples"] == 2839
    assert [t["samples"] for t in r["threads"]] == sorted(listed.values(), reverse=True)


def test_a_capture_with_few_threads_lists_them_all():
    r = build_report(load(HERE / "offcpu" / "system-wide" / "sys.perf.data"))
    assert len(r["threads"]) == 28 and r["threads_rest"] is None


def test_of_the_threads_only_switches_saw_those_off_the_cpu_longest_are_kept(monkeypatch):
    """sys.perf.data: 2 sampled threads and 26 that only switch records saw."""
    p = load(HERE / "offcpu" / "system-wide" / "sys.perf.data")
    everything = build_report(p)["threads"]
    idle = [t for t in everything if not t["samples"]]
    assert len(idle) == 26
    monkeypatch.setattr(report_mod, "THREADS_MAX", 5)
    r = build_report(p)
    kept_idle = [t for t in r["threads"] if not t["samples"]]
    longest = sorted(idle, key=lambda t: -t["off_cpu_s"])[:5]
    assert [t["tid"] for t in kept_idle] == [t["tid"] for t in idle if t in longest]
    assert [t["tid"] for t in r["threads"] if t["samples"]] == [0, 3788]
    rest = r["threads_rest"]
    assert rest["threads"] == 21 and rest["samples"] == 0
    assert rest["off_cpu_s"] == pytest.approx(
        sum(t["off_cpu_s"] for t in idle if t not in longest), abs=1e-5)
