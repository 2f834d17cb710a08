"""The verdict of a comparison, and its reason in one sentence with the numbers.

A service that got faster does more work per second and usually uses more CPU doing it,
so CPU use alone never makes a regression. What decides, in order:

1. The work done. When both captures carry the throughput measured while they were
   taken (a rate and its unit), the throughput decides first: up by SIGNIFICANT or more
   is an improvement, down by as much a regression (a load generator driving the
   service as hard as it goes measures what the service can do; a service whose QPS
   fell regressed even if it now burns less CPU). At the same throughput (a fixed
   offered load), CPU-seconds per unit of work decide the same way.
2. No work at all. Two captures labelled idle did no work: every CPU they used is
   waste, so CPU use itself decides.
3. Otherwise, what the captures show: blocked time that grew; a cost the diagnosis
   names as waste that appeared or went away beyond its noise (costs.py); the share of
   busy time in waiting and slow paths (lock waits, spinning, commits to disk,
   scheduling; diagnosis/time_in.py). Grown by WASTE_PP points or more is a regression,
   fallen as much an improvement.
4. Nothing moved beyond sampling noise (noise.py), and CPUs busy within SIGNIFICANT:
   `no significant change`, the largest move and its interval said (and CPUs busy when
   they differ: the load or the machine, or threads that block where on-CPU samples
   cannot see; the rates or a recording of the switches tell which).
5. Else `inconclusive`, asking for the throughput of both captures.
"""
from __future__ import annotations

import math

from ..diagnosis.finding import seconds_text
from ..diagnosis.time_in import WASTE
from ..identity import unnamed
from . import blocked, costs, noise
from .comparable import is_idle
from .movers import UNNAMED, library_self, movers, out_of
from .movers import moved as mover_moved
from .rates import SHARED_NOISE, Rate, throughput_change

REGRESSION, IMPROVEMENT = "regression", "improvement"
NO_CHANGE, INCONCLUSIVE = "no significant change", "inconclusive"

#: CPU per unit of work moving by this much is a change: sampling at 99-499 Hz for a few
#: seconds counts busy time within a few percent, and load varies by as much again
SIGNIFICANT = 0.10
#: idle captures: CPUs busy moving by this much (and by SIGNIFICANT of the larger)
IDLE_MIN_CPUS = 0.05
#: points of busy time in waiting and slow paths that make a change ...
WASTE_PP = 5.0
#: ... unless a library's share moved by this many times as much: then the captures did
#: different work (one compressed everything, the other serves files) and the waiting
#: that grew may be only what is left
DIFFERENT_WORK = 3.0

#: kinds of busy time that grow with the work done (a switch per request served)
GROWS_WITH_WORK = frozenset({"scheduler"})

_CLASS_NAMES = {"lock_wait": "lock waits", "lock": "locking", "spin": "spinning",
                "commit_io": "commits to disk", "writes": "file writes",
                "scheduler": "scheduling",
                "allocator": "allocation", "copy": "copying", "interpreter": "interpreting"}


def slow_paths(ra: dict, rb: dict) -> list[dict]:
    """Each class of time_in whose share moved, by points of busy time, largest first,
    with the application frames it ran under in the new capture."""
    ca = (ra.get("time_in") or {}).get("classes", {})
    cb = (rb.get("time_in") or {}).get("classes", {})
    out = []
    for cls in set(ca) | set(cb):
        a = ca.get(cls, {}).get("share", 0.0)
        b = cb.get(cls, {}).get("share", 0.0)
        under = (cb.get(cls) or ca.get(cls) or {}).get("under", [])
        out.append({"class": cls, "name": _CLASS_NAMES.get(cls, cls), "waste": cls in WASTE,
                    "before": round(100 * a, 2), "after": round(100 * b, 2),
                    "change": round(100 * (b - a), 2),
                    "under": [u["name"] for u in under]})
    out.sort(key=lambda r: (-abs(r["change"]), r["class"]))
    return out


def decide(ra: dict, rb: dict, rate_before: Rate | None = None,
           rate_after: Rate | None = None, moved: dict | None = None) -> dict:
    """{"verdict", "reason", "cpu_per_unit", "slow_paths"} for reports `ra` -> `rb`.
    `moved`: their movers (movers.py), when the caller has them already."""
    paths = slow_paths(ra, rb)
    per_unit = _per_unit(ra, rb, rate_before, rate_after)
    waits = blocked.blocked_movers(ra, rb, rate_before, rate_after)
    cost_rows = costs.cost_changes(ra, rb)
    # None, or the reason of `no significant change`: both ways of judging read it
    same = _same_work(ra, rb, paths, waits, cost_rows, moved or movers(ra, rb))
    out = {"cpu_per_unit": per_unit, "slow_paths": paths, "blocked": waits,
           "costs": cost_rows}
    if per_unit is not None and "change" in per_unit:
        more = per_unit["rate_after"]["value"] / per_unit["rate_before"]["value"] - 1
        spread = throughput_change(rate_before, rate_after)
        out["throughput"] = spread
        # measured several times, the rates' own spread says what is noise; once each,
        # profiles that show no change make a moderate move of the rates doubtful
        noise_of_rates = spread["half"] if spread else 0.0
        if spread is None:
            doubt = _rates_doubted(same, more, per_unit["change"])
            if doubt is not None:
                # fewer CPUs busy for less work is a lead either way: say how to follow it
                hint = _blocking(ra, rb, more)
                if hint:
                    doubt += f" If the machine was no busier in the second run: {hint}."
                return dict(out, verdict=INCONCLUSIVE, reason=doubt)
        blocking = _blocking(ra, rb, more) if abs(more) > noise_of_rates else ""
        if (abs(more) >= SIGNIFICANT and abs(more) > noise_of_rates) or blocking:
            verdict = IMPROVEMENT if more > 0 else REGRESSION
            return dict(out, verdict=verdict,
                        reason=_throughput_reason(per_unit, more, paths, verdict, waits,
                                                  blocking) + _spread_tail(spread))
        ch = per_unit["change"]
        moved = abs(ch) >= SIGNIFICANT and abs(ch) > noise_of_rates
        verdict = NO_CHANGE if not moved else REGRESSION if ch > 0 else IMPROVEMENT
        return dict(out, verdict=verdict,
                    reason=_per_unit_reason(per_unit, paths, verdict, waits)
                    + _spread_tail(spread))
    if per_unit is not None:  # rates given, but they cannot be compared
        return dict(out, verdict=INCONCLUSIVE, reason=per_unit["why"])
    if is_idle(ra) and is_idle(rb):
        return dict(out, **_idle_verdict(ra["cpus_busy"], rb["cpus_busy"]))
    return dict(out, **_by_what_they_show(ra, rb, paths, waits, cost_rows, same,
                                          moved or movers(ra, rb)))


def _by_what_they_show(ra: dict, rb: dict, paths: list[dict], waits: list[dict],
                       cost_rows: list[dict], same: str | None, what_moved: dict) -> dict:
    """{"verdict", "reason"} without rates (steps 3 to 5 of the module's order)."""
    out: dict = {}
    # blocked time is waste whatever the work: threads waiting on a lock or the disk
    wait_change = sum(r["change"] for r in blocked.significant(waits) if not r["benign"])
    if wait_change >= WASTE_PP:
        return dict(out, verdict=REGRESSION, reason=(
            f"Threads spend more of their time blocked: {blocked.describe(blocked.grew(waits))}"
            f"; no throughput was given, so this is judged by what the captures show."))
    if wait_change <= -WASTE_PP:
        return dict(out, verdict=IMPROVEMENT, reason=(
            f"Threads spend less of their time blocked: {blocked.describe(blocked.fell(waits))}"
            f"; no throughput was given, so this is judged by what the captures show."))
    up, down = costs.grew(cost_rows), costs.fell(cost_rows)
    if up and not down:
        return dict(out, verdict=REGRESSION, reason=(
            f"A cost grew: {costs.describe(up)}; no throughput was given, so this is "
            f"judged by what the captures show."))
    if down and not up:
        return dict(out, verdict=IMPROVEMENT, reason=(
            f"A cost went away: {costs.describe(down, grown=False)}; no throughput was "
            f"given, so this is judged by what the captures show."))
    waste_a = sum(p["before"] for p in paths if p["waste"])
    waste_b = sum(p["after"] for p in paths if p["waste"])
    moved = [p for p in paths if p["waste"] and abs(p["change"]) >= 1.0]
    shift = _largest_library_shift(ra, rb)
    if abs(waste_b - waste_a) >= WASTE_PP and shift is not None and \
            abs(shift[1]) >= DIFFERENT_WORK * abs(waste_b - waste_a):
        lib, change, a, b = shift
        return dict(out, verdict=INCONCLUSIVE, reason=(
            f"Time in {_names(moved)} moved from {waste_a:.1f}% to "
            f"{waste_b:.1f}% of the busy time, but {lib} went from {a:.1f}% to {b:.1f}%: "
            f"the captures did different work; give the throughput of both captures (a "
            f"rate and its unit) to judge by CPU per unit of work."))
    # scheduling grows and falls with the requests served (a switch per request), so
    # it alone decides nothing: a faster build switches more; a round trip per row is
    # named by its own finding (costs above)
    work_a = waste_a - sum(p["before"] for p in paths if p["class"] in GROWS_WITH_WORK)
    work_b = waste_b - sum(p["after"] for p in paths if p["class"] in GROWS_WITH_WORK)
    named = [p for p in moved if p["class"] not in GROWS_WITH_WORK]
    if work_b - work_a >= WASTE_PP:
        return dict(out, verdict=REGRESSION, reason=(
            f"Time in {_names(named)} grew from {work_a:.1f}% to "
            f"{work_b:.1f}% of the busy time{_under(named)}; no throughput was given, "
            f"so this is judged by what the captures show."))
    if work_a - work_b >= WASTE_PP:
        return dict(out, verdict=IMPROVEMENT, reason=(
            f"Time in {_names(named)} fell from {work_a:.1f}% to "
            f"{work_b:.1f}% of the busy time; no throughput was given, so this is judged "
            f"by what the captures show."))
    if same is not None:
        return dict(out, verdict=NO_CHANGE, reason=same)
    kernel = _kernel_moved(ra, rb)
    return dict(out, verdict=INCONCLUSIVE, reason=(
        f"CPUs busy {_cpus(ra['cpus_busy'])} -> {_cpus(rb['cpus_busy'])}"
        f"{_largest_self_move(what_moved)} and no named waiting or slow path moved by "
        f"{WASTE_PP:g} points{kernel}; more CPU may mean more work done: give the "
        f"throughput of both captures (a rate and its unit) to judge by CPU per unit of "
        f"work."))


def _largest_self_move(moved: dict) -> str:
    """", mix went from 26.7% to 35.7% of the samples (±3.9 points)": the function
    whose own time grew most beyond its noise (shares add up to the whole, so what grew
    is what a reader looks for; what only fell is said when nothing grew)."""
    rows = [r for r in moved["functions"] if mover_moved(r, "self")]
    if not rows:
        return ""
    r = max(rows, key=lambda r: r["self_change"])
    return (f", {_mover_name(r)} went from {r['self_before']:.1f}% to "
            f"{r['self_after']:.1f}% of the samples (±{r['self_noise']:.1f} points),")


def _mover_name(row: dict) -> str:
    """A mover as a reason says it: never a bare address ("code of gzip no symbol names
    (gzip+0x4308)")."""
    if row["name"] == UNNAMED:
        return f"code of {row['dso']} no symbol names"
    if unnamed(row["name"]):
        return f"code of {row['dso']} no symbol names ({row['name']})"
    return row["name"]


def _spread_tail(spread: dict | None) -> str:
    """The sentence saying how sure the throughput's change is, when the rates were
    measured several times: +17% ± 10% at 95% (3 and 3 measurements)."""
    if spread is None:
        return ""
    na, nb = spread["measured"]
    return (f" The throughput's change is {spread['change']:+.0%} ± {spread['half']:.0%} "
            f"at 95% ({na} and {nb} measurements).")


def _rates_doubted(same: str | None, more: float, per_unit: float) -> str | None:
    """Why a verdict from rates measured once each cannot be trusted, or None. A
    single measurement of a rate has no spread: on a shared machine the same job ran
    1.27x slower in one run than the next (tests/fixtures/same-work/python-cpu), and
    1.13x in another (c-sort-hash). When the rates moved by less than SHARED_NOISE and the
    profiles show nothing that moved beyond sampling noise, the change is as likely
    the machine's as the program's. `same`: _same_work's reason, or None."""
    def ratio(change: float) -> float:  # (1.27 both for +27% and for -21%)
        return max(1 + change, 1 / (1 + change)) if change > -1 else math.inf
    if abs(more) < SIGNIFICANT and abs(per_unit) < SIGNIFICANT:
        return None  # the rates alone say no change
    if max(ratio(more), ratio(per_unit)) >= SHARED_NOISE:
        return None
    if same is None:
        return None  # the profiles changed too: the rates are believed
    return (f"Throughput {more:+.0%} at {per_unit:+.0%} CPU per unit of work, each rate "
            f"measured once, but nothing in the profiles moved beyond sampling noise: one "
            f"measurement of a rate on a shared machine varies by as much, so this may be "
            f"the machine, not the program. Measure each rate several times (or record "
            f"both builds again) to judge.")


def _same_work(ra: dict, rb: dict, paths: list[dict], waits: list[dict],
               cost_rows: list[dict], moved: dict) -> str | None:
    """The reason of `no significant change`, or None when something moved: a function
    or library beyond its noise (movers.py), a kind of busy time or a named cost beyond
    its noise, or blocked time by WASTE_PP. CPUs busy may differ: with the same profile
    that is the load or the machine, not the program (CPU use alone never decides)."""
    # where the samples land (self, per function and library) says what the CPU does;
    # totals alone moving is the call paths above the same code: no cost moved
    if moved["dsos"] or any(mover_moved(r, "self") for r in moved["functions"]):
        return None
    ta, tb = ra.get("time_in") or {}, rb.get("time_in") or {}
    na, nb = ta.get("busy") or ra["samples"] or 1, tb.get("busy") or rb["samples"] or 1
    for p in paths:
        change, half = noise.share_change(p["before"] * na / 100, na,
                                          p["after"] * nb / 100, nb)
        if abs(change) >= 1.0 and noise.beyond(change, half):
            return None
    if any(abs(r["change"]) >= 1.0 and noise.beyond(r["change"], r["noise"])
           for r in cost_rows):
        return None
    if any(abs(r["change"]) >= WASTE_PP for r in blocked.significant(waits)
           if not r["benign"]):
        return None
    a, b = ra.get("cpus_busy"), rb.get("cpus_busy")
    top = moved["largest"]
    example = "" if top is None else (
        f" (the largest, {_mover_name(top)} {top['self_before']:.1f}% -> "
        f"{top['self_after']:.1f}% self, is within ±{top['self_noise']:.1f} points)")
    callers = _callers_moved(moved["functions"])
    what = "function's own time" if callers else "function"
    text = (f"No {what}, library or kind of time moved beyond sampling noise at 99%"
            f"{example}: the program spends its time the same way in both{callers}")
    if a is None or b is None:
        return text + "."
    if _cpus_moved(ra, rb) and b < a and not is_idle(rb):
        return (f"{text}. CPUs busy fell from {_cpus(a)} to {_cpus(b)}: with the same "
                f"profile, less load was offered, the machine was busier, or the threads "
                f"block (on a lock, the disk or a peer) where on-CPU samples cannot see; "
                f"give the throughput of both captures, or record both builds again with "
                f"`{SWITCH_RECORDING}` to see the waits.")
    if _cpus_moved(ra, rb):
        return (f"{text}. CPUs busy went from {_cpus(a)} to {_cpus(b)}: with the same "
                f"profile, the load or the machine differed, not the program; give the "
                f"throughput of both captures to compare CPU per unit of work.")
    return f"{text}, and CPUs busy {_cpus(a)} -> {_cpus(b)}."


def _callers_moved(rows: list[dict]) -> str:
    """"; only the callers above it differ (handle_request total 0.2% -> 72.4%, ...):
    ...": functions whose totals moved while no self did. A build that inlines
    differently changes which functions keep a frame of their own, and frame-pointer
    stacks skip the caller of a function without one (`perf report --children` shows
    the same: tests/fixtures/inlining); or the same code is reached by other paths."""
    rows = [r for r in rows if mover_moved(r, "total")]
    if not rows:
        return ""
    shown = ", ".join(f"{r['name']} total {r['total_before']:.1f}% -> {r['total_after']:.1f}%"
                      for r in rows[:3])
    return (f"; only the callers above the same code differ ({shown}): another path to "
            f"it, or a build that inlines differently and frame-pointer stacks that skip "
            f"the caller of a function without a frame (record with --call-graph dwarf "
            f"to compare call paths)")


def _cpus_moved(ra: dict, rb: dict) -> bool:
    """CPUs busy changed by SIGNIFICANT and beyond their sampling noise."""
    a, b = ra.get("cpus_busy"), rb.get("cpus_busy")
    if a is None or b is None:
        return False
    rel, half = noise.ratio_of_cpus(a, ra["samples"], b, rb["samples"])
    return abs(rel) >= SIGNIFICANT and noise.beyond(rel, half)


def _kernel_moved(ra: dict, rb: dict) -> str:
    """", though the kernel's share went from 0.0% to 48.6% (...)" when it moved by
    WASTE_PP: what the kernel did is a lead even when nothing names it."""
    a = (ra.get("time_in") or {}).get("kernel")
    b = (rb.get("time_in") or {}).get("kernel")
    if a is None or b is None or abs(100 * (b - a)) < WASTE_PP:
        return ""
    unnamed = any(c["dso"].startswith("[kernel") and c["status"] != "resolved"
                  for c in rb.get("coverage", []) + ra.get("coverage", []))
    return (f", though the kernel's share of busy time went from {100 * a:.1f}% to "
            f"{100 * b:.1f}%" + (" (upload the recording host's kallsyms to name what it "
                                  "did)" if unnamed else ""))


def _largest_library_shift(ra: dict, rb: dict) -> tuple[str, float, float, float] | None:
    """(library, change, before, after) in points of each capture's samples (or µs of
    an off-CPU or wall view: its DSOs are weighted so), for the library whose self share
    moved most."""
    def shares(r):
        total = out_of(r)
        return {lib: 100 * w / total for lib, w in library_self(r).items()}
    sa, sb = shares(ra), shares(rb)
    rows = [(lib, sb.get(lib, 0.0) - sa.get(lib, 0.0), sa.get(lib, 0.0), sb.get(lib, 0.0))
            for lib in set(sa) | set(sb)]
    return max(rows, key=lambda r: (abs(r[1]), r[0]), default=None)


def _per_unit(ra, rb, rate_a: Rate | None, rate_b: Rate | None) -> dict | None:
    if rate_a is None and rate_b is None:
        return None
    if rate_a is None or rate_b is None:
        return {"why": "Only one of the two captures has a rate; give the throughput of "
                       "both to judge by CPU per unit of work."}
    if rate_a.per.lower() != rate_b.per.lower():
        return {"why": f"The rates are in different units ({rate_a.unit} and "
                       f"{rate_b.unit}); give both in the same unit."}
    a, b = ra.get("cpus_busy"), rb.get("cpus_busy")
    if not a or b is None:
        return {"why": "The captures do not say how long they ran (or the first used no "
                       "CPU), so their CPU per unit of work is unknown."}
    per_a, per_b = a / rate_a.value, b / rate_b.value  # CPU-seconds per unit of work
    return {"unit": rate_a.per, "rate_before": rate_a.to_dict(),
            "rate_after": rate_b.to_dict(), "before": per_a, "after": per_b,
            "change": round(per_b / per_a - 1, 4)}


def _throughput_reason(u: dict, more: float, paths: list[dict], verdict: str,
                       waits: list[dict] = (), blocking: str = "") -> str:
    ra, rb = u["rate_before"], u["rate_after"]
    text = (f"Throughput {more:+.0%} ({_num(ra['value'])} -> {_num(rb['value'])} "
            f"{ra['unit']}) at {u['change']:+.0%} CPU per {u['unit']} "
            f"({seconds_text(u['before'])} -> {seconds_text(u['after'])})")
    tail = _waits_tail(waits, verdict) + _slow_paths_tail(paths, verdict)
    return text + (f"; {blocking}" if blocking else "") + tail + "."


#: throughput down by this much (less than SIGNIFICANT) decides when CPUs busy fell too
BLOCKED_DROP = 0.05
#: what perfweb asks for to see where threads wait (the upload page says the same)
SWITCH_RECORDING = ("perf record -g --switch-events -e cpu-clock/freq=499/ "
                    "-e sched:sched_switch -p PID -- sleep 5")


def _blocking(ra: dict, rb: dict, more: float) -> str:
    """"CPUs busy fell from 1.99 to 1.76 while throughput fell: ..." when the service,
    driven under load, did less work with less CPU: its threads block (a lock, the
    disk, a peer) instead of working. Less CPU per unit of work then is no improvement.
    Without context switches in the capture, the text gives the recording that shows
    where they wait. "" otherwise (idle captures, CPU use unknown, no real fall)."""
    a, b = ra.get("cpus_busy"), rb.get("cpus_busy")
    if more > -BLOCKED_DROP or not a or b is None or is_idle(ra) or is_idle(rb):
        return ""
    rel, half = noise.ratio_of_cpus(a, ra["samples"], b, rb["samples"])
    if rel > -SIGNIFICANT or not noise.beyond(rel, half):
        return ""
    text = (f"CPUs busy fell from {_cpus(a)} to {_cpus(b)} while the throughput fell: "
            f"the threads block (on a lock, the disk or a peer) instead of working")
    if not (rb.get("off_cpu") or {}).get("timed"):
        text += (f"; these captures have no context switches to show where: record both "
                 f"builds again with `{SWITCH_RECORDING}`")
    return text


def _waits_tail(waits: list[dict], verdict: str) -> str:
    """"; blocked: lock waits under X 0.0% -> 33.9% of the threads' time (...)": what
    explains a throughput drop that CPU figures cannot."""
    rows = blocked.grew(waits) if verdict == REGRESSION else \
        blocked.fell(waits) if verdict == IMPROVEMENT else []
    return f"; blocked: {blocked.describe(rows)}" if rows else ""


def _slow_paths_tail(paths: list[dict], verdict: str) -> str:
    if verdict == REGRESSION:
        grew = [p for p in paths if p["waste"] and p["change"] >= 1.0]
        return f"; {_names(grew)} grew{_under(grew)}" if grew else ""
    if verdict == IMPROVEMENT:
        fell = [p for p in paths if p["waste"] and p["change"] <= -1.0]
        return f"; {_names(fell)} fell" if fell else ""
    return ""


def _per_unit_reason(u: dict, paths: list[dict], verdict: str,
                     waits: list[dict] = ()) -> str:
    unit = u["unit"]
    ra, rb = u["rate_before"], u["rate_after"]
    text = (f"CPU per {unit} {u['change']:+.0%} ({seconds_text(u['before'])} -> "
            f"{seconds_text(u['after'])} of CPU per {unit}) at {_num(ra['value'])} -> "
            f"{_num(rb['value'])} {ra['unit']}")
    return text + _waits_tail(waits, verdict) + _slow_paths_tail(paths, verdict) + "."


def _idle_verdict(a: float | None, b: float | None) -> dict:
    if a is None or b is None:
        return {"verdict": INCONCLUSIVE, "reason": "Both captures are labelled idle, but "
                "they do not say how long they ran, so their CPU use is unknown."}
    moved = abs(b - a) >= max(IDLE_MIN_CPUS, SIGNIFICANT * max(a, b))
    verdict = NO_CHANGE if not moved else REGRESSION if b > a else IMPROVEMENT
    return {"verdict": verdict, "reason": (
        f"Both captures are idle (no work), so every CPU used is waste: CPUs busy "
        f"{_cpus(a)} -> {_cpus(b)}.")}


def _names(paths: list[dict]) -> str:
    names = [p["name"] for p in paths[:3]] or ["waiting and slow paths"]
    return ", ".join(names)


def _under(paths: list[dict]) -> str:
    frames = [f for p in paths[:2] for f in p["under"][:1]]
    return f" (under {', '.join(dict.fromkeys(frames))})" if frames else ""


def _cpus(c: float | None) -> str:
    return "unknown" if c is None else f"{c:.2f}"




def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
