"""What a share link carries besides its secret: the explorer's view when it was made, so
the person it is sent to sees what the sender saw (zoom, focus, search, threads, time)."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse

#: the explorer's view state (static/js/capture/state.js): the only keys a link keeps
VIEW_KEYS = ("view", "time", "orient", "invert", "root", "focus", "search", "tids",
             "start", "end", "dso", "sort", "tf", "event")
MAX_VIEW = 2000


def view_query(query: str) -> str:
    """A view's query string with only the explorer's keys, each once, re-encoded (the
    values are the page's to check, as for any URL it is opened with)."""
    given = QueryDict(query[1:] if query.startswith("?") else query)
    kept = [(k, given[k]) for k in VIEW_KEYS if given.get(k)]
    out = urlencode(kept)
    return out if len(out) <= MAX_VIEW else ""


def share_url(request, link) -> str:
    """The link in full, with its view."""
    url = request.build_absolute_uri(reverse("shared", args=[link.url_token]))
    return f"{url}?{link.view}" if link.view else url
