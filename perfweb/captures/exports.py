"""Downloads of an analyzed capture in other tools' formats: folded stacks (FlameGraph,
inferno, speedscope), speedscope JSON, and `perf script` text (Firefox Profiler)."""
from __future__ import annotations

from django.http import FileResponse, Http404, HttpResponse

from .explore_views import load_profile
from .models import Capture
from .services.exports import export_text

EXPORTS = {"folded": ("text/plain; charset=utf-8", "folded.txt"),
           "speedscope": ("application/json", "speedscope.json"),
           "perf-script": ("text/plain; charset=utf-8", "perf-script.txt")}


def export_response(capture: Capture, fmt: str) -> HttpResponse:
    if fmt not in EXPORTS:
        raise Http404("unknown export format")
    content_type, suffix = EXPORTS[fmt]
    filename = f"capture-{capture.pk}.{suffix}"
    if fmt == "folded":  # the worker stored them (sample counts, flamegraph.pl spelling)
        result = capture.latest_result()
        if result is None:
            raise Http404("no result yet")
        return FileResponse(result.folded.open("rb"), as_attachment=True, filename=filename,
                            content_type=content_type)
    text = export_text(load_profile(capture), fmt, name=str(capture))
    response = HttpResponse(text, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
