"""One library doing most of a CPU-bound program's work, said with what that library is
for (software.LIBRARIES): "97.6% in libz.so (zlib compression)". When its symbols are
missing the library is still named, and the hottest few hundred bytes of its code say
whether one loop dominates (a stripped zlib at level 9 spends 70% in one loop).
"""
from __future__ import annotations

import re
from array import array
from collections import Counter
from itertools import compress

from .. import column_ops
from ..aggregate import stack_walks
from ..identity import library_identity
from . import runtimes, software
from .context import Context
from .finding import Finding, cpus_text, focus_of, pct
from .recognise import who_runs

#: the span of code one hot loop fits in (longest_match is ~200 bytes of x86-64)
LOOP_BYTES = 256


def _hot_span(ctx: Context, stacks: dict[int, int],
              only: bytearray | None = None) -> tuple[int, int, int]:
    """(start, end, samples) of the LOOP_BYTES of code with the most leaf samples, from
    the leaf addresses in the DSO (file offsets when known): summed per address and slid
    over; `only` (a flag by stack id): of these stacks the flagged."""
    return stack_walks.hot_span(ctx.stack_funcs.sets, ctx.profile.locations, stacks,
                                LOOP_BYTES, only)


def _is_shared_object(dso: str) -> bool:
    return bool(re.search(r"\.so(\.|$)", dso.rsplit("/", 1)[-1]))


def _library_frames(ctx: Context, stacks: dict[int, int]) -> array:
    """By stack id, the frame its sample is the cost of (-1: none), when that frame is in
    a well-known library: its leaf's library, or, when the leaf is the C library or the
    kernel (memcpy, malloc, a system call), the library that called them: malloc under
    EVP_MD_CTX_copy_ex is OpenSSL's cost. The first frame that is in a library or does
    not pass through decides (one array walk over the stacks). A column, not a dict:
    nearly every busy stack has such a frame, and the dict was the rule's peak."""
    deciding = bytearray(len(ctx.profile.functions))  # 2: in a library, 1: deciding else
    for f in ctx.named:
        if ctx.library(f) is not None:
            deciding[f] = 2
        elif not ctx.passes_through(f):
            deciding[f] = 1
    for fids in ctx.unnamed.values():  # (by the file alone: once per mapping)
        f = fids[0]
        value = 2 if ctx.library(f) is not None else 0 if ctx.passes_through(f) else 1
        if value:
            column_ops.fill(deciding, fids, value)
    return stack_walks.first_marked(ctx.stack_funcs.sets, stacks, deciding, 2,
                                    array("i", [-1]) * len(ctx.profile.stacks))


def _operation(ctx: Context, lib: software.Library, stacks: dict[int, int]):
    """The costly operation of `lib` (software.Library.operations) most of these stacks
    run under, with its samples."""
    if not lib.operations:
        return None, 0
    profile = ctx.profile
    used = bytearray(len(profile.functions))
    stack_walks.used_functions(ctx.stack_funcs.sets, stacks, used)
    marked, op_of = bytearray(len(used)), {}
    for f in compress(range(len(used)), used):  # each function's operation, once
        fn = profile.functions[f]
        op = software.operation_of(lib, fn.name) if fn.resolved else None
        if op is not None:
            marked[f], op_of[f] = 1, op
    acc: Counter = Counter()
    if op_of:
        first = stack_walks.first_marked(ctx.stack_funcs.sets, stacks, marked)
        for sid, w in stacks.items():  # (in the stacks' order: most_common's ties)
            f = first.get(sid)
            if f is not None:
                acc[op_of[f]] += w
    return acc.most_common(1)[0] if acc else (None, 0)


def hot_code(ctx: Context, t: dict) -> Finding | None:
    busy = ctx.busy_stacks()
    busy_n = ctx.samples(busy)
    if not busy_n:
        return None
    library_frame = _library_frames(ctx, busy)
    # each library frame's (DSO, library) as a group id by function, decided once per
    # named function and once per mapping for the unnamed ones (the library of the work
    # itself, BLAS kernels, or a runtime other rules read: no group); then the stacks
    # by group in one array pass, groups in the order of their first stack
    group = array("i", [-1]) * len(ctx.profile.functions)
    keys: list[tuple[str, str]] = []
    key_ix: dict[tuple[str, str], int] = {}
    libs: dict[tuple[str, str], software.Library] = {}

    def group_of(f: int) -> int:
        lib = ctx.library(f)
        if lib is None or not lib.fix or lib.interpreter:
            return -1
        key = (ctx.dso(f), lib.name)
        if key not in key_ix:  # (library names are unique: one Library per key)
            key_ix[key], libs[key] = len(keys), lib
            keys.append(key)
        return key_ix[key]
    for f in ctx.named:
        group[f] = group_of(f)
    for fids in ctx.unnamed.values():
        g = group_of(fids[0])
        if g >= 0:
            column_ops.fill(group, fids, g)
    per_lib = {keys[g]: st for g, st in
               stack_walks.group_stacks(library_frame, group, busy).items()}
    if not per_lib:
        return None
    key, stacks = max(per_lib.items(), key=lambda kv: sum(kv[1].values()))
    del per_lib  # (the other libraries' stacks: not held through the rest of the rule)
    dso, lib = key[0], libs[key]
    samples = sum(stacks.values())
    share = samples / busy_n
    if share < t["min_share"]:
        return None
    # the stacks whose library frame is named (summed per frame, first met first) and the
    # unnamed ones (a flag by stack id): no dict of either, each most of the library's
    unnamed = bytearray(len(ctx.profile.stacks))
    named_n, unnamed_n, n_unnamed, by_frame = stack_walks.frame_sums(
        stacks, library_frame, ctx.function_columns()[0], unnamed)
    by_fn = Counter(by_frame)
    top_fn, top_fn_n = by_fn.most_common(1)[0] if by_fn else (None, 0)
    start, end, span_n = _hot_span(ctx, stacks, unnamed) if n_unnamed else (0, 0, 0)
    ident = library_identity(dso)
    inside = "" if software.library_of(dso) is lib else f" inside {ident}"
    missing = unnamed_n > named_n
    op, op_n = _operation(ctx, lib, stacks)
    fix = lib.fix
    if op is not None and op_n >= samples / 2:
        concentration = op_n / busy_n
        what = f"{pct(concentration)} of samples run under {op[1]}"
        fix = op[2]
    elif span_n > top_fn_n:
        concentration = span_n / busy_n
        if lib.hot_loop and concentration >= t["medium"]:
            what = (f"its symbols are missing, but {pct(concentration)} of samples fall in "
                    f"{end - start + 1} bytes of its code ({hex(start)}-{hex(end)}): one hot "
                    f"loop, in {lib.name} usually {lib.hot_loop}")
        else:
            # without names (and without a known hot loop) the capture cannot tell the
            # work from a wasteful setting of it: say so, and how to find out
            what = (f"its symbols are missing (the hottest {LOOP_BYTES} bytes of its code "
                    f"take {pct(concentration)}): upload its debug file to see which of its "
                    f"functions run")
            # a library dominating another program (libcrypto in nginx) is that
            # program's cost whichever of its functions runs; a program that is the
            # library (the zstd command) is doing its job
            concentration = share if _is_shared_object(dso) and share >= t["high"] \
                else min(concentration, t["medium"] - 0.01)
            if concentration >= t["high"]:
                concentration = t["high"] - 0.01  # medium: which function, unknown
    else:
        concentration = top_fn_n / busy_n
        name = ctx.name(top_fn) if top_fn is not None else "?"
        purpose = software.function_purpose(lib, name)
        what = f"its hottest function is {name} ({pct(concentration)}" + \
            (f": {purpose})" if purpose else ")")
    severity = ("high" if concentration >= t["high"] else
                "medium" if concentration >= t["medium"] else "low")
    # a library runtimes.py reads as a runtime (SQLite's statement compiler vs its
    # bytecode engine, NumPy's dispatch vs its loops) says which of its work is a fault
    # through runtime-overhead; its hottest function alone is where the time goes (an
    # FTS query's B-tree lookups, 41% of a healthy search worker)
    if runtimes.runtime_of_file(dso) is not None and (op is None or op_n < samples / 2):
        severity = "low"
    callers = ctx.callers_above(stacks, lambda f: ctx.library(f) is lib)
    where = (f" under {', '.join(c['name'] for c in callers[:2])}" if callers else
             f", in {who_runs(ctx, stacks)}")
    return Finding(
        "hot-code",
        (f"{pct(share)} in {lib.name} ({lib.purpose}{inside})" if inside else
         f"{pct(share)} in {ident} ({lib.name} {lib.purpose})") +
        (f": {op[1].split(' (')[0]}" if op is not None and op_n >= samples / 2 else "") +
        (" — symbols missing" if missing else ""),
        severity, "high" if not missing else "medium", share, samples,
        f"{lib.name if inside else dso} is the leaf of {pct(share)} of the busy samples"
        f"{cpus_text(ctx.cpus(samples))}{where}; {what}.",
        f"A CPU-bound program spending most of its time in {lib.name} ({lib.purpose}) "
        f"runs at the speed of that work: doing less of it (or a cheaper kind) is what "
        f"changes the throughput, more threads only spread it.",
        fix, cpus=ctx.cpus(samples),
        evidence={"library": lib.name, "dso": dso, "share": round(share, 4),
                  "operation": op[1] if op is not None else None,
                  "hot_span": [start, end, span_n] if n_unnamed else None,
                  "functions": [ctx.function_row(f, c) for f, c in by_fn.most_common(5)],
                  "callers": callers},
        focus=focus_of(callers))


def _short(what: str) -> str:
    """"sequential scans (SeqNext, ...): queries read..." -> "sequential scans"."""
    return what.split(" (")[0].split(",")[0].split(":")[0]


def _scoped(ctx: Context, work: software.CostlyWork, busy: dict[int, int]) -> int:
    """Samples of `work.scope` frames attributed to the work: all of them in the
    proportion its functions, not the alternatives, run under that scope."""
    if not work.scope:
        return 0
    scope, alt, own = (re.compile(work.scope), re.compile(work.alternatives or "$^"),
                       re.compile(work.functions))
    under = mine = theirs = 0
    for sid, w in busy.items():
        names = [ctx.name(f) for f in ctx.funcs[sid] if ctx.profile.functions[f].resolved]
        if not any(scope.search(n) for n in names):
            continue
        under += w
        if any(own.search(n) for n in names):
            mine += w
        elif any(alt.search(n) for n in names):
            theirs += w
    return round(under * mine / (mine + theirs)) if mine else 0


def costly_work(ctx: Context, t: dict) -> Finding | None:
    """A server's own costly operation (software.COSTLY_WORK: Redis KEYS, a PostgreSQL
    sequential scan) under a large share of the busy samples: its own code, so no
    library rule sees it, and a known alternative exists."""
    busy = ctx.busy_stacks()
    busy_n = ctx.samples(busy)
    if not busy_n:
        return None
    # each named function of the weighted stacks looked up once, then one array walk
    # finds each stack's first (from the leaf) costly one
    work_of: dict[int, software.CostlyWork] = {}
    marked = bytearray(len(ctx.profile.functions))
    for f in ctx.named:
        work = software.costly_work_of(ctx.name(f))
        if work is not None:
            work_of[f] = work
            marked[f] = 1
    per: dict[software.CostlyWork, dict[int, int]] = {}
    if work_of:
        first = stack_walks.first_marked(ctx.stack_funcs.sets, busy, marked)
        for sid, w in busy.items():
            f = first.get(sid)
            if f is not None:
                per.setdefault(work_of[f], {})[sid] = w
    if not per:
        return None
    work, stacks = max(per.items(), key=lambda kv: sum(kv[1].values()))
    samples = max(ctx.samples(stacks), _scoped(ctx, work, busy))
    share = samples / busy_n
    if share < max(t["min_share"], work.min_share):
        return None
    matched = (lambda f: work_of.get(f) is work)  # the functions of these stacks are in cats
    funcs = ctx.top_functions(stacks, matched)
    callers = ctx.callers_above(stacks, matched)
    where = (f" under {', '.join(c['name'] for c in callers[:2])}" if callers else
             f", in {who_runs(ctx, stacks)}")
    return Finding(
        "costly-work", f"{work.software} spends {pct(share)} on {_short(work.what)}",
        "high" if share >= t["high"] else "medium", "high", share, samples,
        f"{pct(share)} of the busy samples{cpus_text(ctx.cpus(samples))} run "
        f"{', '.join(f['name'] for f in funcs[:3])}{where}: {work.what}.",
        "Work whose cost grows with the size of the data, done per request, makes each "
        "request as slow as the data is large; the throughput falls as the data grows.",
        work.fix, cpus=ctx.cpus(samples),
        evidence={"software": work.software, "functions": funcs, "callers": callers,
                  "stacks": ctx.heaviest_stacks(stacks)},
        focus=focus_of(funcs))
