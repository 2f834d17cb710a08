"""Uploads built to hold or crash a worker, through the real pipeline (upload, Redis, a
Celery worker, PostgreSQL, the capture page and the API): issue 33. A symbol file with
an 8-byte edit no longer holds the worker until the analysis limit; an input the fuzzer
found fails with the engine's sentence naming the field and the byte, not retryable, and
never "Retrying may help"."""
import io
import struct
import tarfile

import pytest
from django.urls import reverse
from elftools.elf.elffile import ELFFile

from perfweb.captures.models import AnalysisResult, Capture

from .conftest import SPINPOOL, wait_for

CORPUS = SPINPOOL.parent.parent

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT_S = 120


def _finished(pk):
    c = Capture.objects.get(pk=pk)
    return c if c.finished else None


def _upload(client, capture, version, symbols=()):
    files = [open(p, "rb") for p in (capture, *symbols)]
    try:
        r = client.post(reverse("upload"), {"service": "llm-api", "version": version,
                                            "label": "busy", "capture": files[0],
                                            "symbols": files[1:]})
    finally:
        for f in files:
            f.close()
    assert r.status_code == 302, r.content.decode()[:2000]
    return Capture.objects.get(build__version=version)


def _libqualla_with_plt_claiming(tmp_path, sh_size):
    """The libqualla.so that ran (from the capture's perf archive), its .plt's sh_size
    edited: the 8 bytes of the upload that held every worker slot for 20 minutes."""
    with tarfile.open(SPINPOOL / "1.1.0-busy.perf.data.tar.bz2") as t:
        member = next(m for m in t.getmembers()
                      if m.name.endswith("/elf") and "libqualla.so" in m.name)
        data = bytearray(t.extractfile(member).read())
    elf = ELFFile(io.BytesIO(bytes(data)))
    at = elf["e_shoff"] + elf.get_section_index(".plt") * elf["e_shentsize"] + 0x20
    struct.pack_into("<Q", data, at, sh_size)
    path = tmp_path / "libqualla.so"
    path.write_bytes(bytes(data))
    return path, at


def test_an_elf_with_an_edited_plt_size_is_analysed_well_inside_the_limit(
        client, member, worker_factory, tmp_path):
    bad, at = _libqualla_with_plt_claiming(tmp_path, 1 << 62)
    worker_factory({"PERFWEB_ANALYSIS_TIME_LIMIT_S": str(LIMIT_S)})
    client.force_login(member)
    capture = _upload(client, SPINPOOL / "1.1.0-busy.perf.data", "1.1.0",
                      [SPINPOOL / "symbols-1.1.0.zip", bad])
    done = wait_for(lambda: _finished(capture.pk), timeout=LIMIT_S + 30)
    assert done.status == "done", done.error  # not "processing took longer than ..."
    assert (done.finished_at - done.created_at).total_seconds() < LIMIT_S / 2
    report = AnalysisResult.objects.get(capture=done).report
    assert any(n.startswith(f"libqualla.so: section 10 (.plt) says it holds {1 << 62:,} "
                            f"bytes at byte 8,224 (sh_size at byte {at:,}")
               and n.endswith("its PLT stubs are not named") for n in report["notes"]), \
        report["notes"]
    libqualla = next(c for c in report["coverage"] if c["dso"].endswith("/libqualla.so"))
    assert libqualla["status"] == "resolved"
    assert "qualla::ThreadPool::loop" in {f["name"] for f in report["functions"]}


def _read_group_claiming(nr):
    """hotspot's PerfFormatLost capture (samples with a read group: PERF_SAMPLE_READ,
    PERF_FORMAT_GROUP) with its third sample's group size (nr) edited: the reader added
    nr * 16 to its position and read there, an OverflowError ("Python int too large to
    convert to C ssize_t") the worker showed as "failed unexpectedly ... Retrying may
    help"."""
    path = CORPUS / "public" / "KDAB__hotspot" / "tests" / "integrationtests" / \
        "perf.data.PerfFormatLost"
    data = bytearray(path.read_bytes())
    start, size = struct.unpack_from("<QQ", data, 40)  # the data section
    pos, end, seen = start, start + size, 0
    while pos < end:
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        if rtype == 9:
            seen += 1
            if seen == 3:
                struct.pack_into("<Q", data, pos + 8 + 48, nr)  # after ip..period
                return bytes(data), pos, pos - start
        pos += size
    raise AssertionError("no third sample")


def test_an_input_the_fuzzer_found_fails_with_its_field_and_byte_not_retryable(
        client, member, worker_factory, tmp_path):
    data, at, rel = _read_group_claiming(1 << 62)
    path = tmp_path / "lost.perf.data"
    path.write_bytes(data)
    worker_factory()
    client.force_login(member)
    capture = _upload(client, path, "2.0.0")
    done = wait_for(lambda: _finished(capture.pk))
    assert (done.status, done.retryable) == ("failed", False), done.error
    assert done.error.startswith(
        f"perf.data is damaged: 1 record does not decode with the layout of its event, the "
        f"first a SAMPLE record at byte {at} (offset 0x{rel:x} of the data section): "
        f"the read group's nr (byte 56 of the record) says {1 << 62:,} values of 24 bytes, "
        f"which run past the end of the 8,560-byte record"), done.error
    assert "etrying" not in done.error
    page = client.get(done.get_absolute_url()).content.decode()
    assert "the read group&#x27;s nr (byte 56 of the record)" in page
    assert 'id="retry"' not in page
    api = client.get(f"/api/v1/captures/{done.pk}/").json()
    assert api["status"] == "failed" and api["error"] == done.error
