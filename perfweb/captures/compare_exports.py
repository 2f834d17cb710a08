"""Downloads of a comparison, for the team, its share links and the API: the comparison
as JSON (what the compare page shows), its movers as CSV, a Markdown summary for a
ticket or a pull request, and the differential folded stacks that FlameGraph's
flamegraph.pl draws (analysis/export/comparison.py makes them)."""
from __future__ import annotations

from django.http import Http404, HttpResponse

from .models import Capture
from .services.history import comparison_file

COMPARE_EXPORTS = {"json": ("application/json", "json"),
                   "csv": ("text/csv; charset=utf-8", "movers.csv"),
                   "markdown": ("text/markdown; charset=utf-8", "md"),
                   "diff-folded": ("text/plain; charset=utf-8", "diff-folded.txt")}


def compare_export_response(before: Capture, after: Capture, fmt: str) -> HttpResponse:
    """The file as an attachment; 404 for an unknown format or a side not analyzed."""
    if fmt not in COMPARE_EXPORTS:
        raise Http404("unknown export format")
    content_type, suffix = COMPARE_EXPORTS[fmt]
    body = comparison_file(before, after, fmt)
    if body is None:
        raise Http404("no result yet")
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = \
        f'attachment; filename="compare-{before.pk}-{after.pk}.{suffix}"'
    return response
