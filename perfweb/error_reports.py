"""Django's error reports (the e-mails AdminEmailHandler sends, the DEBUG 500 page)
without tokens.

A report shows the request's path and URL, its headers (META), the local variables of
every frame (the debuginfod view's `key` is the token) and the exception's text. The
reporter filter can cleanse only some of these (the templates read `request.path_info`
from the request itself), so the report is scrubbed whole, as text and as HTML, where it
is made; the filter also scrubs the META it hands out, for anything else that asks it."""
from __future__ import annotations

from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

from .token_scrub import scrub


class TokenScrubbingReporterFilter(SafeExceptionReporterFilter):
    """Django's cleansing (settings and headers named like secrets, such as
    Authorization), then tokens scrubbed from every remaining value: PATH_INFO,
    REQUEST_URI, RAW_URI, QUERY_STRING, Referer."""

    def get_safe_request_meta(self, request):
        return {k: scrub(v) if isinstance(v, str) else v
                for k, v in super().get_safe_request_meta(request).items()}


class TokenScrubbingExceptionReporter(ExceptionReporter):
    def get_traceback_html(self):
        return scrub(str(super().get_traceback_html()))

    def get_traceback_text(self):
        return scrub(str(super().get_traceback_text()))
