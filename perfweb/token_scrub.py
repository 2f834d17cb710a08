"""API tokens (and share-link secrets) out of every log line and error report.

debuginfod clients can only send their token in the URL (`/debuginfod/<token>/...`), and
every server logs URLs: Django on each 4xx and 5xx ("Not Found: /debuginfod/pw_..."),
gunicorn in its access log and in its "Error handling request" lines, runserver in each
request line. Rather than keep each of them from logging the path, the text they log is
scrubbed on its way out: `ScrubTokens` is a filter on every handler (settings.LOGGING,
perfweb/gunicorn_conf.py, perfweb/celery.py), and error reports are scrubbed whole
(perfweb/error_reports.py).

A token keeps the 8 characters the API tokens page shows of it (`pw_AbCdE`), so an
operator can still tell which token a line is about; the rest (226 of its 256 random
bits) never reaches a log.
"""
from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
#: a personal token (api_tokens.py: "pw_" + urlsafe base64); what this leaves of one
#: (its 8-character prefix) has too few characters to match again
_TOKEN = re.compile(r"pw_[A-Za-z0-9_-]{6,}")
#: the path segment that is a debuginfod token, whatever its form, and the secret of a
#: share link (`/s/<id>.<secret>/`); a redacted one is left as it is
_DEBUGINFOD = re.compile(r"(/debuginfod/)(?!\[redacted\]|pw_[A-Za-z0-9_-]{0,5}\[redacted\])"
                         r"([^/?#\s\"']+)")
_SHARE = re.compile(r"(/s/[0-9]+\.)(?!\[redacted\])([^/?#\s\"']+)")


def _token(match: re.Match) -> str:
    return match.group(0)[:8] + REDACTED


def _segment(match: re.Match) -> str:
    value = match.group(2)
    kept = value[:8] if value.startswith("pw_") else ""
    return match.group(1) + kept + REDACTED


def scrub(text: str) -> str:
    """`text` with every token and share-link secret replaced by REDACTED."""
    if "pw_" not in text and "/debuginfod/" not in text and "/s/" not in text:
        return text  # the common case: one look at the line
    text = _DEBUGINFOD.sub(_segment, text)
    text = _SHARE.sub(_segment, text)
    return _TOKEN.sub(_token, text)


class ScrubTokens(logging.Filter):
    """Scrubs a record's message (formatted with its arguments), its traceback and its
    stack in place, so every handler after this one sees the scrubbed record too."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "tokens_scrubbed", False):
            return True
        record.msg = scrub(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        record.tokens_scrubbed = True
        return True


def scrub_handlers(*loggers: logging.Logger) -> None:
    """Put ScrubTokens on every handler of these loggers (once), for logging set up by
    others (gunicorn, Celery)."""
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, ScrubTokens) for f in handler.filters):
                handler.addFilter(ScrubTokens())
