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
         DWARF / "system-libs" / "libstdc++.so.6.0.30",
         DWARF / "system-libs" / "vdso-e95baaeaec8534edc5df3654182ddf12b19d9b23.so"]


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


def _source_archive(tmp_path, evil=False):
    """The cpp-pool sources as a user would pack them (`tar czf src.tar.gz cpp-pool`);
    `evil` adds what a hostile archive holds: a traversal name, a link, a bigger decoy."""
    import tarfile

    path = tmp_path / "pool-src.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for name in ("libwork.cpp", "pool.cpp", "work.h"):
            t.add(POOL / name, arcname=f"cpp-pool/{name}")
        if evil:
            link = tarfile.TarInfo("cpp-pool/other/libwork.cpp")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            t.addfile(link)
            t.add(POOL / "pool.cpp", arcname="../../libwork.cpp")
    return path


@pytest.mark.parametrize("evil", [False, True])
def test_hot_lines_come_with_their_source_from_the_builds_archive(client, member,
                                                                    worker_factory,
                                                                    tmp_path, evil):
    worker_factory()
    client.force_login(member)
    archive = _source_archive(tmp_path, evil)
    with open(archive, "rb") as src:
        r = _upload(client, POOL / "dwarf8k.perf.data", FILES, service="pool",
                    version="1.0", label="load", sources=src)
    assert r.status_code == 302, r.content[:500]
    capture = wait_for(lambda: _status(Capture.objects.get().pk))
    assert capture.status == "done", capture.error
    # the archive is the build's, and no symbol file: the analysis did not symbolize
    # with it, but read it once into its index of text files (the link, the name that
    # climbs out and the decoy under it are not kept)
    (sf,) = capture.build.symbol_files.filter(kind="source")
    assert not any("pool-src" in n for n in capture.latest_result().report["notes"])
    assert sorted(sf.source_members.values_list("name", flat=True)) == \
        ["cpp-pool/libwork.cpp", "cpp-pool/pool.cpp", "cpp-pool/work.h"]
    sf.file.storage.delete(sf.file.name)  # requests read the index, never the archive

    funcs = {f["n"]: f for f in _data(client, capture, "functions")["functions"]}
    lines = _data(client, capture, "lines", focus=funcs["mix"]["f"])
    src = lines["source"]
    assert src["file"] == "cpp-pool/libwork.cpp" and src["archive"] == "pool-src.tar.gz"
    assert lines["source_note"] is None
    text = (POOL / "libwork.cpp").read_text().splitlines()
    rows = {r["line"]: r for r in src["rows"]}
    for r in src["rows"]:
        assert r["text"] == text[r["line"] - 1]
    assert sum(r["s"] for r in src["rows"]) == 68  # mix's leaves, line by line
    assert "h ^= v * 0x9E3779B97F4A7C15ull;" in rows[17]["text"]
    assert rows[17]["s"] + rows[18]["s"] + rows[19]["s"] == 68

    # a function whose file the archive lacks (libc's) gets no source, and says so
    libc = next(f for f in funcs.values() if f["d"].endswith("libc.so.6"))
    libc_lines = _data(client, capture, "lines", focus=libc["f"])
    assert libc_lines["source"] is None and libc_lines["source_note"] is None


def test_the_upload_cli_sends_a_source_archive(live_server, member, worker_factory,
                                               tmp_path):
    """`perfweb upload --sources`: the archive lands on the build as a source archive."""
    import os
    import subprocess
    import sys

    from perfweb.captures.api_tokens import create_token

    from .conftest import ROOT

    worker_factory()
    key = create_token(member, "ci")
    args = [sys.executable, "-m", "perfweb_client", "upload", str(POOL / "dwarf8k.perf.data"),
            "--service", "pool", "--build", "1.0", "--label", "load",
            *[a for f in FILES for a in ("--symbols", str(f))],
            "--sources", str(_source_archive(tmp_path)), "--wait", "--url", live_server.url]
    r = subprocess.run(args, cwd=ROOT, env=dict(os.environ, PERFWEB_TOKEN=key),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    capture = Capture.objects.get()
    assert capture.status == "done"
    assert [sf.original_name for sf in capture.build.symbol_files.filter(kind="source")] \
        == ["pool-src.tar.gz"]


def test_the_upload_page_says_how_to_record_whole_stacks(client, member):
    client.force_login(member)
    page = client.get(reverse("upload")).content.decode()
    help_ = page[page.index('id="record-dwarf"'):]
    assert "perf record --call-graph dwarf -F 99 -p PID -- sleep 10" in help_
    assert "perf archive perf.data" in help_ and "dwarf,16384" in help_
    assert "Source archive" in page  # the upload form's field
