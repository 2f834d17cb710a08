"""The JSON result contract that the web app and external tools rely on.

Keys only get added, never renamed or removed; `version` changes when their meaning does.
Counts are in samples (rows imported from perf report text stand for several).
"""
from __future__ import annotations

from dataclasses import asdict

from . import cpu
from .aggregate.functions import notable_functions as notable_costs
from .aggregate.functions import inline_views, top_dsos, top_functions
from .aggregate.selection import Selection, stack_weights
from .aggregate.threads import by_thread
from .diagnosis import Context, findings_of
from .diagnosis.finding import with_work_rate
from .diagnosis.blocked_rules import blocked_summary
from .diagnosis.rules import damaged_capture
from .diagnosis.time_in import time_in
from .offcpu.summary import off_cpu_block, thread_times
from .offcpu.views import ON_CPU, view
from .errors import AnalysisError
from .profile import Profile

CONTRACT_VERSION = 3  # 2: `functions` lists the notable ones, `functions_rest` the rest
#                      3: `threads` lists the busiest, `threads_rest` the rest

#: the report lists every function on at least this share of the samples' stacks (and
#: always the first FUNCTIONS_MIN by self): a diverse capture has 65,000 functions, 6 MB
#: of JSON stored with every result, nearly all on a handful of stacks. The whole table
#: stays in the saved profile (the explorer's and the API's functions pages). Movers need
#: 1 percentage point (compare.movers.MOVER_MIN_PP): what is left out moves by less.
FUNCTIONS_MIN_SHARE = 0.0005
FUNCTIONS_MIN = 200

#: the report lists this many threads with samples, and as many of the threads only the
#: context switches saw (those off the CPU longest): a system-wide capture of a busy host
#: has thousands of threads, 90 KB of JSON with every result. All of them stay in the
#: saved profile (the explorer's threads list).
THREADS_MAX = 100


def build_report(profile: Profile, event: str | None = None, top: int | None = None,
                 label: str = "", rate=None, view_name: str = ON_CPU) -> dict:
    """The contract. `label` is what the user called the capture ("idle", "load test"):
    the CPU headline treats a busy "idle" capture as a finding. `rate` (compare.Rate) is
    the throughput measured while it was taken: the report gives CPU per unit of work.
    `view_name` off-cpu or wall: the functions and DSOs are weighted by microseconds of
    that view (analysis.offcpu.views); the rest is the capture's."""
    report = _report(profile, event, top, label, rate)
    if view_name != ON_CPU:
        v = view(profile, view_name, _event_id(profile, event))
        w = stack_weights(v, Selection(event_id=0))
        funcs, rest = top_functions(v, w), None
        if top is None:
            funcs, rest = notable_functions(funcs, sum(w.values()))
        report.update(view=view_name, view_unit="µs", view_total=sum(w.values()),
                      functions=function_rows(funcs if top is None else funcs[:top],
                                              inline_views(v, w)),
                      functions_rest=rest, dsos=top_dsos(v, w))
    return report


#: holders listed per inlined function (the rest stay in their holders when compared)
HOLDERS_LISTED = 8


def function_rows(funcs: list, views) -> list[dict]:
    """The report's function table. Where the capture has inline frames
    (aggregate.functions.inline_views), each row also has `inline_self` and
    `physical_total`, and a function inlined somewhere `inlined_in`: [holder name,
    samples] of the holders of its inline self, largest first; comparisons read them."""
    rows = [{"name": f.name, "dso": f.dso, "kind": f.kind, "self": f.self,
             "total": f.total} for f in funcs]
    if views is not None:
        for row, f in zip(rows, funcs):
            fid = f.function_id
            row["inline_self"] = views.inline_self.get(fid, 0)
            row["physical_total"] = views.physical_total.get(fid, 0)
            held = sorted(views.holders.get(fid, {}).items(), key=lambda kv: -kv[1])
            if held:
                row["inlined_in"] = [[h, w] for h, w in held[:HOLDERS_LISTED]]
    return rows


def notable_functions(funcs: list, total: int) -> tuple[list, dict | None]:
    """(the functions the report lists, what the rest add up to or None): those on at
    least FUNCTIONS_MIN_SHARE of the stacks, and the first FUNCTIONS_MIN by self."""
    floor = FUNCTIONS_MIN_SHARE * total
    kept, left = [], []
    for i, f in enumerate(funcs):
        (kept if i < FUNCTIONS_MIN or f.total >= floor else left).append(f)
    if not left:
        return funcs, None
    return kept, {"functions": len(left), "self": sum(f.self for f in left),
                  "max_total": max(f.total for f in left)}


def notable_threads(rows: list[dict]) -> tuple[list[dict], dict | None]:
    """(the threads the report lists, what the rest add up to or None): the first
    THREADS_MAX rows with samples (heaviest first), then, of those with none, the
    THREADS_MAX off the CPU longest, in the order they came."""
    sampled = [r for r in rows if r["samples"]]
    idle = [r for r in rows if not r["samples"]]
    longest = sorted(range(len(idle)), key=lambda i: -idle[i].get("off_cpu_s", 0))
    kept_idle = [idle[i] for i in sorted(longest[:THREADS_MAX])]
    kept = sampled[:THREADS_MAX] + kept_idle
    if len(kept) == len(rows):
        return rows, None
    left = sampled[THREADS_MAX:] + [idle[i] for i in sorted(longest[THREADS_MAX:])]
    rest = {"threads": len(left), "samples": sum(r["samples"] for r in left)}
    if any("off_cpu_s" in r for r in left):
        for k in ("on_cpu_s", "off_cpu_s"):
            rest[k] = round(sum(r.get(k, 0) for r in left), 6)
    return kept, rest


def _report(profile: Profile, event: str | None, top: int | None, label: str,
            rate) -> dict:
    event_id = _event_id(profile, event)
    sel = Selection(event_id=event_id)
    weights = stack_weights(profile, sel)
    ctx = Context.build(profile, event_id, label)
    rest = None
    if top is not None:
        funcs = top_functions(profile, weights, ctx.stack_funcs)[:top]
    else:  # notable_functions(top_functions(...)), without a row per function
        funcs, rest = notable_costs(profile, weights, FUNCTIONS_MIN,
                                    FUNCTIONS_MIN_SHARE * ctx.samples(weights),
                                    ctx.stack_funcs, ctx.ranked_arrays()
                                    if weights is ctx.weights else None)
    samples = profile.sample_count(event_id) if event_id is not None else 0
    busy = cpu.cpus_busy(profile, event_id)
    secs = cpu.cpu_seconds(profile, event_id)
    threads, threads_rest = notable_threads(
        _with_times(by_thread(profile, sel), thread_times(profile)))
    meta = asdict(profile.meta)
    meta.pop("format")
    # a capture read in part says so and nothing else (see damaged_capture)
    findings = [damaged_capture(profile)] if profile.meta.damaged else \
        with_work_rate(findings_of(ctx), rate)
    return {
        "version": CONTRACT_VERSION,
        "view": ON_CPU,
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
        "functions": function_rows(funcs, inline_views(profile, weights)),
        "functions_rest": rest,
        "dsos": top_dsos(profile, weights, ctx.stack_funcs),
        "threads": threads,
        "threads_rest": threads_rest,
        "coverage": profile.coverage,
        "findings": [f.to_dict() for f in findings],
        "time_in": time_in(ctx),
        "rate": None if rate is None else rate.to_dict(),
        "cpu_per_unit": None if rate is None or busy is None else {
            "unit": rate.per, "cpu_seconds": busy / rate.value},
        "off_cpu": _off_cpu(profile, ctx),
    }


def _off_cpu(profile: Profile, ctx: Context) -> dict | None:
    block = off_cpu_block(profile)
    if block is not None:
        block["by_kind"] = blocked_summary(ctx)
    return block


def _with_times(rows: list[dict], times: dict[int, dict]) -> list[dict]:
    """threads[] with their on/off-CPU seconds, and the threads only switches saw."""
    if not times:
        return rows
    seen = set()
    for r in rows:
        if r["tid"] in times:
            r.update(times[r["tid"]])
            seen.add(r["tid"])
    for tid, t in sorted(times.items()):
        if tid not in seen:
            rows.append({"pid": None, "tid": tid, "comm": "", "samples": 0, **t})
    return rows


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
