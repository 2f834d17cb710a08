"""The worker as a debuginfod client: the servers of DEBUGINFOD_URLS (the standard
variable; unset or empty, none) asked for the files of build-ids nobody uploaded, kept
in this worker's cache folder (PERFWEB_CACHE_DIR/debuginfod-client). The HTTP client
and its checks are analysis.symbols.debuginfod; this reads the worker's settings.

settings.DEBUGINFOD_URLS, when set, wins over the environment (settings_test sets it
empty, so no test asks the internet whatever the developer's shell exports)."""
from __future__ import annotations

import os

from django.conf import settings

from analysis.symbols.debuginfod import Client


def client() -> Client | None:
    """A client for one analysis, None when no server is configured."""
    environ = dict(os.environ)
    urls = getattr(settings, "DEBUGINFOD_URLS", None)
    if urls is not None:
        environ["DEBUGINFOD_URLS"] = urls
    return Client.from_env(environ, settings.PERFWEB_CACHE_DIR)
