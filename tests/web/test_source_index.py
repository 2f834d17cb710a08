"""Source archives are read once, by the worker, never by a request (issue 33): a 21 KB
tar.bz2 whose first member was 16 GiB of zeros and whose second was the source file made
every hot-lines request decompress all of it; three share-link requests held all three
gunicorn workers for 120 s and the sign-in page timed out. Now the worker refuses it once
at analysis time, and requests read what it recorded: the refusal, or the text files.
The stored archives are removed before the requests that follow, so an answer that still
comes cannot have come from reading one."""
import json
import threading
import time
import urllib.request
from datetime import timedelta

import pytest
import redis
from django.urls import reverse
from django.utils import timezone

from perfweb.captures import pipeline
from perfweb.captures.models import Capture, ShareLink, SourceMember, SymbolFile
from perfweb.captures.services.sources import NOT_READ
from tests.source_bombs import zeros_then_source

from .conftest import queue_keys, wait_for
from .test_dwarf_capture import FILES, POOL, _source_archive
from .test_pipeline import _status, _upload

pytestmark = pytest.mark.django_db(transaction=True)


def _analysed(client, version, sources=None):
    if sources is None:
        r = _upload(client, POOL / "dwarf8k.perf.data", FILES, service="pool",
                    version=version, label="load")
    else:
        with open(sources, "rb") as src:
            r = _upload(client, POOL / "dwarf8k.perf.data", FILES, service="pool",
                        version=version, label="load", sources=src)
    assert r.status_code == 302, r.content[:500]
    capture = Capture.objects.get(build__version=version)
    capture = wait_for(lambda: _status(capture.pk))
    assert capture.status == "done", capture.error
    return capture


def _focus_of_mix(client, capture) -> int:
    funcs = client.get(reverse("data-functions", args=[capture.pk])).json()["functions"]
    return next(f["f"] for f in funcs if f["n"] == "mix")


def _get(url, cookie=None):
    """(status, JSON or None, seconds)."""
    t0 = time.monotonic()
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read()
            status = r.status
    except OSError as e:  # a timeout, or an HTTP error
        return getattr(e, "code", None), None, time.monotonic() - t0
    data = json.loads(body) if body.startswith(b"{") else None
    return status, data, time.monotonic() - t0


def test_a_source_archive_bomb_is_refused_once_and_requests_stay_fast(
        client, member, worker_factory, server_factory, tmp_path):
    worker_factory()
    client.force_login(member)
    bomb = tmp_path / "pool-src.tar.bz2"
    zeros_then_source(bomb, (POOL / "libwork.cpp").read_bytes())  # 16 GiB of zeros first
    assert bomb.stat().st_size < 24_000
    hostile = _analysed(client, "1.0", bomb)
    normal = _analysed(client, "1.1", _source_archive(tmp_path))
    refusal = (f"Source archive pool-src.tar.bz2 refused: it expands more than 200x its "
               f"size of {bomb.stat().st_size:,} bytes (an archive bomb?).")

    base = server_factory(workers=3)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    links = {c: ShareLink.objects.create(capture=c, token=f"{c.pk:032d}", created_by=member)
             for c in (hostile, normal)}
    focus = {c: _focus_of_mix(client, c) for c in (hostile, normal)}

    def lines_urls(c):
        return [(f"{base}/s/{links[c].url_token}/data/lines.json?focus={focus[c]}", None),
                (f"{base}/captures/{c.pk}/data/lines.json?focus={focus[c]}", cookie)]

    # three share-link requests and the team's at once, as the probe sent them, then the
    # sign-in page: all answered, each within seconds (they took 120 s and failed)
    urls = lines_urls(hostile) * 2
    results = [None] * len(urls)
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, _get(*urls[i])))
               for i in range(len(urls))]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    login = _get(f"{base}/login/")
    assert time.monotonic() - t0 < 20, (results, login)
    assert login[0] == 200
    for status, data, _ in results:
        assert status == 200
        assert sum(x["s"] for x in data["lines"]) == 68  # the hot lines themselves stay
        assert data["source"] is None and data["source_note"] == refusal

    # the worker read it once and kept the refusal; nothing of it was kept as text
    sf = SymbolFile.objects.get(build=hostile.build, kind="source")
    assert (sf.indexed, sf.refused) == (True, refusal)
    assert not SourceMember.objects.filter(archive=sf).exists()
    # the normal archive's text files, as the worker took them out
    kept = SymbolFile.objects.get(build=normal.build, kind="source")
    assert (kept.indexed, kept.refused) == (True, "")
    assert sorted(SourceMember.objects.filter(archive=kept).values_list("name", flat=True)) \
        == ["cpp-pool/libwork.cpp", "cpp-pool/pool.cpp", "cpp-pool/work.h"]
    before = _get(*lines_urls(normal)[0])[1]
    assert before["source"]["file"] == "cpp-pool/libwork.cpp" and before["source_note"] is None

    # with both stored archives gone, every answer is the same: no request reads one
    for f in (sf.file, kept.file):
        f.storage.delete(f.name)
    for c, want in ((hostile, results[0][1]), (normal, before)):
        for url, auth in lines_urls(c):
            status, data, _ = _get(url, auth)
            assert (status, data) == (200, want)
    text = (POOL / "libwork.cpp").read_text().splitlines()
    assert [r["text"] for r in before["source"]["rows"]] == \
        [text[r["line"] - 1] for r in before["source"]["rows"]]


def test_an_archive_added_on_the_build_page_is_read_at_upload(client, member, worker_factory,
                                                             tmp_path):
    """A source archive added on the build page is read by a worker when it is uploaded
    (the task index_source_archive), with no analysis: before this, it stayed "not read
    yet" until someone re-analysed the build. Until a worker has read it, a request
    still does not: the hot lines say so."""
    worker = worker_factory()
    client.force_login(member)
    capture = _analysed(client, "1.0")
    worker.terminate()
    worker.wait(30)
    archive = _source_archive(tmp_path)
    with open(archive, "rb") as f:
        r = client.post(reverse("build", args=[capture.build.pk]), {"sources": [f]})
    assert r.status_code == 302, r.content[:500]
    sf = SymbolFile.objects.get(kind="source")
    assert not sf.indexed
    url = reverse("data-lines", args=[capture.pk])
    focus = _focus_of_mix(client, capture)
    data = client.get(url, {"focus": focus}).json()
    assert data["source"] is None
    assert data["source_note"] == NOT_READ.format(name="pool-src.tar.gz") == (
        "Source archive pool-src.tar.gz has not been read yet: a worker reads each source "
        "archive once it is uploaded. Reload in a moment to see its source.")

    worker_factory()  # the message waited in the queue; no re-analysis is asked
    wait_for(lambda: SymbolFile.objects.get(pk=sf.pk).indexed)
    assert Capture.objects.get(pk=capture.pk).finished_at == capture.finished_at
    assert SourceMember.objects.filter(archive=sf).exists()
    data = client.get(url, {"focus": focus}).json()
    assert data["source"]["file"] == "cpp-pool/libwork.cpp"
    assert data["source"]["archive"] == "pool-src.tar.gz" and data["source_note"] is None


def test_an_archive_whose_message_was_lost_is_read_after_the_sweep(client, member,
                                                                   worker_factory, tmp_path,
                                                                   settings):
    """The read's message lost (the queue emptied before any worker took it): the sweep
    sends it again once the archive has waited past the grace, ahead of new work."""
    worker = worker_factory()
    client.force_login(member)
    capture = _analysed(client, "1.0")
    worker.terminate()
    worker.wait(30)
    with open(_source_archive(tmp_path), "rb") as f:
        assert client.post(reverse("build", args=[capture.build.pk]),
                           {"sources": [f]}).status_code == 302
    redis.Redis.from_url(settings.REDIS_URL).delete(
        *queue_keys(settings.CELERY_TASK_DEFAULT_QUEUE))  # the message is lost
    sf = SymbolFile.objects.get(kind="source")
    pipeline.sweep()  # within the grace: not sent again yet
    assert not any(redis.Redis.from_url(settings.REDIS_URL).llen(k)
                   for k in queue_keys(settings.CELERY_TASK_DEFAULT_QUEUE))
    SymbolFile.objects.filter(pk=sf.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.PERFWEB_QUEUED_GRACE_S + 1))
    pipeline.sweep()
    worker_factory()
    wait_for(lambda: SymbolFile.objects.get(pk=sf.pk).indexed)
    assert SourceMember.objects.filter(archive=sf).exists()
