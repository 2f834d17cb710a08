"""Downloads of an analyzed capture in other tools' formats: folded stacks (FlameGraph,
inferno, speedscope), speedscope JSON, and `perf script` text (Firefox Profiler)."""
from __future__ import annotations

import io

from django.http import Http404, HttpResponse

from analysis.export import perf_script_text, speedscope
from analysis.export.folded import FoldOptions, fold, folded_lines

from .explore_views import load_profile
from .models import Capture

EXPORTS = {"folded": ("text/plain; charset=utf-8", "folded.txt"),
           "speedscope": ("application/json", "speedscope.json"),
           "perf-script": ("text/plain; charset=utf-8", "perf-script.txt")}


def export_response(capture: Capture, fmt: str) -> HttpResponse:
    if fmt not in EXPORTS:
        raise Http404("unknown export format")
    p = load_profile(capture)
    buf = io.StringIO()
    if fmt == "folded":
        buf.writelines(line + "\n" for line in folded_lines(fold(p, FoldOptions(
            weight="samples"))))
    elif fmt == "speedscope":
        speedscope.write_speedscope(p, buf, name=str(capture))
    else:
        perf_script_text.write_perf_script(p, buf)
    content_type, suffix = EXPORTS[fmt]
    response = HttpResponse(buf.getvalue(), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="capture-{capture.pk}.{suffix}"'
    return response
