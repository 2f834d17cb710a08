"""Downloads of an analyzed capture in other tools' formats: folded stacks (FlameGraph,
inferno, speedscope), speedscope JSON, and `perf script` text (Firefox Profiler)."""
from __future__ import annotations

import io

from django.http import FileResponse, Http404, HttpResponse

from analysis.export import perf_script_text, speedscope

from .explore_views import load_profile
from .models import Capture

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
    p = load_profile(capture)
    buf = io.StringIO()
    if fmt == "speedscope":
        speedscope.write_speedscope(p, buf, name=str(capture))
    else:
        perf_script_text.write_perf_script(p, buf)
    response = HttpResponse(buf.getvalue(), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
