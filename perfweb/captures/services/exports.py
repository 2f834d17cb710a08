"""A stored profile written in other tools' formats: speedscope JSON and `perf script`
text (the whole capture), pprof's profile.proto and Firefox Profiler's Gecko format (the
whole capture or the explorer's selection: threads, time range, event, view, transforms),
each written to a file (export_cache keeps it), never held whole as one string: the
`perf script` text of a 158,000-sample capture is 121 MB."""
from __future__ import annotations

import io
from typing import BinaryIO

from analysis.errors import AnalysisError
from analysis.explore import event_of, viewed
from analysis.export import firefox, perf_script_text, pprof, speedscope
from analysis.export.folded import SAMPLES, FoldOptions, write_folded
from analysis.offcpu.views import ON_CPU
from analysis.transforms import normalized, unparse

FORMATS = ("speedscope", "perf-script", "folded")
#: gzipped files of a selection (the explorer's query)
BINARY_FORMATS = ("pprof", "firefox")

__all__ = ["AnalysisError", "BINARY_FORMATS", "FORMATS", "export_key", "write_export"]


def write_export(out: BinaryIO, profile, fmt: str, query, name: str,
                 started_ns: int | None) -> None:
    """The export into `out`; for pprof and Firefox of `query` (an explore.Query),
    AnalysisError for a query the explorer refuses or a capture the format cannot hold.
    `started_ns`: the capture's time in ns since the epoch (perf.data has no wall-clock
    time of its samples: the upload's)."""
    if fmt == "pprof":
        out.write(pprof.pprof_bytes(profile, query, time_nanos=started_ns, comment=name))
    elif fmt == "firefox":
        out.write(firefox.firefox_bytes(
            profile, query, name=name,
            start_ms=None if started_ns is None else started_ns / 1e6))
    elif fmt in FORMATS:
        text = io.TextIOWrapper(out, encoding="utf-8", newline="")
        try:
            if fmt == "speedscope":
                shown, event_id = _shown(profile, query)
                speedscope.write_speedscope(shown, text, name=name, event_id=event_id)
            elif fmt == "folded":
                shown, event_id = _shown(profile, query)
                write_folded(shown, text, FoldOptions(
                    weight=SAMPLES, event=shown.events[event_id].name
                    if event_id is not None else None, names_as_shown=True))
            else:
                perf_script_text.write_perf_script(profile, text)
            text.flush()
        finally:
            text.detach()  # (`out` is the caller's to close)
    else:
        raise KeyError(fmt)


def _shown(profile, query) -> tuple:
    """(the profile of the query's view, the event the page shows of it): the query's
    event on the on-CPU view, else the view's one event; without a query the page's
    first view (on-CPU, the default event)."""
    if query is None:
        return profile, profile.default_event()
    shown = viewed(profile, query)
    return shown, shown.default_event() if query.view != ON_CPU else \
        event_of(profile, query)


def export_key(fmt: str, query, name: str) -> str:
    """What tells one export of a profile from another (export_cache's key): the
    format, the capture's name written in it, and what a selection reads of the query
    (its transforms normalized, as the explorer keeps them)."""
    if query is None:
        return f"{fmt}|{name}"
    tids = sorted(query.tids) if query.tids is not None else None
    return (f"{fmt}|{name}|tids={tids}|start={query.start!r}|end={query.end!r}|"
            f"event={query.event}|view={query.view}|tf={unparse(normalized(query.transforms))}")
