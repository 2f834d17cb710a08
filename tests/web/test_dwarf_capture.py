"""A `--call-graph dwarf` capture uploaded with its binaries and debug files, analyzed by
a real Celery worker: the stored stacks are unwound (whole stacks, as perf script's), the
explorer sends short names with the full signature beside them, and a function's hot
lines come back with file and line from the debug info."""
from pathlib import Path

import pytest
from django.urls import reverse

from perfweb.captures.models import Capture

from .conftest import wait_for
from .test_pipeline import _status, _upload

pytestmark = pytest.mark.django_db(transaction=True)

DWARF = Path(__file__).resolve().parents[1] / "fixtures" / "dwarf"
POOL = DWARF / "cpp-pool"
FILES = [POOL / "pool", POOL / "pool.debug", POOL / "libwork.so", POOL / "libwork.so.debug",
         DWARF / "system-libs" / "libc.so.6", DWARF / "system-libs" / "libc.so.6.symtab.debug",
         DWARF / "system-libs" / "libstdc++.so.6.0.30"]


def _data(client, capture, kind, **params):
    r = client.get(reverse(f"data-{kind}", args=[capture.pk]), params)
    assert r.status_code == 200, r.content[:300]
    return r.json()


def test_uploaded_dwarf_capture_is_unwound_named_and_has_hot_lines(client, member,
                                                                     worker_factory):
    worker_factory()
    client.force_login(member)
    r = _upload(client, POOL / "dwarf8k.perf.data", FILES, service="pool", version="1.0",
                label="load")
    assert r.status_code == 302, r.content[:500]
    capture = wait_for(lambda: _status(Capture.objects.get().pk))
    assert capture.status == "done", capture.error
    report = capture.latest_result().report
    assert report["samples"] == 441
    assert any("441 of 441 user stacks unwound" in n for n in report["notes"])
    assert "broken-stacks" not in {f["rule"] for f in report["findings"]}

    funcs = _data(client, capture, "functions")["functions"]
    by = {f["n"]: f for f in funcs}
    rec = by["work::record_less"]
    assert rec["g"] == "work::record_less(work::Record const&, work::Record const&)"
    assert rec["src"].endswith("cpp-pool/libwork.cpp")
    # self by the function that holds the address, as perf report counts it: 65 samples
    # (14.73% in its four threads' rows); the inlined `mix` is a frame on 68 stacks
    assert by["work::mix_block"]["s"] == 65
    assert (by["mix"]["s"], by["mix"]["t"]) == (0, 68)

    flame = _data(client, capture, "flame")
    names = {n["n"] for n in flame["tree"]["nodes"]}
    assert {"clone3", "start_thread", "worker_loop", "run_job", "work::digest"} <= names

    lines = _data(client, capture, "lines", focus=by["mix"]["f"])
    assert lines["n"] == "mix" and sum(x["s"] for x in lines["lines"]) == 68  # its leaves
    assert all(x["file"].endswith("libwork.cpp") and 16 <= x["line"] <= 20
               for x in lines["lines"])
    r = client.get(reverse("data-lines", args=[capture.pk]))
    assert r.status_code == 400 and "Choose a function" in r.json()["error"]
