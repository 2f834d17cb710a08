"""The explorer's views of one event of a capture that recorded several (the page's
event picker: `event=` on every data endpoint), against perf's own counts of each event:
`perf report --stdio` (its "# Samples: N of event 'E'") and `perf script` of the same
perf.data (tests/fixtures/perfdata/record.sh made them)."""
import re
from collections import Counter

import pytest

from analysis import explore
from analysis.errors import AnalysisError
from analysis.importers import load
from conftest import FIXTURES
from script_samples import raw_samples

HERE = FIXTURES / "perfdata"
REPORTED = re.compile(r"^# Samples: (\d+)\s+of event '(.+)'$", re.M)


def _perf_counts(name):
    """event -> (samples, leaf frame -> samples, tid -> samples) from perf script."""
    out = {}
    for tid, _, _, event, frames in raw_samples(HERE / f"{name}.script.txt"):
        n, leaves, tids = out.setdefault(event, [0, Counter(), Counter()])
        out[event][0] = n + 1
        leaves[frames[-1]] += 1
        tids[tid] += 1
    return out


@pytest.fixture(scope="module", params=["events", "two-events"])
def capture(request):
    return request.param, load(HERE / f"{request.param}.perf.data")


def test_perf_report_counts_each_event_as_the_script_does():
    reported = {e: int(n) for n, e in REPORTED.findall((HERE / "events.report.txt").read_text())}
    assert reported == {"cpu-clock/freq=199/": 78, "page-faults/period=200/": 345}
    assert {e: c[0] for e, c in _perf_counts("events").items()} == reported


def test_each_event_weighs_what_perf_counted(capture):
    name, p = capture
    perf = _perf_counts(name)
    assert sorted(e.name for e in p.events) == sorted(perf)
    for ev, e in enumerate(p.events):
        samples, leaves, tids = perf[e.name]
        q = explore.Query(event=ev)
        flame = explore.flame(p, q)
        assert flame["total"] == samples, e.name
        assert flame["tree"]["nodes"][0]["t"] == samples
        funcs = explore.functions(p, q, limit=10_000)
        assert funcs["total"] == samples
        # self per function is the leaf frames perf printed (no symbols: DSO+offset)
        assert {f["n"]: f["s"] for f in funcs["functions"] if f["s"]} == dict(leaves)
        threads = explore.threads(p, q)["threads"]
        assert {t["tid"]: t["samples"] for t in threads} == dict(tids)
        timeline = explore.timeline(p, event=ev)
        assert sum(sum(s["counts"]) for s in timeline["series"]) == samples
        chart = explore.stacks(p, explore.Query(event=ev, px=0))
        assert sum(ln["samples"] for ln in chart["lanes"]) == samples


def test_the_events_differ_and_the_default_is_one_of_them():
    p = load(HERE / "events.perf.data")
    totals = [explore.flame(p, explore.Query(event=i))["total"] for i in range(len(p.events))]
    assert sorted(totals) == [78, 345]
    default = explore.flame(p, explore.Query())["total"]
    assert default == totals[p.default_event()]
    # the functions the two events see are not the same: CPU time in spin(), faults in
    # touch() and the kernel's fault path
    tops = [explore.functions(p, explore.Query(event=i))["functions"][0]["n"]
            for i in range(len(p.events))]
    assert tops[0] != tops[1]


def test_an_event_the_capture_does_not_have_is_refused():
    p = load(HERE / "events.perf.data")
    for bad in (2, -1):
        with pytest.raises(AnalysisError):
            explore.flame(p, explore.Query(event=bad))
        with pytest.raises(AnalysisError):
            explore.timeline(p, event=bad)
