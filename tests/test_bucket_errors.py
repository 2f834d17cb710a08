"""The bucket storage's errors as the filesystem's (perfweb/object_storage.py) and the
host's copies of stored files (perfweb/captures/local_files.py), against a tiny HTTP
server standing for an S3 bucket: one object served whole, one whose every GET breaks
off mid-body (boto3's download retries, then raises its own RetriesExceededError, a
Boto3Error botocore's exceptions are not)."""
import hashlib
import http.server
import os

import pytest
from django.db.models.fields.files import FieldFile, FileField

from loopback_http import serving
from perfweb.captures import local_files
from perfweb.captures.local_files import local_copy, trim_cache
from perfweb.object_storage import BucketStorage
from perfweb.store_errors import StoreUnavailable

BODY = bytes(range(256)) * 40  # 10,240 bytes
DIGEST = hashlib.sha256(BODY).hexdigest()


class _Bucket(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    gets: list = []

    def _head(self, status=200, length=len(BODY)):
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("ETag", f'"{hashlib.md5(BODY).hexdigest()}"')
        self.send_header("Last-Modified", "Wed, 02 Dec 2026 04:00:00 GMT")
        self.end_headers()

    def do_HEAD(self):
        if self.path.split("?")[0] in ("/bucket/good", "/bucket/broken"):
            self._head()
        else:
            self._head(404, 0)

    def do_GET(self):
        key = self.path.split("?")[0]
        self.gets.append(key)
        if key == "/bucket/good":
            self._head()
            self.wfile.write(BODY)
        elif key == "/bucket/broken":
            self._head()
            self.wfile.write(BODY[:1000])  # then the connection drops
            self.wfile.flush()
            self.close_connection = True
        else:
            self._head(404, 0)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def bucket():
    with serving(_Bucket) as url:
        yield BucketStorage(bucket_name="bucket", endpoint_url=url, region_name="us-east-1",
                            access_key="test", secret_key="test", addressing_style="path")


def _field_file(storage, name):
    return FieldFile(None, FileField(storage=storage), name)


def test_a_download_breaking_off_mid_body_is_store_unavailable(bucket, settings, tmp_path):
    settings.PERFWEB_CACHE_DIR = str(tmp_path / "cache")
    _Bucket.gets.clear()
    with pytest.raises(StoreUnavailable):
        bucket.download("broken", str(tmp_path / "x"))
    assert len(_Bucket.gets) == 5  # boto3's attempts, each cut after 1,000 bytes
    # through the worker's path: the host's cache keeps nothing, not even the part
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(StoreUnavailable):
        local_copy(_field_file(bucket, "broken"), str(work), "libx.so.debug", DIGEST)
    assert [f for f in (tmp_path / "cache").rglob("*") if f.is_file()] == []
    # the same storage serves a whole object (the server is a bucket, not a wall)
    path = local_copy(_field_file(bucket, "good"), str(work), "libx.so.debug", DIGEST)
    assert open(path, "rb").read() == BODY
    assert os.path.basename(path) == "libx.so.debug"


def test_a_trim_between_link_and_use_mark_fails_nothing(bucket, settings, tmp_path,
                                                        monkeypatch):
    """Another analysis's trim removes the host's copy right after this one linked it
    (before its use time is set): the link is whole and the analysis goes on."""
    settings.PERFWEB_CACHE_DIR = str(tmp_path / "cache")
    work = tmp_path / "work"
    work.mkdir()
    kept = tmp_path / "cache" / "stored" / DIGEST[:2] / DIGEST
    real_link = os.link
    trims = []

    def link_then_trim(src, dst, *a, **k):
        real_link(src, dst, *a, **k)
        settings.PERFWEB_STORED_CACHE_BYTES = 0  # the other analysis's trim, over budget
        trims.append(trim_cache())

    monkeypatch.setattr(local_files.os, "link", link_then_trim)
    _Bucket.gets.clear()
    path = local_copy(_field_file(bucket, "good"), str(work), "libx.so.debug", DIGEST)
    assert trims == [1] and not kept.exists()
    assert open(path, "rb").read() == BODY and _Bucket.gets == ["/bucket/good"]
