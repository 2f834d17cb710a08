"""The event picker in Chromium, on a capture of two events (cpu-clock and page-faults,
tests/fixtures/perfdata/record.sh): it lists the events with perf's sample counts, and
picking one redraws the flame graph, the call tree, the top functions and the threads
with that event's samples, as `perf report` and `perf script` count them."""
import re
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from perfweb.captures.models import ShareLink
from script_samples import raw_samples

from ..conftest import analysed

pytestmark = pytest.mark.django_db(transaction=True)

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "perfdata"
REPORTED = re.compile(r"^# Samples: (\d+)\s+of event '(.+)'$", re.M)
CPU, FAULTS = "cpu-clock/freq=199/", "page-faults/period=200/"


@pytest.fixture
def events(member):
    return analysed(member, HERE / "events.perf.data", "faults", "1", "two events")


def _perf():
    """event -> samples (perf report), and event -> leaf frame -> samples (perf script)."""
    reported = {e: int(n) for n, e in REPORTED.findall((HERE / "events.report.txt").read_text())}
    leaves: dict[str, Counter] = {}
    for _, _, _, event, frames in raw_samples(HERE / "events.script.txt"):
        leaves.setdefault(event, Counter())[frames[-1]] += 1
    return reported, leaves


def _total(page, n):
    page.wait_for_function(f"() => document.getElementById('explorer').dataset.flameTotal"
                           f" === '{n}'", timeout=30000)


def _functions(page):
    page.wait_for_selector("#functions tbody tr")
    return page.evaluate("""() => [...document.querySelectorAll('#functions tbody tr')]
        .map((tr) => [tr.querySelector('td.fn .name').textContent,
                      Number(tr.cells[0].textContent)])""")


def test_picking_an_event_redraws_every_view_with_its_samples(page, events):
    reported, leaves = _perf()
    assert reported == {CPU: 78, FAULTS: 345}
    page.goto(page.base + events.get_absolute_url())
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    picker = page.locator("#event-picker")
    assert picker.is_visible()
    options = page.evaluate("""() => [...document.querySelectorAll('#event-picker option')]
        .map((o) => [o.value, o.textContent, o.selected])""")
    assert sorted(text for _, text, _ in options) == \
        [f"{CPU} · 78 samples", f"{FAULTS} · 345 samples"]
    shown = next(text for _, text, selected in options if selected)
    default = CPU if shown.startswith(CPU) else FAULTS
    other = FAULTS if default == CPU else CPU
    _total(page, reported[default])
    assert page.text_content("#selection-total") == str(reported[default])

    value = next(v for v, text, _ in options if text.startswith(other))
    picker.select_option(value)
    _total(page, reported[other])
    assert f"event={value}" in page.url
    # the top functions: each function's self samples are the leaves perf printed
    page.wait_for_function("(n) => [...document.querySelectorAll('#functions tbody tr')]"
                           ".reduce((s, tr) => s + Number(tr.cells[0].textContent), 0) === n",
                           arg=reported[other])
    assert {n: s for n, s in _functions(page) if s} == dict(leaves[other])
    # the threads list counts that event
    page.wait_for_function("(n) => document.getElementById('threads').textContent"
                           ".endsWith(': ' + n)", arg=reported[other])
    # the call tree's root
    page.click("#view-tabs button[data-view=topdown]")
    page.wait_for_function("(n) => { const r = document.querySelector('#calltree tbody tr');"
                           " return r && r.cells[3].textContent === String(n); }",
                           arg=reported[other])

    # a reload keeps the event, and so does a share link made from this view
    page.reload()
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    _total(page, reported[other])
    assert page.input_value("#event-picker") == value
    link = ShareLink.objects.create(capture=events, token="e" * 32, created_by=events.uploaded_by,
                                    view=f"event={value}")
    page.goto(page.base + reverse("shared", args=[link.url_token]) + f"?{link.view}")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    _total(page, reported[other])
    # back to the default event: the URL says no event
    page.locator("#event-picker").select_option(next(v for v, t, _ in options
                                                     if t.startswith(default)))
    _total(page, reported[default])
    assert "event=" not in page.url
    page.wait_for_function("(n) => document.getElementById('threads').textContent"
                           ".endsWith(': ' + n)", arg=reported[default])
    assert page.errors == []


def test_the_data_endpoints_take_an_event(page, events):
    """The share link's data too; an event the capture lacks is a 400 with a reason."""
    reported, _ = _perf()
    link = ShareLink.objects.create(capture=events, token="f" * 32, created_by=events.uploaded_by)
    page.goto(page.base + events.get_absolute_url())
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    got = page.evaluate("""async ([a, b]) => {
        const out = [];
        for (const base of [a, b]) {
          for (const ev of ["0", "1", "7"]) {
            const r = await answer(`${base}flame.json?event=${ev}`);
            out.push([r.status, (await r.json()).total ?? null]);
          }
        }
        return out;
    }""", [reverse("data-flame", args=[events.pk])[:-len("flame.json")],
           reverse("shared-data", args=[link.url_token, "flame"])[:-len("flame.json")]])
    from perfweb.captures.services.profiles import stored_profile
    names = [e.name for e in stored_profile(events).events]
    expect = [[200, reported[names[0]]], [200, reported[names[1]]], [400, None]]
    assert got == expect + expect
