"""Whether an upload is a capture at all, decided from its first bytes as the worker
decides (analysis.importers.detect) before anything of the upload is stored or created:
a PNG uploaded as a capture used to make its service and build, then fail in the
worker."""
from __future__ import annotations

from analysis.errors import UnrecognizedFormat
from analysis.importers import detect


def refusal(upload) -> str | None:
    """The sentence that says why `upload` (a file object, rewound after) is no capture
    of any format perfweb reads; None when it may be one (the worker decides the rest:
    a damaged capture is kept and said damaged)."""
    try:
        detect(upload)
    except UnrecognizedFormat as e:
        return f"this file is not a capture perfweb can read: {e}"
    return None
