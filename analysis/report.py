"""The JSON result contract that the web app and external tools rely on.

Keys only get added, never renamed or removed; `version` changes when their meaning does.
Counts are in samples (rows imported from perf report text stand for several).
"""
from __future__ import annotations

from dataclasses import asdict

from . import cpu
from .aggregate.functions import top_dsos, top_functions
from .aggregate.selection import Selection, stack_weights
from .aggregate.threads import by_thread
from .diagnosis import Context, findings_of
from .diagnosis.finding import with_work_rate
from .diagnosis.rules import damaged_capture
from .diagnosis.time_in import time_in
from .errors import AnalysisError
from .profile import Profile

CONTRACT_VERSION = 1


def build_report(profile: Profile, event: str | None = None, top: int | None = None,
                 label: str = "", rate=None) -> dict:
    """The contract. `label` is what the user called the capture ("idle", "load test"):
    the CPU headline treats a busy "idle" capture as a finding. `rate` (compare.Rate) is
    the throughput measured while it was taken: the report gives CPU per unit of work."""
    event_id = _event_id(profile, event)
    sel = Selection(event_id=event_id)
    weights = stack_weights(profile, sel)
    funcs = top_functions(profile, weights)
    if top is not None:
        funcs = funcs[:top]
    samples = profile.sample_count(event_id) if event_id is not None else 0
    busy = cpu.cpus_busy(profile, event_id)
    secs = cpu.cpu_seconds(profile, event_id)
    meta = asdict(profile.meta)
    meta.pop("format")
    ctx = Context.build(profile, event_id, label)
    # a capture read in part says so and nothing else (see damaged_capture)
    findings = [damaged_capture(profile)] if profile.meta.damaged else \
        with_work_rate(findings_of(ctx), rate)
    return {
        "version": CONTRACT_VERSION,
        "format": profile.meta.format,
        "label": label,
        "event": profile.events[event_id].name if event_id is not None else None,
        "events": [{"name": e.name, "samples": profile.sample_count(i),
                    "frequency": e.frequency, "period": e.period}
                   for i, e in enumerate(profile.events)],
        "samples": samples,
        "duration_s": _round(cpu.duration_s(profile, event_id)),
        "time_range": _list(cpu.time_range(profile, event_id)),
        "cpus_busy": _round(busy),
        "cpu_seconds": _round(secs),
        "approximate": profile.approximate,
        "notes": list(profile.notes),
        "metadata": meta,
        "functions": [{"name": f.name, "dso": f.dso, "kind": f.kind,
                       "self": f.self, "total": f.total} for f in funcs],
        "dsos": top_dsos(profile, weights),
        "threads": by_thread(profile, sel),
        "coverage": profile.coverage,
        "findings": [f.to_dict() for f in findings],
        "time_in": time_in(ctx),
        "rate": None if rate is None else rate.to_dict(),
        "cpu_per_unit": None if rate is None or busy is None else {
            "unit": rate.per, "cpu_seconds": busy / rate.value},
    }


def _event_id(profile: Profile, event: str | None) -> int | None:
    if event is None:
        return profile.default_event()
    for i, e in enumerate(profile.events):
        if e.name == event:
            return i
    names = ", ".join(repr(e.name) for e in profile.events) or "none"
    raise AnalysisError(f"no event {event!r} in this capture (it has: {names})")


def _list(span: tuple[float, float] | None) -> list[float] | None:
    return None if span is None else [span[0], span[1]]


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)
