"""A stored profile written in other tools' formats (speedscope JSON, `perf script` text)."""
from __future__ import annotations

import io

from analysis.export import perf_script_text, speedscope

FORMATS = ("speedscope", "perf-script")


def export_text(profile, fmt: str, name: str) -> str:
    buf = io.StringIO()
    if fmt == "speedscope":
        speedscope.write_speedscope(profile, buf, name=name)
    elif fmt == "perf-script":
        perf_script_text.write_perf_script(profile, buf)
    else:
        raise KeyError(fmt)
    return buf.getvalue()
