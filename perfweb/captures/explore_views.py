"""JSON for the interactive capture page: flame graph, functions, threads, timeline.

Each request is one aggregation over the stored profile (services/profiles.py caches it), bounded
whatever the request says: the search runs on RE2 within a time budget (analysis.search)
and trees are cut to what a browser shows (analysis.aggregate.tree), so neither a crafted
`?search=` in a share link nor a capture of million-frame stacks holds a worker.
"""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from . import access, rate_limits
from .ids import parse_id
from .services.explore import (KINDS, SORTS, VIEWS, AnalysisError, Query, explorer_data,
                                parse_transforms, to_json)
from .services.profiles import stored_profile
from .services.sources import with_source


def _profile(request, pk: int):
    return load_profile(get_object_or_404(access.captures_of(request.user), pk=pk))


def load_profile(capture):
    """The analyzed profile of a capture the caller may see (checked by the caller)."""
    profile = stored_profile(capture)
    if profile is None:
        raise Http404("no result yet")
    return profile


def _ints(value: str | None) -> tuple[int, ...]:
    """Thread ids (which int() reads, a sign allowed)."""
    if not value:
        return ()
    try:
        return tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise Http404("bad parameter") from None


def _ids(value: str | None) -> tuple[int, ...]:
    """Function and event ids: ASCII digits only (ids.py), else 404 as a bad parameter."""
    if not value:
        return ()
    ids = tuple(parse_id(v.strip()) for v in value.split(",") if v.strip())
    if None in ids:
        raise Http404("bad parameter")
    return ids


def _float(value: str | None) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except ValueError:
        raise Http404("bad parameter") from None


class BadQuery(ValueError):
    """A parameter the page never sends, said in a sentence (400)."""


def _view(value: str | None) -> str:
    """on-cpu (samples, the default), off-cpu or wall (microseconds)."""
    if value in (None, ""):
        return VIEWS[0]
    if value not in VIEWS:
        raise BadQuery(f"Unknown view {value[:40]!r}: choose on-cpu, off-cpu or wall.")
    return value


def _sort(value: str | None) -> str:
    """The functions table's order: self (the default), total, name or dso."""
    if value in (None, ""):
        return SORTS[0]
    if value not in SORTS:
        raise BadQuery(f"Unknown order {value[:40]!r}: choose self, total, name or dso.")
    return value


def query_of(request) -> Query:
    g = request.GET
    tids = _ints(g.get("tids"))
    focus = _ids(g.get("focus"))
    event = _ids(g.get("event"))
    return Query(tids=frozenset(tids) if tids else None, start=_float(g.get("start")),
                 end=_float(g.get("end")), root=_ids(g.get("root")),
                 invert=g.get("invert") in ("1", "true"),
                 focus=focus[0] if focus else None, search=g.get("search", ""),
                 view=_view(g.get("view")), px=_float(g.get("px")),
                 event=event[0] if event else None,
                 transforms=parse_transforms(g.get("tf")), sort=_sort(g.get("sort")))


def _json(data) -> HttpResponse:
    """The explorer's answers are the big ones (a flame graph of 50,000 stacks): encoded
    by orjson, as the engine's JSON is."""
    response = HttpResponse(to_json(data), content_type="application/json")
    response["Cache-Control"] = "private, max-age=60"
    return response


DATA = KINDS


def data_response(request, profile, kind: str, capture=None) -> JsonResponse:
    """One view of the capture page's explorer, for members and share links alike; the
    hot lines come with their source when the capture's build has a source archive."""
    if kind not in KINDS:
        raise Http404("unknown data")
    try:
        data = explorer_data(profile, kind, query_of(request), dso=request.GET.get("dso") or None)
        if kind == "lines" and capture is not None:
            data = with_source(capture, data)
    except (AnalysisError, BadQuery) as e:
        # a focus the profile does not have, a search that cannot run, an unknown view or
        # an off-CPU one of a capture without context switches: said on the page
        return JsonResponse({"error": str(e)}, status=400)
    return _json(data)


@login_required
@require_GET
def data(request, pk: int, kind: str):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    return rate_limits.limited(request, rate_limits.member_scopes(request),
                               lambda: data_response(request, load_profile(capture), kind,
                                                     capture))
