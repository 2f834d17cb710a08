"""The error of a file store that cannot be reached (the bucket, STORAGE_BACKEND=s3), kept
apart from perfweb.object_storage so the middleware that answers it needs no boto3."""
from __future__ import annotations

import errno

MESSAGE = ("The file store is unavailable for a moment; nothing was lost. Try again "
           "shortly.")


class StoreUnavailable(OSError):
    """The bucket refused the request or could not be reached; the details (endpoint,
    bucket, the client's error) go to the log, not to the user."""

    def __init__(self, message: str = MESSAGE):
        super().__init__(errno.EIO, message)

    def __str__(self) -> str:
        return self.strerror
