"""The capture page's "this selection" export links in Chromium: with an event and a time
range in the page's URL, the pprof and Firefox Profiler files downloaded by clicking hold
the samples the explorer's flame graph counts for that selection
(static/js/capture/exportlinks.js); the whole-capture links hold every sample."""
from pathlib import Path

import pytest

from analysis.export.firefox import read_firefox
from analysis.export.pprof import read_pprof

from ..conftest import analysed

pytestmark = pytest.mark.django_db(transaction=True)

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "perfdata"


def _download(page, selector):
    with page.expect_download() as info:
        page.click(selector)
    return Path(info.value.path()).read_bytes(), info.value.suggested_filename


def test_selection_links_carry_the_explorers_selection(page, member):
    capture = analysed(member, HERE / "events.perf.data", "faults", "1", "two events")
    url = page.base + capture.get_absolute_url()
    page.goto(url)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    options = page.evaluate("""() => [...document.querySelectorAll('#event-picker option')]
        .map((o) => [o.value, o.textContent])""")
    cpu = next(v for v, text in options if text.startswith("cpu-clock"))
    query = f"event={cpu}&start=0.2&end=0.7"
    page.goto(f"{url}?{query}")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    flame = page.answer(f"{page.base}/captures/{capture.pk}/data/flame.json?{query}").json()
    assert 0 < flame["total"] < 78  # of perf report's 78 cpu-clock samples
    assert page.evaluate("document.getElementById('explorer').dataset.flameTotal") == \
        str(flame["total"])

    data, name = _download(page, "#export-selection a:nth-of-type(1)")
    assert name == f"capture-{capture.pk}-selection.pb.gz"
    msg = read_pprof(data)
    assert sum(s.value[0] for s in msg.sample) == flame["total"]
    assert msg.duration_nanos == 500_000_000
    data, name = _download(page, "#export-selection a:nth-of-type(2)")
    assert name == f"capture-{capture.pk}-selection.firefox.json.gz"
    gecko = read_firefox(data)
    assert sum(len(t["samples"]["data"]) for t in gecko["threads"]) == flame["total"]
    times = [row[1] for t in gecko["threads"] for row in t["samples"]["data"]]
    assert 200 <= min(times) and max(times) < 700

    # the whole capture's links: the default event's samples, all of them
    data, name = _download(page, "#export-pprof")
    assert name == f"capture-{capture.pk}.pb.gz"
    whole = page.answer(f"{page.base}/captures/{capture.pk}/data/flame.json").json()
    assert sum(s.value[0] for s in read_pprof(data).sample) == whole["total"]
    assert page.errors == []


def test_folded_and_speedscope_links_carry_the_event_shown(page, member):
    """(Issue 36, bug 1.) A capture recorded as the upload page recommends, cpu-clock
    and sched_switch: the links give its CPU samples (perf script: 2,384), not the
    switches (8,442) nor both summed; with the switch event picked in the page, the
    switches."""
    import json
    capture = analysed(member, HERE.parent / "offcpu" / "cpp-server-mutex" / "1.1.perf.data",
                       "gateway", "1.1", "load")
    url = page.base + capture.get_absolute_url()
    page.goto(url)
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    data, name = _download(page, "#export-folded")
    assert name == f"capture-{capture.pk}.folded.txt"
    assert sum(int(line.rsplit(b" ", 1)[1]) for line in data.splitlines()) == 2384
    data, _ = _download(page, "#export-speedscope")
    doc = json.loads(data)
    assert sum(len(p["samples"]) for p in doc["profiles"]) == 2384
    options = page.evaluate("""() => [...document.querySelectorAll('#event-picker option')]
        .map((o) => [o.value, o.textContent])""")
    switch = next(v for v, text in options if text.startswith("sched:sched_switch"))
    page.goto(f"{url}?event={switch}")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    data, name = _download(page, "#export-folded")
    assert name == f"capture-{capture.pk}-on-cpu.folded.txt"
    assert sum(int(line.rsplit(b" ", 1)[1]) for line in data.splitlines()) == 8442
    data, _ = _download(page, "#export-speedscope")
    assert sum(len(p["samples"]) for p in json.loads(data)["profiles"]) == 8442
    assert page.errors == []
