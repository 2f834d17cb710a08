"""One library doing most of a CPU-bound program's work, said with what that library is
for (software.LIBRARIES): "97.6% in libz.so (zlib compression)". When its symbols are
missing the library is still named, and the hottest few hundred bytes of its code say
whether one loop dominates (a stripped zlib at level 9 spends 70% in one loop).
"""
from __future__ import annotations

from collections import Counter

from ..identity import library_identity
from . import software
from .context import Context
from .finding import Finding, cpus_text, focus_of, pct
from .recognise import who_runs

#: the span of code one hot loop fits in (longest_match is ~200 bytes of x86-64)
LOOP_BYTES = 256


def _hot_span(ctx: Context, stacks: dict[int, int]) -> tuple[int, int, int]:
    """(start, end, samples) of the LOOP_BYTES of code with the most leaf samples, from
    the leaf addresses in the DSO (file offsets when known)."""
    at: Counter = Counter()
    for sid, w in stacks.items():
        loc = ctx.profile.locations[ctx.profile.stacks[sid][0]]
        at[loc.dso_offset if loc.dso_offset is not None else loc.address] += w
    addrs = sorted(at)
    best = (0, 0, 0)
    lo = total = 0
    for hi, a in enumerate(addrs):
        total += at[a]
        while a - addrs[lo] >= LOOP_BYTES:
            total -= at[addrs[lo]]
            lo += 1
        if total > best[2]:
            best = (addrs[lo], a, total)
    return best


def hot_code(ctx: Context, t: dict) -> Finding | None:
    busy = ctx.busy_stacks()
    busy_n = ctx.samples(busy)
    if not busy_n:
        return None
    per_lib: dict[str, dict[int, int]] = {}
    libs: dict[str, software.Library] = {}
    for sid, w in busy.items():
        f = ctx.leaf(sid)
        if f is None:
            continue
        lib = software.library_of(ctx.dso(f))
        # the work itself (BLAS kernels) or a runtime other rules read: nothing to name
        if lib is None or not lib.fix or lib.interpreter:
            continue
        per_lib.setdefault(ctx.dso(f), {})[sid] = w
        libs[ctx.dso(f)] = lib
    if not per_lib:
        return None
    dso, stacks = max(per_lib.items(), key=lambda kv: sum(kv[1].values()))
    lib = libs[dso]
    samples = sum(stacks.values())
    share = samples / busy_n
    if share < t["min_share"]:
        return None
    named = {sid: w for sid, w in stacks.items()
             if ctx.profile.functions[ctx.leaf(sid)].resolved}
    unnamed = {sid: w for sid, w in stacks.items() if sid not in named}
    by_fn: Counter = Counter()
    for sid, w in named.items():
        by_fn[ctx.leaf(sid)] += w
    top_fn, top_fn_n = by_fn.most_common(1)[0] if by_fn else (None, 0)
    start, end, span_n = _hot_span(ctx, unnamed) if unnamed else (0, 0, 0)
    ident = library_identity(dso)
    missing = ctx.samples(unnamed) > ctx.samples(named)
    if span_n > top_fn_n:
        concentration = span_n / busy_n
        if concentration >= t["medium"]:
            what = (f"its symbols are missing, but {pct(concentration)} of samples fall in "
                    f"{end - start + 1} bytes of its code ({hex(start)}-{hex(end)}): one hot "
                    f"loop" + (f", in {lib.name} usually {lib.hot_loop}"
                               if lib.hot_loop else ""))
        else:
            what = (f"its symbols are missing; no single loop dominates (the hottest "
                    f"{LOOP_BYTES} bytes of its code take {pct(concentration)})")
    else:
        concentration = top_fn_n / busy_n
        name = ctx.name(top_fn) if top_fn is not None else "?"
        purpose = software.function_purpose(lib, name)
        what = f"its hottest function is {name} ({pct(concentration)}" + \
            (f": {purpose})" if purpose else ")")
    severity = ("high" if concentration >= t["high"] else
                "medium" if concentration >= t["medium"] else "low")
    callers = ctx.callers_above(stacks, lambda f: ctx.dso(f) == dso)
    where = (f" under {', '.join(c['name'] for c in callers[:2])}" if callers else
             f", in {who_runs(ctx, stacks)}")
    return Finding(
        "hot-code",
        f"{pct(share)} in {ident} ({lib.name} {lib.purpose})" +
        (" — symbols missing" if missing else ""),
        severity, "high" if not missing else "medium", share, samples,
        f"{dso} is the leaf of {pct(share)} of the busy samples"
        f"{cpus_text(ctx.cpus(samples))}{where}; {what}.",
        f"A CPU-bound program spending most of its time in {lib.name} ({lib.purpose}) "
        f"runs at the speed of that work: doing less of it (or a cheaper kind) is what "
        f"changes the throughput, more threads only spread it.",
        lib.fix, cpus=ctx.cpus(samples),
        evidence={"library": lib.name, "dso": dso, "share": round(share, 4),
                  "hot_span": [start, end, span_n] if unnamed else None,
                  "functions": [ctx.function_row(f, c) for f, c in by_fn.most_common(5)],
                  "callers": callers},
        focus=focus_of(callers))
