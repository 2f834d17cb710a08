"""Limits applied while an upload streams in, before anything is stored.

Django writes uploads above 2.5 MB to temporary files; this handler stops writing a file
once it passes PERFWEB_MAX_UPLOAD_BYTES (the rest of it is read and dropped), so an
oversized upload costs at most the limit on disk and still gets its clear message from
`uploads.check_size`. A request larger than every file could be is refused before its
body is read (413).

A request with more files than DATA_UPLOAD_MAX_NUMBER_FILES (PERFWEB_MAX_UPLOAD_FILES) or
more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS makes Django's parser raise a
SuspiciousOperation, which Django answers through handler400: `bad_request` gives it a
sentence (JSON for the API and the upload page's script) instead of Django's HTML page.

It also hashes each file as it arrives, so that storing it (`uploads.sha256_of`) does not
read the 100 MB of a capture and its symbol files back from disk to hash them again.
"""
from __future__ import annotations

import errno
import hashlib

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.http import HttpResponse, JsonResponse
from django.views import defaults

from .uploads import exact_size


class SizeLimitedUploadHandler(TemporaryFileUploadHandler):
    #: Django's parser reads the body in its handlers' chunk size (64 KiB by default).
    #: gunicorn's reader fetches up to 1 MiB from the socket ahead and copies what it
    #: holds on every read, so 64 KiB reads copied each megabyte 16 times over: 0.17 s
    #: of a 108 MB upload (benchmarks/bench_upload.py, py-spy on the gunicorn worker).
    chunk_size = 1 << 20

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0
        self.kept = True
        self.sha256 = hashlib.sha256()

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.PERFWEB_MAX_UPLOAD_BYTES or storage_full(self.request):
            self.kept = False
            return None  # counted, not kept
        try:
            chunk = super().receive_data_chunk(raw_data, start)
        except OSError as e:
            if e.errno not in FULL:
                raise
            self.request.perfweb_storage_full = True  # the view says so (507)
            self.kept = False
            return None
        self.sha256.update(raw_data)
        return chunk

    def file_complete(self, file_size):
        f = super().file_complete(min(file_size, self.received))
        if f is not None:
            f.size = self.received  # what was sent, for the message
            if self.kept:  # the digest of every byte sent, and of what was written
                f.perfweb_sha256 = self.sha256.hexdigest()
        return f


FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
STORAGE_FULL = ("The server's storage is full; nothing of this upload was kept. Try again "
                "later or tell an administrator.")


def storage_full(request) -> bool:
    """Whether the temporary files of this request's upload could not be written."""
    return getattr(request, "perfweb_storage_full", False)


def request_too_large(request) -> HttpResponse | None:
    """More bytes than a capture and PERFWEB_MAX_SYMBOL_FILES symbol files at the limit."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    most = settings.PERFWEB_MAX_UPLOAD_BYTES * (1 + settings.PERFWEB_MAX_SYMBOL_FILES)
    if length <= most:
        return None
    return _refused(request, 413, (
        f"The upload is {exact_size(length)}; a capture and its symbol files may be "
        f"{exact_size(settings.PERFWEB_MAX_UPLOAD_BYTES)} each."))


def _refused(request, status: int, message: str) -> HttpResponse:
    """`message` as JSON's `detail` for the API and the upload page's script (which
    asks for JSON), as text for a form posted without it."""
    if request.path.startswith("/api/") or \
            request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def too_many_files() -> str:
    return (f"An upload holds at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES:,} files (the "
            f"capture, symbol files and source archives together); this one has more. "
            f"Put the symbol files in a .zip or .tar.gz archive (its members are read), "
            f"or upload them in several parts.")


def bad_request(request, exception=None):
    """Django's handler400: the limits Django's request parser enforces, in a sentence;
    any other bad request (a host not allowed, ...) gets Django's own page."""
    if isinstance(exception, TooManyFilesSent):
        return _refused(request, 400, too_many_files())
    if isinstance(exception, TooManyFieldsSent):
        return _refused(request, 400, (
            f"A request holds at most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form "
            f"fields; this one has more."))
    if isinstance(exception, RequestDataTooBig):
        return _refused(request, 400, (
            f"A request's fields other than files may take "
            f"{exact_size(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}; this one's take more."))
    return defaults.bad_request(request, exception)


class UploadLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST":
            refused = request_too_large(request)
            if refused is not None:
                return refused
        return self.get_response(request)
