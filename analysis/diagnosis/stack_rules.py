"""Whether the stacks themselves can be trusted: code built without frame pointers.

With `perf record -g` the kernel follows frame pointers. Code compiled with
-fomit-frame-pointer (GCC's and Clang's default at -O2, Debian's libraries, CPython's
libpython, OpenBLAS, most C++ services) has none, so the chain stops after the sampled
function, or runs into whatever the register held: a stack of one or two frames that
reaches no thread entry point, or one that ends at an address no file maps. Hotspot and
perf's own documentation give the same advice: record those with `--call-graph dwarf`.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .. import column_ops
from ..aggregate import stack_walks
from ..identity import function_identity
from ..importers.perf_report import HIDDEN_FRAME
from ..profile import KERNEL, UNKNOWN
from ..unwind.user_stacks import DWARF_NOTE
from . import format_facts
from .context import Context
from .finding import Finding, pct, severity_of
from .knowledge import THREAD_ROOTS

#: findings about how a capture was recorded, not what the program did: a comparison
#: does not count them as appeared or gone
RECORDING_RULES = frozenset({"broken-stacks"})

#: a stack with this many user frames or fewer, not ending at an entry point, is cut
SHORT = 2


def broken_stacks(ctx: Context, t: dict) -> Finding | None:
    p = ctx.profile
    cut_in: Counter = Counter()  # DSO of the outermost frame of broken stacks
    roots = bytearray(len(p.functions))  # 0: not asked yet, 1: no, 2: a thread root

    def is_root(fid: int) -> bool:
        r = roots[fid]
        if not r:  # (an unnamed function is no entry point: its name is its address)
            fn = p.functions[fid]
            r = roots[fid] = 2 if fn.resolved and function_identity(fn.name) in THREAD_ROOTS \
                else 1
        return r == 2
    # physical frames: inline frames from debug info are no proof the chain is whole;
    # stacks of kernel code only (kernel threads, idle) are whole and left out
    # a perf report's graph is not the samples' stacks: a chain through branches below
    # perf's threshold ends where perf stopped printing, and a frame without a name is
    # a bare address with no file, mapped or not
    rebuilt = format_facts.rebuilt_stacks(p)
    weights = _printed_in_full(ctx) if rebuilt else ctx.weights
    frames = stack_walks.user_frames(ctx.stack_funcs.sets, weights, _user_functions(ctx))
    # per outer function, once: 1 an address no file maps (what a frame pointer register
    # held in code that used it for data; perf prints it as [unknown] or the bare
    # address), 2 no thread entry point, 0 an entry point
    functions, mappings = p.functions, p.mappings
    kind = bytearray(len(functions))
    # (an unnamed function is never an entry point: its mapping decides, once; the named
    # outer functions are asked one by one)
    for mid, fids in ctx.unnamed.items():
        column_ops.fill(kind, fids, 1 if mappings[mid].kind == UNKNOWN and not rebuilt else 2)
    resolved = ctx.function_columns()[0]
    for f in column_ops.distinct(frames[3]).tolist():
        if resolved[f]:
            kind[f] = 0 if is_root(f) else 2
    # garbage, or short: broken (with the function each is cut in) in one pass;
    # the broken stacks as a flag by stack id (nearly all user stacks of code without
    # frame pointers: as a dict they were the report's peak on a 4M-sample text)
    broken = bytearray(len(p.stacks))
    samples, origins, user_samples, deepest = stack_walks.cut_stacks(frames, kind, SHORT,
                                                                     broken)
    for origin, w in origins.items():
        cut_in[mappings[functions[origin].mapping_id].path] += w
    share = ctx.share(samples)
    dwarf = DWARF_NOTE in p.notes  # stack copies not unwound: leaves only, for now
    if (deepest < 2 and not dwarf) or not user_samples or \
            samples / user_samples < t["min_share"]:
        return None  # (no stack has a caller: recorded without call chains at all)
    dsos = ", ".join(f"{d.rsplit('/', 1)[-1]} ({pct(ctx.share(n))})"
                     for d, n in cut_in.most_common(3))
    title = "Stacks cut short: code without frame pointers"
    cut = (f"{pct(samples / user_samples)} of user-space samples have a stack that stops "
           f"after one or two frames or runs into an unmapped address, cut in {dsos}.")
    confidence = "medium"
    if rebuilt:
        # a chain perf report printed short is a stack cut short or callers each under
        # its threshold: the text is the same (tests/test_formats_agree.py)
        title = "Call chains short in the report: cut stacks or perf's threshold"
        cut = (f"{pct(samples / user_samples)} of user-space samples have a call chain "
               f"that perf report printed with one or two frames, cut in {dsos}. perf "
               f"report hides call-graph branches under its threshold (0.5% of the samples "
               f"by default) and prints only the part of a chain its samples share, so "
               f"a short chain is a stack cut short (code without frame pointers) or "
               f"callers too many to print: the report cannot tell which.")
        confidence = "low"
        fix = ("Upload the perf.data file or its `perf script` text, whose stacks are the "
               "samples' own, or print the report with every branch: `perf report "
               "--no-children --stdio -g graph,0 --percent-limit 0`.")
    elif dwarf:
        title = "Stacks not unwound yet: the binaries that ran are missing"
        fix = ("The capture holds the stack copies: upload the binaries that ran (or the "
               "`perf archive` of the capture) and perfweb unwinds them.")
    else:
        fix = ("Record again with DWARF unwinding: `perf record --call-graph dwarf -F 99 -p "
               "PID -- sleep 10` (8 KiB of stack per sample; `--call-graph dwarf,16384` "
               "for deeper stacks), and upload the binaries with the capture (`perf "
               "archive`). Or build with -fno-omit-frame-pointer and keep `-g`.")
    return Finding(
        "broken-stacks", title,
        severity_of(share, t), confidence, share, samples, cut,
        "perf -g follows frame pointers, and code built without them (the default at -O2) "
        "breaks the chain: callers are missing, so the flame graph and the other findings "
        "cannot say which code path the time belongs to.",
        fix,
        evidence={"dsos": [{"dso": d, "samples": n, "share": round(ctx.share(n), 4)}
                           for d, n in cut_in.most_common(5)],
                  "functions": ctx.top_functions(
                      weights, lambda f: p.mappings[p.functions[f].mapping_id].kind != KERNEL,
                      only=broken)},
        focus={})


def _printed_in_full(ctx: Context) -> dict[int, int]:
    """The weights of the stacks a perf report printed to their end: not those through
    call-graph branches it hid (perf_report.HIDDEN_FRAME)."""
    hidden = {f.id for f in ctx.profile.functions if f.name == HIDDEN_FRAME}
    return {sid: w for sid, w in ctx.weights.items()
            if not hidden.intersection(ctx.funcs[sid])}


def _user_functions(ctx: Context) -> np.ndarray:
    """location -> its physical function when it is user code, else -1."""
    p = ctx.profile
    kernel = np.frombuffer(bytes(m.kind == KERNEL for m in p.mappings), dtype=np.uint8)
    locations = ctx.stack_funcs.sets.locations
    return np.where(kernel[locations.mapping] != 0, -1, locations.owner)
