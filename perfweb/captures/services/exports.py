"""A stored profile written in other tools' formats: speedscope JSON and `perf script`
text (the whole capture), pprof's profile.proto and Firefox Profiler's Gecko format (the
whole capture or the explorer's selection: threads, time range, event, view, transforms)."""
from __future__ import annotations

import io

from analysis.errors import AnalysisError
from analysis.export import firefox, perf_script_text, pprof, speedscope

FORMATS = ("speedscope", "perf-script")
#: gzipped files of a selection (the explorer's query)
BINARY_FORMATS = ("pprof", "firefox")

__all__ = ["AnalysisError", "BINARY_FORMATS", "FORMATS", "export_binary", "export_text"]


def export_text(profile, fmt: str, name: str) -> str:
    buf = io.StringIO()
    if fmt == "speedscope":
        speedscope.write_speedscope(profile, buf, name=name)
    elif fmt == "perf-script":
        perf_script_text.write_perf_script(profile, buf)
    else:
        raise KeyError(fmt)
    return buf.getvalue()


def export_binary(profile, fmt: str, query, name: str, started_ns: int | None) -> bytes:
    """The gzipped pprof or Firefox Profiler file of `query` (an explore.Query);
    AnalysisError for a query the explorer refuses or a capture the format cannot hold.
    `started_ns`: the capture's time in ns since the epoch (perf.data has no wall-clock
    time of its samples: the upload's)."""
    if fmt == "pprof":
        return pprof.pprof_bytes(profile, query, time_nanos=started_ns, comment=name)
    if fmt == "firefox":
        return firefox.firefox_bytes(profile, query, name=name,
                                     start_ms=None if started_ns is None else started_ns / 1e6)
    raise KeyError(fmt)
