"""The page's downloads of a capture recorded as the upload page recommends (`-e
cpu-clock -e sched:sched_switch --switch-events`): folded stacks and speedscope hold its
CPU samples (the event the page shows), not its switches or both summed; `?event=` and
`?view=` export another event or the off-CPU view, as the explorer reads them; an
unknown event is a sentence, not a file. Counts are perf script's of the same perf.data
(tests/fixtures/offcpu/cpp-server-mutex: 2,384 cpu-clock samples, 8,442 switches)."""
import json
from pathlib import Path

import pytest

from .conftest import analysed

pytestmark = pytest.mark.django_db(transaction=True)

CAPTURE = Path(__file__).parents[1] / "fixtures" / "offcpu" / "cpp-server-mutex" / \
    "1.1.perf.data"


def _body(r) -> bytes:
    return b"".join(r.streaming_content) if r.streaming else r.content


def _folded_total(r) -> int:
    return sum(int(line.rsplit(b" ", 1)[1]) for line in _body(r).splitlines())


def test_downloads_hold_the_event_the_page_shows(client, member):
    c = analysed(member, CAPTURE, "gateway", "1.1", "load")
    client.force_login(member)
    base = f"/captures/{c.pk}"
    r = client.get(f"{base}/folded/")
    assert r.status_code == 200 and _folded_total(r) == 2384
    doc = json.loads(_body(client.get(f"{base}/export/speedscope/")))
    assert sum(len(p["samples"]) for p in doc["profiles"]) == 2384
    assert {p["unit"] for p in doc["profiles"]} == {"nanoseconds"}
    assert all(p["name"].startswith(("gw-", "python3")) for p in doc["profiles"])
    # another event, as the explorer's ?event= names it (an id of the capture's events)
    r = client.get(f"{base}/folded/?event=0")
    assert r.status_code == 200 and _folded_total(r) == 8442
    assert r["Content-Disposition"].endswith(f'capture-{c.pk}-on-cpu.folded.txt"')
    doc = json.loads(_body(client.get(f"{base}/export/speedscope/?event=0")))
    assert sum(len(p["samples"]) for p in doc["profiles"]) == 8442
    # the off-CPU view: microseconds blocked, at the switch-out stacks
    doc = json.loads(_body(client.get(f"{base}/export/speedscope/?view=off-cpu")))
    assert {p["unit"] for p in doc["profiles"]} == {"microseconds"}
    assert sum(sum(p["weights"]) for p in doc["profiles"]) > 0
    # the page's links carry what it shows (static/js/capture/exportlinks.js)
    page = client.get(f"{base}/").content.decode()
    assert page.count("data-export-shown") == 2
    r = client.get(f"{base}/export/speedscope/?event=7")
    assert r.status_code == 400 and r.content == b"no such event"
