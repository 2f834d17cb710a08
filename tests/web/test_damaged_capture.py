"""A damaged perf.data through the real pipeline (upload, Redis, a Celery worker,
PostgreSQL, the capture page): refused with the engine's message and no result, or, cut
just short, analyzed with the damaged-capture finding alone; never shown as idle."""
import struct

import pytest
from django.urls import reverse

from perfweb.captures.models import AnalysisResult, Capture

from .conftest import SPINPOOL, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

DATA_START = 296  # the data section of 1.0.0-idle.perf.data (its header, bytes 40-47)


def _upload(client, path, version):
    with open(path, "rb") as f:
        r = client.post(reverse("upload"), {"service": "llm-api", "version": version,
                                            "label": "idle", "capture": f})
    assert r.status_code == 302
    return Capture.objects.get(build__version=version)


def _finished(pk):
    c = Capture.objects.get(pk=pk)
    return c if c.finished else None


def test_damaged_captures_fail_or_are_marked_never_idle(client, member, worker_factory,
                                                        tmp_path):
    raw = (SPINPOOL / "1.0.0-idle.perf.data").read_bytes()
    zero = bytearray(raw)
    struct.pack_into("<H", zero, DATA_START + 6, 0)  # the first record's size
    (tmp_path / "zero.perf.data").write_bytes(bytes(zero))
    (tmp_path / "cut.perf.data").write_bytes(raw[:99000])
    worker_factory()
    client.force_login(member)
    refused = _upload(client, tmp_path / "zero.perf.data", "1.0.0")
    kept = _upload(client, tmp_path / "cut.perf.data", "1.0.1")

    done = wait_for(lambda: _finished(refused.pk))
    assert done.status == "failed"
    assert done.error == (
        "perf.data is damaged: the record at byte 296 (offset 0x0 of the data section) "
        "has size 0, and a record is at least 8 bytes; perf cannot read past it either "
        "(0 samples before it, 98960 bytes of data from it on)")
    assert not AnalysisResult.objects.filter(capture=refused).exists()
    page = client.get(refused.get_absolute_url()).content.decode()
    assert "perf cannot read past it either" in page and 'id="findings"' not in page
    assert "Idle" not in page
    # a failed analysis has nothing to share (issue 36): no Share card, and a link asked
    # for anyway is refused with a sentence
    assert 'id="sharing"' not in page
    r = client.post(reverse("share-create", args=[refused.pk]), {"days": "7"})
    assert r.status_code == 400 and b"no analysis to share" in r.content
    assert not refused.share_links.exists()

    done = wait_for(lambda: _finished(kept.pk))
    assert done.status == "done", done.error
    report = AnalysisResult.objects.get(capture=kept).report
    assert report["samples"] == 972
    assert [f["rule"] for f in report["findings"]] == ["damaged-capture"]
    assert report["metadata"]["damaged"].startswith(
        "perf.data is damaged: the file ends at byte 99000; the header declares 98960 "
        "bytes of data, up to byte 99256: the file is cut short. 972 samples were read")
    page = client.get(kept.get_absolute_url()).content.decode()
    assert "Damaged capture: part of it could not be read" in page
    assert "Idle" not in page and "Threads spin" not in page


def test_a_picture_is_refused_before_anything_is_made(client, member):
    """(Issue 36.) A PNG chosen as the capture: the form says the file is no capture,
    and no service, build or capture is made for it; through the API, a 400."""
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200)
    client.force_login(member)
    from django.core.files.uploadedfile import SimpleUploadedFile
    r = client.post(reverse("upload"), {"service": "photos", "version": "1", "label": "x",
                                        "capture": SimpleUploadedFile("shot.png", png)})
    assert r.status_code == 400  # (the form again, with the sentence)
    assert "This file is not a capture perfweb can read: this is a binary file of " \
           "unknown kind, not a profile." in r.content.decode()
    from perfweb.captures.models import Build, Service
    assert not Service.objects.exists() and not Build.objects.exists()
    assert not Capture.objects.exists()
