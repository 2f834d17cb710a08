"""Whether two captures can be compared at all, checked before any verdict: the same
kind of event (shares of cycles and of page faults are different quantities), the same
kind of work (an idle capture against one under load), enough samples to see a change,
and the same program (two services' profiles differ in everything). What differs is
said; a difference that makes the verdict meaningless refuses it, one that only limits
it (another sampling frequency, another CPU-time event) is said beside it."""
from __future__ import annotations

import re

from ..diagnosis.knowledge import is_system_dso
from .movers import library_self

#: events that all measure CPU time: shares of them compare (perf's own default is
#: cycles where there is a PMU, cpu-clock where there is none, as in VMs)
CPU_TIME = frozenset({"cpu-clock", "task-clock", "cycles", "cpu-cycles", "ref-cycles"})
#: a capture under load with fewer samples than this shows no change but the largest
MIN_SAMPLES = 50
#: a library is a capture's program when it holds this share of the samples' self time
PROGRAM_SHARE = 0.05


def base_event(name: str) -> str:
    """"cpu-clock:pppH", "cpu-clock/freq=499/", "cpu/cycles/u" -> their event; a
    tracepoint ("sched:sched_switch") stays whole."""
    name = (name or "").strip()
    if "/" in name:  # pmu/event/modifiers, or event/terms/
        head, _, rest = name.partition("/")
        inner = rest.split("/")[0]
        name = head if not inner or "=" in inner else inner
    m = re.match(r"^(.*?):([ukhpPHGISDWe]+)$", name)  # event:modifiers
    return m.group(1) if m else name


def _frequency(report: dict) -> float | None:
    for e in report.get("events") or []:
        if e.get("name") == report.get("event"):
            return e.get("frequency")
    return None


def is_idle(report: dict) -> bool:
    """Labelled idle by the user: a capture of no work."""
    return "idle" in (report.get("label") or "").lower()


def _programs(report: dict) -> set[str]:
    total = report.get("view_total") or report["samples"] or 1
    own = library_self(report, keep=lambda path: not is_system_dso(path))
    return {lib for lib, w in own.items() if w / total >= PROGRAM_SHARE}


def differences(ra: dict, rb: dict) -> list[dict]:
    """[{"what", "before", "after", "refuses"}]: what differs between the captures."""
    out = []
    ea, eb = base_event(ra.get("event")), base_event(rb.get("event"))
    if ea and eb and ea != eb:  # (a capture with no sample names no event)
        out.append({"what": "event", "before": ra.get("event"), "after": rb.get("event"),
                    "refuses": not (ea in CPU_TIME and eb in CPU_TIME)})
    fa, fb = _frequency(ra), _frequency(rb)
    if fa and fb and fa != fb:
        out.append({"what": "sampling frequency", "before": f"{fa:g} Hz",
                    "after": f"{fb:g} Hz", "refuses": False})
    if is_idle(ra) != is_idle(rb):
        out.append({"what": "label", "before": ra.get("label") or "(none)",
                    "after": rb.get("label") or "(none)", "refuses": True})
    few = [(side, r["samples"]) for side, r in (("before", ra), ("after", rb))
           if not is_idle(r) and r["samples"] < MIN_SAMPLES]
    if few:
        out.append({"what": "samples", "before": ra["samples"], "after": rb["samples"],
                    "refuses": True})
    pa, pb = _programs(ra), _programs(rb)
    if pa and pb and not pa & pb:
        out.append({"what": "program", "before": ", ".join(sorted(pa)),
                    "after": ", ".join(sorted(pb)), "refuses": True})
    return out


_WHY = {
    "event": "they count different events, whose shares are different quantities",
    "sampling frequency": "they were sampled at different rates (shares and CPUs busy "
                          "do not depend on it, sample counts do)",
    "label": "one is labelled idle and the other not: they did different work",
    "samples": f"under {MIN_SAMPLES} samples show no change but the largest",
    "program": "their own code is in different programs",
}


def describe(diffs: list[dict]) -> str:
    """What differs, each with why it matters: "the event differs (cpu-clock ->
    page-faults): they count different events, ..." """
    return "; ".join(f"{_HEAD.get(d['what'], 'the ' + d['what'] + ' differs')} "
                     f"({d['before']} -> {d['after']}): {_WHY[d['what']]}" for d in diffs)


_HEAD = {"samples": "too few samples"}
