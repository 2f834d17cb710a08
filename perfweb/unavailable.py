"""When PostgreSQL is down (restarting, failing over), every request that needs it gets a
503 with a sentence, not a traceback or a bare 500, and the next request after it is back
simply works (Django opens a new connection per request). The same for the file store
(the bucket, STORAGE_BACKEND=s3: perfweb.store_errors.StoreUnavailable)."""
from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

from .store_errors import MESSAGE as STORE_MESSAGE, StoreUnavailable

log = logging.getLogger(__name__)

MESSAGE = "The database is unavailable for a moment; nothing was lost. Try again shortly."


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            return self.get_response(request)
        except (OperationalError, InterfaceError, StoreUnavailable) as e:  # outside a view
            return self._unavailable(request, e)

    def process_exception(self, request, exception):
        if isinstance(exception, (OperationalError, InterfaceError, StoreUnavailable)):
            return self._unavailable(request, exception)
        return None

    def _unavailable(self, request, e):
        store = isinstance(e, StoreUnavailable)
        log.warning("%s unavailable: %s", "file store" if store else "database", e)
        message = STORE_MESSAGE if store else MESSAGE
        if request.path.startswith("/api/") or request.path.startswith("/debuginfod/") or \
                request.headers.get("Accept", "").startswith("application/json"):
            response = JsonResponse({"detail": message}, status=503)
        else:
            response = HttpResponse(
                "<!doctype html><title>perfweb: unavailable</title><h1>Unavailable</h1>"
                f"<p>{message}</p>", status=503, content_type="text/html; charset=utf-8")
        response["Retry-After"] = "10"
        return response
