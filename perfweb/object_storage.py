"""The bucket as the default storage (STORAGE_BACKEND=s3), for web and workers on many
hosts: django-storages' S3Storage, with

- download(name, path): a stored file written straight to a local path (the worker's
  work folder: the perf.data reader and the symbol readers mmap their files), in parts,
  without the whole file passing through memory (S3File reads into memory first, or
  into a spooled temporary file, which is then copied again);
- the bucket's errors as OSError, as the filesystem's would be, so the code that stores,
  sizes and deletes files handles one kind of error whichever storage it has: a missing
  object is FileNotFoundError, a bucket that refuses or cannot be reached is
  StoreUnavailable (perfweb.store_errors: an OSError, EIO).
"""
from __future__ import annotations

import errno
import functools
import logging

from boto3.exceptions import Boto3Error
from botocore.exceptions import BotoCoreError, ClientError
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

from .store_errors import StoreUnavailable

log = logging.getLogger(__name__)

#: what the bucket's client raises: botocore's, and boto3's own from its transfers
#: (RetriesExceededError when a download keeps breaking off mid-body, S3UploadFailedError)
_BUCKET_ERRORS = (ClientError, BotoCoreError, Boto3Error)


def _missing(e: ClientError) -> bool:
    """The object is not there (not: the bucket is not there, which is the setup's)."""
    code = e.response.get("Error", {}).get("Code", "")
    status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return code in ("404", "NoSuchKey", "NotFound") or (status == 404 and
                                                          code != "NoSuchBucket")


def as_os_error(e: Exception, name: str) -> OSError:
    if isinstance(e, ClientError) and _missing(e):
        return FileNotFoundError(errno.ENOENT, f"{name} is not in the bucket")
    log.warning("file store unavailable for %s: %s", name, e)
    return StoreUnavailable()


def _os_errors(method):
    @functools.wraps(method)
    def wrapped(self, name, *args, **kwargs):
        try:
            return method(self, name, *args, **kwargs)
        except _BUCKET_ERRORS as e:
            raise as_os_error(e, name) from e
    return wrapped


class BucketStorage(S3Storage):
    _open = _os_errors(S3Storage._open)
    _save = _os_errors(S3Storage._save)
    delete = _os_errors(S3Storage.delete)
    exists = _os_errors(S3Storage.exists)
    size = _os_errors(S3Storage.size)

    @_os_errors
    def download(self, name: str, path: str) -> None:
        """The stored file `name` written to the local file `path`."""
        key = self._normalize_name(clean_name(name))
        self.bucket.download_file(key, path, Config=self.transfer_config)

    def keys(self, prefix: str = "") -> list[str]:
        """Every object's name under `prefix` (for tests and operators)."""
        try:
            return sorted(o.key for o in self.bucket.objects.filter(
                Prefix=self._normalize_name(clean_name(prefix)) if prefix else ""))
        except _BUCKET_ERRORS as e:
            raise as_os_error(e, prefix or "the bucket") from e
