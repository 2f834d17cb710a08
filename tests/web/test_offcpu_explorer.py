"""The off-CPU and wall-clock views on the web (issue 14): a capture recorded with
`perf record -g --switch-events -e cpu-clock/freq=499/ -e sched:sched_switch` uploaded
through the upload view and analyzed by a real Celery worker; the explorer's JSON in
microseconds equals the report's off-CPU totals, the thread states its threads' seconds,
and a capture without context switches says why it has no such view."""
import gzip
import re
from pathlib import Path

import pytest
from django.urls import reverse

from perfweb.captures.models import Capture, ShareLink

from .conftest import SPINPOOL, wait_for
from .test_pipeline import _status, _upload

pytestmark = pytest.mark.django_db(transaction=True)

MUTEX = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "cpp-server-mutex"
RECORD = ("perf record -g --switch-events -e cpu-clock/freq=499/ -e sched:sched_switch "
          "-p PID -- sleep 5")
EVIL = "<img/src=x/onerror=alert(1)>"


def _text_capture(tmp_path, rename_thread=None):
    """The gateway 1.1 capture (a global mutex) as the perf script text it was saved as;
    with `rename_thread`, worker 2 named that (perf keeps thread names as set)."""
    text = gzip.decompress((MUTEX / "1.1.perf.data.script.txt.gz").read_bytes()).decode()
    if rename_thread:
        text = re.sub(r"^gw-worker-2 ", f"{rename_thread} ", text, flags=re.M)
        text = text.replace("comm=gw-worker-2 ", f"comm={rename_thread} ")
    path = tmp_path / "gateway-1.1.perf-script.txt"
    path.write_text(text)
    return path


def _analyzed(client, path, **fields):
    r = _upload(client, path, **fields)
    assert r.status_code == 302, r.content[:500]
    capture = Capture.objects.order_by("-pk").first()
    done = wait_for(lambda: _status(capture.pk))
    assert done.status == "done", done.error
    return done


def _data(client, capture, kind, **params):
    return client.get(reverse(f"data-{kind}", args=[capture.pk]), params)


def test_off_cpu_views_of_the_mutex_capture(client, member, worker_factory, tmp_path):
    worker_factory()
    client.force_login(member)
    capture = _analyzed(client, _text_capture(tmp_path, EVIL), service="gateway",
                        version="1.1", label="load test")
    report = capture.latest_result().report
    oc = report["off_cpu"]
    totals = oc["totals"]
    assert totals["threads"] == 3 and oc["timed"]

    on = _data(client, capture, "flame").json()
    assert on["unit"] == "samples" and on["total"] == report["samples"] == 2384

    off = _data(client, capture, "flame", view="off-cpu").json()
    assert off["unit"] == "µs"
    # each interval is rounded to a whole microsecond: at most 1 µs each
    assert abs(off["total"] - totals["off_cpu_s"] * 1e6) <= totals["switches"]
    assert abs(off["total"] - totals["off_cpu_s"] * 1e6) < 10  # in fact
    nodes = {n["n"]: n for n in off["tree"]["nodes"]}
    lock = oc["top_blocking"][0]
    assert lock["caller"] == "gateway::Worker::on_readable" and lock["syscall"] == "futex"
    assert nodes["gateway::Worker::on_readable"]["t"] >= lock["seconds"] * 1e6
    assert "__GI___lll_lock_wait" in nodes
    functions = _data(client, capture, "functions", view="off-cpu").json()
    assert functions["total"] == off["total"]
    assert {f["n"]: f["t"] for f in functions["functions"]}["__GI___lll_lock_wait"] >= \
        lock["seconds"] * 1e6 - lock["count"]

    # wall-clock: the off-CPU time plus 1/499 s for each CPU sample
    wall = _data(client, capture, "flame", view="wall").json()
    assert wall["unit"] == "µs"
    assert wall["total"] == off["total"] + report["samples"] * round(1e6 / 499)
    assert abs((wall["total"] - off["total"]) / 1e6 - totals["on_cpu_s"]) < \
        0.02 * totals["on_cpu_s"]
    # a view with a thread and a time range: the thread's own seconds, then fewer
    tid = report["threads"][0]["tid"]
    one = _data(client, capture, "flame", view="off-cpu", tids=str(tid)).json()
    assert abs(one["total"] - report["threads"][0]["off_cpu_s"] * 1e6) <= \
        report["threads"][0]["switches"]
    part = _data(client, capture, "flame", view="off-cpu", start="1", end="2").json()
    assert 0.1 * off["total"] < part["total"] < 0.3 * off["total"]
    # a zoom and a focus by function id, as the page sends them from the on-CPU view
    fid = nodes["gateway::Worker::on_readable"]["f"]
    focused = _data(client, capture, "flame", view="off-cpu", focus=str(fid)).json()
    assert focused["callees"]["nodes"][0]["t"] == nodes["gateway::Worker::on_readable"]["t"]

    # the thread states: one row per thread, the report's seconds, slices that add up
    states = _data(client, capture, "states").json()
    rows = {t["tid"]: t for t in states["threads"]}
    assert set(rows) == {t["tid"] for t in report["threads"]}
    assert rows[27298]["comm"] == EVIL
    for t in report["threads"]:
        row = rows[t["tid"]]
        for key in ("on_cpu_s", "blocked_s", "preempted_s"):
            assert row[key] == pytest.approx(t[key], abs=1e-6), (t["tid"], key)
        assert len(row["blocked"]) == len(row["runnable"]) == 600
        assert all(0 <= b + r <= 1.002 for b, r in zip(row["blocked"], row["runnable"]))
        assert sum(row["blocked"]) * states["bucket_s"] == pytest.approx(
            row["blocked_s"], abs=0.01)
        assert sum(row["runnable"]) * states["bucket_s"] == pytest.approx(
            row["preempted_s"], abs=0.01)

    # an unknown view is a 400 with a sentence, on every data kind that takes one
    for kind in ("flame", "functions"):
        r = _data(client, capture, kind, view="offcpu")
        assert r.status_code == 400
        assert r.json()["error"] == "Unknown view 'offcpu': choose on-cpu, off-cpu or wall."

    # the page: the view switch, the off-CPU card (names as text), findings that open
    # the off-CPU view, the thread state timeline's place
    html = client.get(capture.get_absolute_url()).content.decode()
    assert 'id="time-tabs"' in html and 'data-switches="1"' in html
    assert 'id="thread-states"' in html and 'id="off-cpu-missing"' not in html
    card = html[html.index('id="off-cpu"'):html.index('id="explorer"')]
    assert f'{totals["off_cpu_s"]:.3f} s' in card and f'{totals["blocked_s"]:.3f} s' in card
    assert f'{totals["preempted_s"]:.3f} s' in card
    assert re.search(r'<td class="fn">futex</td><td class="fn">gateway::Worker::on_readable'
                     r'</td>\s*<td>5\.109 s</td><td>4243</td><td>1\.20 ms</td><td>3</td>',
                     card), card
    assert re.search(r'href="\?time=off-cpu&amp;focus=\d+&amp;tids=[\d,]+#explorer"', html)
    assert EVIL not in html  # the thread name only reaches the page as data

    # a share link shows the same views, read-only
    link = ShareLink.objects.create(capture=capture, token="o" * 32)
    shared = client.get(reverse("shared-data", args=[link.url_token, "flame"]),
                        {"view": "off-cpu"}).json()
    assert shared["total"] == off["total"] and shared["unit"] == "µs"
    page = client.get(reverse("shared", args=[link.url_token])).content.decode()
    assert 'id="time-tabs"' in page and 'id="off-cpu"' in page
    assert reverse("shared-data", args=[link.url_token, "states"]) in page


def test_a_capture_without_switches_says_how_to_record_them(client, member, worker_factory):
    worker_factory()
    client.force_login(member)
    capture = _analyzed(client, SPINPOOL / "1.0.0-idle.truth-script.txt")
    assert capture.latest_result().report["off_cpu"] is None
    for kind in ("flame", "functions"):
        for view in ("off-cpu", "wall"):
            r = _data(client, capture, kind, view=view)
            assert r.status_code == 400
            assert r.json()["error"] == (
                f"the {view} view needs context switches with switch-ins: record with "
                f"`{RECORD}`")
    assert _data(client, capture, "flame", view="on-cpu").json()["total"] == 975
    assert _data(client, capture, "states").json()["threads"] == []
    html = client.get(capture.get_absolute_url()).content.decode()
    assert 'id="time-tabs"' not in html and 'id="off-cpu"' not in html
    assert 'data-switches' not in html and 'id="thread-states"' not in html
    hint = html[html.index('id="off-cpu-missing"'):]
    assert RECORD in hint and "/sys/kernel/tracing" in hint
    assert "kernel.perf_event_paranoid=-1" in hint
    upload = client.get(reverse("upload")).content.decode()
    help_ = upload[upload.index('id="record-switches"'):]
    assert RECORD in help_ and "--switch-events</code>: a record at every switch" in help_
    assert "-F 499</code> would sample the tracepoint" in help_
