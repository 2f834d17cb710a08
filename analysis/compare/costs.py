"""Costs that appeared or went away: the diagnosis's own findings of each capture, set
side by side. Without the throughput, what the captures show must decide, and a cost
that is waste by nature (memory management, exceptions, compiling at run time, waiting,
spinning, copying, system-call overhead, page faults, commits...: what the findings
name) growing from nothing by many points is a regression whatever else moved, named
as the diagnosis names it. Issue 38 measured the need: of 90 real pairs (a known-bad
configuration and its fix), without rates 13 were judged regressions the right way;
the rest read "the captures did different work" while a runtime's exception machinery
went from 0% to 26%.

A finding is the same in both captures when its rule and its title, numbers aside,
are: "The JVM (HotSpot) spends #% on garbage collection". What is not waste by nature
is left out: the hottest function or library is where the work is (hot-spot,
hot-code), and how a capture was recorded is no change of the program."""
from __future__ import annotations

import re

from ..diagnosis.knowledge import is_system_dso
from ..diagnosis.stack_rules import RECORDING_RULES
from . import noise

#: rules that name where the work is (the hottest code, an interpreter's loop), how the
#: capture was recorded (symbols), or the machine's load (runnable threads waiting for a
#: CPU): none is a waste the program's change made
NOT_WASTE = frozenset({"cpu-use", "hot-spot", "hot-code", "interpreter-bound",
                       "missing-symbols", "scheduling-pressure", "waiting-for-cpu",
                       "regression"}) | RECORDING_RULES
#: a cost must move by this many points of the capture (and beyond its noise) to decide
COST_PP = 10.0

_NUMBER = re.compile(r"\d[\d,.]*")


def key_of(finding: dict) -> tuple[str, str]:
    return finding["rule"], _NUMBER.sub("#", finding["title"])


def _by_key(report: dict) -> dict:
    out: dict = {}
    for f in report["findings"]:
        if f["rule"] in NOT_WASTE or f.get("share") is None:
            continue
        k = key_of(f)
        if k not in out or f["share"] > out[k]["share"]:
            out[k] = f
    return out


def cost_changes(ra: dict, rb: dict) -> list[dict]:
    """A row per waste finding that is a problem (medium or high) in either capture:
    its share before and after in points, the change and its noise, largest first."""
    fa, fb = _by_key(ra), _by_key(rb)
    na, nb = ra["samples"] or 1, rb["samples"] or 1
    dsos = {id(ra): _dso_of(ra), id(rb): _dso_of(rb)}
    rows = []
    for k in set(fa) | set(fb):
        a, b = fa.get(k), fb.get(k)
        if not any(f is not None and _problem(f) for f in (a, b)):
            continue
        sa = a["share"] if a else 0.0
        sb = b["share"] if b else 0.0
        change, half = noise.share_change(sa * na, na, sb * nb, nb)
        shown = a if a is not None and _problem(a) and not (b is not None and _problem(b)) \
            else (b or a)  # (the side where it is a problem)
        rows.append({"rule": k[0], "title": shown["title"],
                     "before": round(100 * sa, 1), "after": round(100 * sb, 1),
                     "change": round(change, 1), "noise": round(half, 1),
                     "problem_before": a is not None and _problem(a),
                     "problem_after": b is not None and _problem(b),
                     "functions": _callers(shown, dsos[id(rb if shown is b else ra)])})
    rows.sort(key=lambda r: (-abs(r["change"]), r["title"]))
    return rows


def _dso_of(report: dict) -> dict[str, str]:
    return {f["name"]: f["dso"] for f in report["functions"]}


def _callers(finding: dict, dso: dict[str, str]) -> list[str]:
    """The finding's focus functions outside the system's libraries and the kernel
    (where a spin or a fault lands is the C library's lock or the kernel's entry; what
    the program did is above it): the "under" of the text. `dso`: name -> DSO."""
    return [x["name"] for x in (finding.get("focus") or {}).get("functions", [])
            if not is_system_dso(dso.get(x["name"], "["))][:2]


def _problem(finding: dict) -> bool:
    return finding["severity"] in ("medium", "high")


def grew(rows: list[dict]) -> list[dict]:
    """The costs that are a problem in the new capture and grew beyond noise, what
    names a cause before what is its symptom."""
    return _cause_first([r for r in rows if r["problem_after"] and r["change"] >= COST_PP
                         and noise.beyond(r["change"], r["noise"])])


def fell(rows: list[dict]) -> list[dict]:
    return _cause_first([r for r in rows if r["problem_before"] and r["change"] <= -COST_PP
                         and noise.beyond(r["change"], r["noise"])])


#: findings that say where the time goes (off the CPU, into the kernel) while another
#: finding of the same capture usually says why: named after it
SYMPTOMS = frozenset({"off-cpu", "kernel-heavy"})


def _cause_first(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["rule"] in SYMPTOMS)  # (stable: by change within)


def describe(rows: list[dict], grown: bool = True) -> str:
    """"PCRE2 spends 67.9% on matching with PCRE2's interpreter (pcre2_match, no JIT
    code) (under pcre2_match_8), 0.0% before" for the first three: the title's figures
    are the capture it is a problem in, the other side's share follows."""
    return "; ".join(f"{_title(r)}, {r['before' if grown else 'after']:.1f}% "
                     f"{'before' if grown else 'now'}" for r in rows[:3])


def _title(r: dict) -> str:
    under = f" (under {r['functions'][0]})" if r["functions"] else ""
    return f"{r['title']}{under}"
