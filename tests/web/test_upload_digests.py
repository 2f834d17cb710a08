"""Each uploaded file is hashed as it streams in (upload_limits.SizeLimitedUploadHandler):
the digests stored are those of the bytes sent, for files spanning several of the
parser's 1 MiB chunks, and a file cut off at the size limit carries no digest at all (its
upload is refused, and a digest of part of it must never key anything)."""
import hashlib
import io
from pathlib import Path

import pytest
from django.http.multipartparser import MultiPartParser
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Capture, SymbolFile
from perfweb.captures.upload_limits import SizeLimitedUploadHandler
from perfweb.captures.uploads import sha256_of

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CAPTURE = FIXTURES / "offcpu" / "cpp-server-mutex" / "1.0.perf.data"  # 1,616,933 bytes
LIBC = FIXTURES / "dwarf" / "system-libs" / "libc.so.6"  # 1,926,232 bytes
LIBSTDCXX = FIXTURES / "dwarf" / "system-libs" / "libstdc++.so.6.0.30"  # 2,190,440 bytes


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_stored_digests_are_those_of_the_files(client, member):
    key = create_token(member, "ci")
    assert CAPTURE.stat().st_size == 1_616_933 and LIBC.stat().st_size == 1_926_232
    with open(CAPTURE, "rb") as c, open(LIBC, "rb") as s1, open(LIBSTDCXX, "rb") as s2:
        r = client.post("/api/v1/captures/", {"service": "digests", "version": "1.0",
                                               "capture": c, "symbols": [s1, s2]},
                        HTTP_AUTHORIZATION=f"Token {key}")
    assert r.status_code == 201, r.content
    capture = Capture.objects.get(pk=r.json()["id"])
    assert capture.sha256 == _digest(CAPTURE)
    assert capture.file.read() == CAPTURE.read_bytes()
    symbols = {sf.original_name: sf for sf in (SymbolFile.objects.filter(capture=capture) |
                                                SymbolFile.objects.filter(build=capture.build))}
    assert sorted(symbols) == ["libc.so.6", "libstdc++.so.6.0.30"]
    for path in (LIBC, LIBSTDCXX):
        sf = symbols[path.name]
        assert (sf.sha256, sf.size) == (_digest(path), path.stat().st_size)
        assert sf.file.read() == path.read_bytes()


def _parse(request, files: dict):
    body = encode_multipart(BOUNDARY, files)
    meta = {"CONTENT_TYPE": MULTIPART_CONTENT, "CONTENT_LENGTH": str(len(body))}
    handler = SizeLimitedUploadHandler(request)
    _, parsed = MultiPartParser(meta, io.BytesIO(body), [handler]).parse()
    return parsed


def test_digest_taken_on_receipt_and_none_for_a_cut_file(rf, settings):
    request = rf.post("/")
    with open(LIBC, "rb") as f:
        parsed = _parse(request, {"capture": f})
    up = parsed["capture"]
    assert up.size == 1_926_232 and up.perfweb_sha256 == _digest(LIBC)
    assert sha256_of(up) == _digest(LIBC)  # the digest taken on receipt, not read again

    settings.PERFWEB_MAX_UPLOAD_BYTES = 1_926_231  # one byte short: the file is cut
    with open(LIBC, "rb") as f:
        parsed = _parse(request, {"capture": f})
    up = parsed["capture"]
    assert up.size == 1_926_232  # what was sent, for the refusal's message
    assert not hasattr(up, "perfweb_sha256")
    # read back, it is not the file that was sent
    assert sha256_of(up) != _digest(LIBC)
