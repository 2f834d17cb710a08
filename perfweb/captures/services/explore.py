"""The capture page's explorer views, computed by the engine over a stored profile."""
from __future__ import annotations

from analysis import explore, jsonio, transforms
from analysis.errors import AnalysisError

Query = explore.Query
to_json = jsonio.dumps  # the explorer's answers, encoded as the engine's JSON is

KINDS = ("flame", "functions", "threads", "timeline", "states", "lines", "stacks")
VIEWS = explore.VIEWS
SORTS = explore.SORTS  # the functions table's orders
parse_transforms = transforms.parse  # the `tf` parameter; AnalysisError when malformed

__all__ = ["AnalysisError", "KINDS", "Query", "SORTS", "VIEWS", "explorer_data",
           "functions_page", "parse_transforms", "to_json"]


def explorer_data(profile, kind: str, q: Query, dso: str | None = None) -> dict:
    """One view; AnalysisError for a request the profile cannot answer (a focus it does
    not have, a search that cannot run), which the page says in a sentence."""
    if kind == "flame":
        return explore.flame(profile, q)
    if kind == "functions":
        return explore.functions(profile, q, dso=dso)
    if kind == "threads":
        return explore.threads(profile, q)
    if kind == "timeline":
        return explore.timeline(profile, event=q.event)
    if kind == "states":
        return explore.thread_states(profile)
    if kind == "stacks":  # the stack chart, at the resolution `px` the page asks
        return explore.stacks(profile, q)
    if kind == "lines":  # the hot lines of the function `focus` names
        if q.focus is None:
            raise AnalysisError("Choose a function (focus=ID) to see its lines.")
        return explore.lines(profile, q, q.focus)
    raise KeyError(kind)


#: rows one page of the API's functions table holds at most
FUNCTIONS_PAGE_MAX = 1000


def functions_page(profile, offset: int, limit: int, dso: str | None = None) -> dict:
    """The whole top-functions table of a capture, a page at a time (the report lists
    only the notable ones)."""
    return explore.functions(profile, Query(), dso=dso, offset=max(0, offset),
                             limit=max(1, min(limit, FUNCTIONS_PAGE_MAX)))
