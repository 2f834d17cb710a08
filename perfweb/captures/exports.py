"""Downloads of an analyzed capture in other tools' formats: folded stacks (FlameGraph,
inferno, speedscope), speedscope JSON, `perf script` text, pprof's profile.proto
(`go tool pprof`, Pyroscope, Parca) and Firefox Profiler's Gecko format. The last two are
of the whole capture or of the explorer's selection: the same query parameters as its data
endpoints (tids, start, end, event, view, tf), so the file holds the samples the page
shows."""
from __future__ import annotations

from django.http import FileResponse, Http404, HttpResponse, JsonResponse

from .explore_views import BadQuery, query_of
from .models import Capture
from .services import export_cache
from .services.explore import Query
from .services.exports import AnalysisError, export_key, write_export
from .services.profiles import latest_result, result_profile

EXPORTS = {"folded": ("text/plain; charset=utf-8", "folded.txt"),
           "speedscope": ("application/json", "speedscope.json"),
           "perf-script": ("text/plain; charset=utf-8", "perf-script.txt"),
           "pprof": ("application/gzip", "pb.gz"),
           "firefox": ("application/gzip", "firefox.json.gz")}
#: the formats that export a selection (the explorer's query parameters)
SELECTABLE = ("pprof", "firefox")
#: the formats of one event and view, the page's unless `event` or `view` says
SHOWN = ("folded", "speedscope")
_SELECTION_KEYS = ("tids", "start", "end", "event", "view", "tf")


def export_response(capture: Capture, fmt: str, request=None, api: bool = False
                    ) -> HttpResponse:
    """The file as an attachment, made once per host and streamed (export_cache); for
    pprof and Firefox a query the explorer refuses (or a capture the format cannot hold)
    is a 400 with the sentence, JSON for the API. Folded stacks and speedscope are of
    the event and view the page shows (`event` and `view` as the explorer reads them);
    the folded file the worker stored is not served: results older than the fix held the
    first event of the file, switches where the page showed CPU samples."""
    if fmt not in EXPORTS:
        raise Http404("unknown export format")
    content_type, suffix = EXPORTS[fmt]
    filename = f"capture-{capture.pk}.{suffix}"
    result = latest_result(capture)
    if result is None or not result.profile:
        raise Http404("no result yet")
    name = str(capture)
    started = int(capture.created_at.timestamp() * 1e9) if capture.created_at else None
    try:
        query = None
        if fmt in SELECTABLE and request is not None:
            query = query_of(request)
            if any(request.GET.get(k) for k in _SELECTION_KEYS):
                filename = f"capture-{capture.pk}-selection.{suffix}"
        elif fmt in SHOWN and request is not None:
            picked = query_of(request)  # (of a selection, only what the page shows)
            query = Query(view=picked.view, event=picked.event)
            if any(request.GET.get(k) for k in ("event", "view")):
                filename = f"capture-{capture.pk}-{picked.view}.{suffix}"

        def make(out):
            profile = result_profile(result)
            if profile is None:
                raise Http404("no result yet")
            write_export(out, profile, fmt, query, name=name, started_ns=started)
        made = export_cache.cached(result.profile.name, export_key(fmt, query, name), make)
    except (AnalysisError, BadQuery) as e:
        if api:
            return JsonResponse({"detail": str(e)}, status=400)
        return HttpResponse(str(e), status=400, content_type="text/plain; charset=utf-8")
    return FileResponse(made, as_attachment=True, filename=filename,
                        content_type=content_type)

