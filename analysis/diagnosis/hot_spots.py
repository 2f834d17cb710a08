"""Where the time goes, for any software: the general pass that names every component
holding a large share of the CPU, whether or not a table describes it.

Each busy sample is charged to its *cost centre*: the first frame from the leaf that is
not the kernel or the C runtime working for its caller (memcpy, malloc, a page fault or
a system call are the cost of the frame that asked for them: `rb_str_plus` pays for the
memcpy under it). Cost centres are then read at three levels: a runtime's subsystem
(runtimes.py: the JVM filling in stack traces, Go's collector marking the heap), a
function, and a library file. What is reported, with its share, its 95% interval, its
CPUs and the application frames above it:

- a runtime doing something other than running the program (memory management,
  exceptions, compilation, regular expressions, copying, its locks): what a program
  makes its runtime do, and what to change when it costs;
- a library (a shared object other than the C runtime) that dominates another program,
  or a runtime's own function no table describes: named, with its callers, as the place
  to look, since nothing says it is the program's intended work;
- the program's own code, the runtime's interpreter loop, or a described library doing
  its job: said as where the time goes (low), never as a fault; which work is too much
  is for a comparison, or the throughput, to say.

The callers are only those the stacks hold: when the stacks stop at the hot code
(libraries built without frame pointers), the finding says so and how to record them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import column_ops
from ..aggregate import stack_walks
from ..identity import library_identity
from ..profile import JIT, KERNEL, UNKNOWN
from . import knowledge, runtimes
from .context import Context
from .evidence import wilson
from .finding import Finding, cpus_text, focus_of, pct, severity_of
from .knowledge import THREAD_ROOTS
from .stack_columns import StackColumns

#: thresholds (rules.RULES gives them): the lower end of the share's 95% interval a
#: cost must reach to be named at all ("name"), at medium and at high (a runtime's
#: overhead; a runtime's undescribed function is at most medium; the program's own code
#: and a library nothing describes are named, never above low: whether a library doing
#: most of a program's work is its job or a fault, only knowledge of it can say)
THRESHOLDS = {"name": 0.15, "medium": 0.35, "high": 0.50,
              # a runtime's own locks (a JVM's monitors: the program's synchronized
              # blocks) are contention, judged as lock-contention judges a futex's
              "lock_medium": 0.10, "lock_high": 0.30}

_SHARED_OBJECT = re.compile(r"\.so(\.|$)")
#: categories of functions that work for their caller (knowledge.py)
_FOR_CALLER = frozenset({"copy", "allocator"})
#: categories that say what work a function does, not which rule names it
_WORK_ITSELF = frozenset({"compare", "linear_search", "walk", "unoptimized"})
_NONE: frozenset = frozenset()


@dataclass(frozen=True)
class BusyRows:
    """The busy stacks the charges are rows of: their ids and samples. (Their frames,
    StackColumns, are not kept: 8 bytes a frame, held until the report ends.)"""
    sid: np.ndarray  # (S,)
    weight: np.ndarray  # (S,) float64

    @property
    def total(self) -> float:
        return float(self.weight.sum())


@dataclass
class Charges:
    """The busy samples' cost centres, as columns over the rows of `busy`."""
    busy: BusyRows
    centre: np.ndarray  # (S,) function id each row is charged to
    centre_pos: np.ndarray  # (S,) its position in StackColumns.fn (not kept)
    subsystem: np.ndarray  # (S,) index into `subsystems` (-1: none)
    decider: np.ndarray  # (S,) the function that put the row in its subsystem (-1)
    subsystems: list  # [(Runtime, Subsystem)]
    sub_of: np.ndarray  # (functions,) the overhead subsystem of each function (-1)
    caller: np.ndarray  # (S,) the application function nearest above the centre (-1)
    cut: np.ndarray  # (S,) bool: the stack ends without its callers (unknown)
    #: (S,) bool: the interpreter loop is the first frame from the leaf that is the
    #: runtime running the program or application code: perf sees the interpreter, not
    #: the program's function (JIT-compiled code under a bottom `Interpreter` frame is not)
    interpreted: np.ndarray
    #: (S,) for a C-runtime leaf whose callers are lost, the function of the frame the
    #: stack holds above it (glibc's qsort under a comparator's strtod), else -1
    nearest: np.ndarray
    #: (S,) bool: a frame of the row is a runtime's memory management (collector_stacks)
    collecting: np.ndarray


def charges(ctx: Context) -> Charges:
    return ctx.memo("hot_spot_charges", lambda: _charges(ctx))


def _charges(ctx: Context) -> Charges:
    p = ctx.profile
    cols = StackColumns.of(ctx.stack_funcs.sets, ctx.busy_stacks())
    nf = len(p.functions)
    used = np.zeros(nf, dtype=bool)
    used[cols.fn] = True
    fids = np.flatnonzero(used)
    functions, mappings = p.functions, p.mappings
    resolved, fn_mapping = (np.frombuffer(c, dtype=t) for c, t in
                            zip(ctx.function_columns(), (np.uint8, np.int32)))
    # what a function's file decides, once per file
    m_through, m_unmapped, m_kernel = (np.zeros(len(mappings), dtype=bool) for _ in range(3))
    mids = fn_mapping[fids]
    _, first = column_ops.first_rows(mids)
    for f in fids[first].tolist():
        mid = functions[f].mapping_id
        m_through[mid] = ctx.passes_through(f)
        m_unmapped[mid] = mappings[mid].kind == UNKNOWN
        m_kernel[mid] = mappings[mid].kind == KERNEL
    unmapped, kernel = m_unmapped[fn_mapping], m_kernel[fn_mapping]
    # what its categories decide, once per set of categories (-1: none)
    known, kinds = ctx.cats.kind_column()
    kinds = kinds + [_NONE]
    kind = np.full(nf, -1, dtype=np.int64)  # (a context of no stacks knows none)
    kind[:len(known)] = known[:nf]

    def per_kind(test) -> np.ndarray:
        return np.array([test(k) for k in kinds], dtype=bool)[kind]
    # (memcpy and malloc are their caller's cost wherever perf placed them: a
    # DWARF-unwound libc frame may come without its file)
    through = m_through[fn_mapping] | per_kind(lambda k: bool(k & _FOR_CALLER))
    by_rule = per_kind(lambda k: bool(k - _WORK_ITSELF))  # a rule of its own names it
    exec_of = per_kind(lambda k: "interpreter" in k)  # knowledge.INTERPRETER's loops
    app = np.zeros(nf, dtype=bool)
    flags = np.frombuffer(ctx.app.flags, dtype=np.uint8)[:nf]
    app[:len(flags)] = flags == 2
    root = np.zeros(nf, dtype=bool)
    sub_of = np.full(nf, -1, dtype=np.int64)  # overhead subsystem index
    subsystems: list = []
    sub_ix: dict = {}

    def subsystem(fn) -> int:
        m = mappings[fn.mapping_id]
        rt, sub = runtimes.subsystem_of(fn.name, m.path, jit=m.kind == JIT,
                                        resolved=fn.resolved)
        if sub is None or sub.kind == "execution":
            return -1
        key = (rt.name, sub.name)
        if key not in sub_ix:
            sub_ix[key] = len(subsystems)
            subsystems.append((rt, sub))
        return sub_ix[key]
    # a named function by its name; one without a name by its file alone, once a file
    by_file: dict[int, int] = {}
    for f, named, mid in zip(fids.tolist(), resolved[fids].tolist(), mids.tolist()):
        if named:
            fn = functions[f]
            root[f] = fn.name in THREAD_ROOTS
            sub_of[f] = subsystem(fn)
            continue
        got = by_file.get(mid)
        if got is None:
            got = by_file[mid] = subsystem(functions[f])
        sub_of[f] = got
    # the cost centre: the first frame that is not the kernel or the C runtime, and is in
    # a file (an address no file maps is what a frame-pointer register held: no frame);
    # none (a kernel thread, a system call whose caller is lost): -1, left to the rules
    # of the kernel, the allocator and copying
    pos = cols.first_where(~through & ~unmapped)
    # a C-runtime function at the leaf whose callers the stack lost (a libc without frame
    # pointers: strncpy's caller is gone) is its own cost centre, or nothing would name
    # it, however much it holds; not what a rule of its category names (locks, copies,
    # the allocator, I/O: knowledge.CATEGORIES), and not a kernel leaf (the kernel's)
    leaf = cols.leaf_positions()
    leaf_fn = cols.fn[np.maximum(leaf, 0)]
    own_leaf = (pos < 0) & (leaf >= 0) & ~kernel[leaf_fn] & ~unmapped[leaf_fn] & \
        ~by_rule[leaf_fn]
    pos = np.where(own_leaf, leaf, pos)
    centre = np.where(pos >= 0, cols.fn[np.maximum(pos, 0)], -1)
    # a runtime's subsystem: the first frame from the leaf that is application code or
    # in a subsystem decides (an exception's stack filling above the JVM's frame walker
    # is the exception's cost; application code under a regex replace callback is not)
    decides = app | (sub_of >= 0)
    decide = cols.first_where(decides)
    decided_fn = cols.fn[np.maximum(decide, 0)]
    subsystem = np.where(decide >= 0, sub_of[decided_fn], -1)
    # memory management asked for by another of the runtime's subsystems is that work's
    # cost: the allocations (and the collections they bring) of regexp.Compile are the
    # compiling's, of an exception's construction the exception's. (The last entry, read
    # for index -1, is "no subsystem": not memory management.)
    memory = np.array([sub.kind == "memory" for _, sub in subsystems] + [False])
    if memory.any():
        # the first deciding frame that is not memory management (a Go binary's runtime
        # is application code too)
        above = cols.first_where(decides & ~memory[sub_of])
        above_fn = cols.fn[np.maximum(above, 0)]
        owner = np.where(above >= 0, sub_of[above_fn], -1)
        moved = memory[subsystem] & (owner >= 0) & ~memory[owner]
        subsystem = np.where(moved, owner, subsystem)
        decided_fn = np.where(moved, above_fn, decided_fn)
    decider = np.where(subsystem >= 0, decided_fn, -1)
    # a function that loads what is loaded once owns its whole subtree: the regular
    # expressions, JSON parsing and garbage of loading templates are the loading's cost
    loading = np.array([sub.kind == "loading" for _, sub in subsystems] + [False])
    below = pos
    if loading.any():
        loader = cols.first_where(loading[sub_of])
        has = loader >= 0
        loader_fn = cols.fn[np.maximum(loader, 0)]
        subsystem = np.where(has, sub_of[loader_fn], subsystem)
        decider = np.where(has, loader_fn, decider)
        below = np.where(has, np.maximum(loader, pos), pos)
    # the application frame nearest above the centre (above the loader, for loading)
    # that is in no subsystem (a Go program's reflect and runtime are its own code, but
    # not who asked for them)
    above = np.empty(len(cols.fn), dtype=bool)
    chunk = stack_walks.FRAME_CHUNK  # (per-frame temporaries a chunk at a time)
    for lo in range(0, len(cols.fn), chunk):
        fn = cols.fn[lo:lo + chunk]
        row = cols.rows_of(lo, lo + len(fn))
        above[lo:lo + len(fn)] = app[fn] & ~root[fn] & (sub_of[fn] < 0) & \
            (np.arange(lo, lo + len(fn)) > below[row]) & (pos[row] >= 0)
    caller_pos = cols.first_marked(above)
    caller = np.where(caller_pos >= 0, cols.fn[np.maximum(caller_pos, 0)], -1)
    # callers unknown: no application frame above, and the stack's outermost frame is no
    # thread entry point (the unwinder stopped in code without frame pointers)
    last = cols.start[1:] - 1
    outer_root = np.zeros(len(centre), dtype=bool)
    has = cols.start[1:] > cols.start[:-1]
    outer_root[has] = root[cols.fn[last[has]]]
    cut = (caller < 0) & (~outer_root | own_leaf)
    seen = cols.first_where(app | exec_of)
    interpreted = (seen >= 0) & exec_of[cols.fn[np.maximum(seen, 0)]]
    above_leaf = leaf + 1
    holds = own_leaf & (above_leaf < cols.start[1:])
    nearest = np.full(len(centre), -1, dtype=np.int64)
    if len(cols.fn):
        held = cols.fn[np.minimum(above_leaf, len(cols.fn) - 1)]
        nearest = np.where(holds & ~root[held], held, -1)  # (a thread's start is no help)
    collecting = cols.first_where(memory[sub_of]) >= 0  # (sub_of -1 reads the False)
    return Charges(BusyRows(cols.sid, cols.weight), centre, pos, subsystem, decider,
                   subsystems, sub_of, caller, cut, interpreted, nearest, collecting)


def _callers_text(ctx: Context, ch: Charges, rows: np.ndarray,
                  caller: np.ndarray | None = None) -> tuple[str, list[dict]]:
    """' under A, B' from the application frames above these rows' centres (or
    `caller`, per row of `rows`), or what is known when the stacks do not hold them."""
    w = ch.busy.weight[rows]
    caller = ch.caller[rows] if caller is None else caller
    known = caller >= 0
    callers = []
    if known.any():
        sums = np.bincount(caller[known], weights=w[known])
        order = np.argsort(-sums, kind="stable")[:3]
        callers = [ctx.function_row(int(f), int(round(sums[f])))
                   for f in order if sums[f] > 0]
    cut = float(w[ch.cut[rows]].sum())
    total = float(w.sum())
    if callers and cut < total / 2:
        return f", under {', '.join(c['name'] for c in callers[:2])}", callers
    if cut >= total / 2:
        held = ch.nearest[rows]
        near = _ranked(ctx, held, w, 1) if (held >= 0).any() else []
        # (the frame the stack holds above a leaf whose caller it lost: not the caller,
        # said as what it is)
        nearest = "" if not near or near[0]["samples"] < total / 4 else (
            f"; the nearest frame the stacks hold above it is {near[0]['name']}" + (
                f" (in {pct(near[0]['samples'] / total)} of them)"
                if near[0]["samples"] < total * 0.95 else ""))
        return ("; its callers are not in the stacks (the unwinder stopped in code "
                "without frame pointers: record with --call-graph dwarf to see them)"
                + nearest, callers)
    return "", callers


def _top_functions(ctx: Context, ch: Charges, rows: np.ndarray, n: int = 3) -> list[dict]:
    return _ranked(ctx, ch.centre[rows], ch.busy.weight[rows], n)


def _ranked(ctx: Context, fids: np.ndarray, weights: np.ndarray, n: int) -> list[dict]:
    """The n functions with the most weight (ties by id), as evidence rows."""
    ok = fids >= 0
    if not ok.any():
        return []
    sums = np.bincount(fids[ok], weights=weights[ok])
    order = np.argsort(-sums, kind="stable")[:n]
    return [ctx.function_row(int(f), int(round(sums[f]))) for f in order if sums[f] > 0]


def runtime_overhead(ctx: Context, t: dict) -> list[Finding]:
    """A language runtime (or a compiler linked into the program) doing something other
    than running the program, per subsystem, when it holds a large share."""
    ch = charges(ctx)
    total = ch.busy.total
    if not total or not ch.subsystems:
        return []
    ok = ch.subsystem >= 0
    sums = np.bincount(ch.subsystem[ok], weights=ch.busy.weight[ok],
                       minlength=len(ch.subsystems))
    app_fn = np.frombuffer(ctx.app.marks(), dtype=np.uint8).astype(bool)
    out = []
    for i in np.argsort(-sums, kind="stable"):
        samples = float(sums[i])
        if not samples:
            break
        lo, hi = wilson(samples, total)
        rt, sub = ch.subsystems[i]
        # work done once and kept (runtimes.Subsystem.steady) is repeated from a share
        # far below what other work may need
        floor = min(t["name"], sub.steady) if sub.steady else t["name"]
        if lo < floor:
            continue
        severity = severity_of(lo, t) if sub.kind != "locks" else severity_of(
            lo, {"medium": t["lock_medium"], "high": t["lock_high"]})
        if sub.steady and lo >= sub.steady and severity == "low":
            severity = "medium"
        # matching regular expressions is often the work itself (validating, parsing
        # logs): a fault only when it holds most of the CPU (a pattern backtracking),
        # not at a third of it, as a validation job's matching does
        if sub.kind == "regex" and lo < t["high"]:
            severity = "low"
        rows = np.flatnonzero(ch.subsystem == i)
        share = samples / total
        funcs = _ranked(ctx, ch.decider[rows], ch.busy.weight[rows], 3)
        # the C library's own work (strlen) is charged to the application frame that
        # called it: that frame is the subsystem's caller, not work under it
        centre = ch.centre[rows]
        safe = np.maximum(centre, 0)
        app_centre = (centre >= 0) & app_fn[safe] & (ch.sub_of[safe] < 0)
        centres = [f for f in _ranked(ctx, np.where(app_centre, -1, centre),
                                      ch.busy.weight[rows], 4)
                   if f["id"] not in {g["id"] for g in funcs}][:3]
        under, callers = _callers_text(ctx, ch, rows,
                                       np.where(app_centre, centre, ch.caller[rows]))
        cpus = ctx.cpus(int(samples))
        what = runtimes.KIND_TEXT[sub.kind]
        inner = f" (and under them {', '.join(c['name'] for c in centres)})" \
            if centres else ""
        # (a function named for loading is the program's, whatever file holds it)
        title = (f"Loading done again under load: {funcs[0]['name']} takes {pct(share)}"
                 if sub is runtimes.LOADING_BY_NAME and funcs else
                 f"{_cap(rt.name)} spends {pct(share)} on {sub.name}")
        out.append(Finding(
            "runtime-overhead", title,
            severity, "high", share, int(samples),
            f"{pct(share)} of the busy samples{cpus_text(cpus)} (95% interval "
            f"{pct(lo)}-{pct(hi)}) are {rt.name} {what}: "
            f"{', '.join(f['name'] for f in funcs)}{inner}{under}.",
            sub.why or (f"This is {rt.name}'s own work ({what}), not the program's: it "
                        f"costs whatever the program makes it do."),
            sub.fix or (f"Find which application code makes {rt.name} do this (the "
                        f"callers above), and do less of it per unit of work."),
            cpus=cpus,
            evidence={"runtime": rt.name, "subsystem": sub.name, "kind": sub.kind,
                      "functions": funcs + centres, "callers": callers,
                      "interval": [round(lo, 4), round(hi, 4)]},
            focus=focus_of(callers or funcs)))
    return out


def collector_stacks(ctx: Context) -> frozenset[int]:
    """The busy stacks with a frame of a runtime's memory management (its garbage
    collector, its allocator): a collector's parallel workers waiting for each other at
    the end of a phase (HotSpot's SpinPause under G1ParEvacuateFollowersClosure) spin
    as part of the collection, which runtime-overhead counts, not as threads that
    spin instead of waiting."""
    def build() -> frozenset[int]:
        ch = charges(ctx)
        return frozenset(ch.busy.sid[ch.collecting].tolist())
    return ctx.memo("collector_stacks", build)


def hot_spots(ctx: Context, t: dict) -> list[Finding]:
    """Cost centres no subsystem claims: a function, or a library's code as a whole,
    holding a large share of the busy samples."""
    ch = charges(ctx)
    total = ch.busy.total
    if not total:
        return []
    free = (ch.subsystem < 0) & (ch.centre >= 0)
    rows_all = np.flatnonzero(free)
    if not len(rows_all):
        return []
    p = ctx.profile
    w = ch.busy.weight
    by_fn = np.bincount(ch.centre[rows_all], weights=w[rows_all], minlength=len(p.functions))
    fmap = np.frombuffer(ctx.function_columns()[1], dtype=np.int32)
    by_map = np.bincount(fmap[ch.centre[rows_all]], weights=w[rows_all],
                         minlength=len(p.mappings))
    out: list[Finding] = []
    named_maps: set[int] = set()
    # a library file whose code, named or not, dominates (no one function of it does)
    for mid in np.argsort(-by_map, kind="stable")[:3]:
        m = p.mappings[int(mid)]
        samples = float(by_map[mid])
        lo, hi = wilson(samples, total)
        if lo < t["name"] or not _is_library(m):
            continue
        rows = rows_all[fmap[ch.centre[rows_all]] == mid]
        funcs = _top_functions(ctx, ch, rows, 5)
        if funcs and funcs[0]["samples"] >= samples / 2 and p.functions[
                funcs[0]["id"]].resolved:
            continue  # one of its functions is the hot spot: named below
        named_maps.add(int(mid))
        out.append(_library_finding(ctx, ch, m, rows, samples, total, funcs, t))
    # single functions
    for f in np.argsort(-by_fn, kind="stable")[:5]:
        samples = float(by_fn[f])
        lo, hi = wilson(samples, total)
        if lo < t["name"]:
            break
        fn = p.functions[int(f)]
        if fn.mapping_id in named_maps:
            continue
        rows = rows_all[ch.centre[rows_all] == f]
        out.append(_function_finding(ctx, ch, int(f), rows, samples, total, t))
    return out


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _is_library(m) -> bool:
    """A shared object that is not the C runtime and not the kernel: code a program
    calls, whose domination says something about how the program uses it."""
    return m.kind != KERNEL and bool(_SHARED_OBJECT.search(m.basename)) and \
        not knowledge.is_c_library(m.path)


def _library_finding(ctx: Context, ch: Charges, m, rows, samples, total, funcs,
                     t: dict) -> Finding:
    lo, hi = wilson(samples, total)
    share = samples / total
    cpus = ctx.cpus(int(samples))
    under, callers = _callers_text(ctx, ch, rows)
    rt = runtimes.runtime_of_file(m.path)
    ident = library_identity(m.path)
    unnamed = sum(f["samples"] for f in funcs if not ctx.profile.functions[f["id"]].resolved)
    names = ", ".join(f["name"] for f in funcs[:3])
    # a runtime's own file (libpython, libruby) running the program is the work; a
    # library nothing describes dominating another program is the place to look; the
    # file of a runtime whose program runs elsewhere (libjvm: the program is JIT code) is
    # the runtime's services working for the program, judged as its undescribed functions
    services = rt is not None and not rt.runs_program
    severity = ("medium" if lo >= t["medium"] else "low") if services else \
        "info" if rt is not None else "low"
    why = ("One library doing most of a program's work sets the program's speed: the work "
           "it does per request, and how often the program asks for it, is where the time "
           "can be won.")
    if services:
        why = (f"The program runs as code {rt.name} generates (interpreted or "
               f"JIT-compiled), not in {ident}: time in this file is {rt.name}'s services "
               f"working for the program (its string table, class data, barriers, "
               f"runtime calls), as much as the program makes it do.")
    return Finding(
        "hot-spot", f"{pct(share)} of the CPU in {ident}" + (f" ({rt.name})" if rt else ""),
        severity, "medium", share, int(samples),
        f"{pct(share)} of the busy samples{cpus_text(cpus)} (95% interval {pct(lo)}-"
        f"{pct(hi)}) run in {m.path}, spread over its functions ({names}"
        + (f"; {pct(unnamed / total)} in code without symbols" if unnamed else "") +
        f"){under}.",
        why,
        f"Look at why the program calls {ident} this much: the callers above are the "
        f"place to start (fewer calls, smaller inputs, or a cheaper way to get the same "
        f"result)." + ("" if not unnamed else " Upload its debug file to see which of "
                                              "its functions run."),
        cpus=cpus,
        evidence={"dso": m.path, "functions": funcs, "callers": callers,
                  "interval": [round(lo, 4), round(hi, 4)]},
        focus=focus_of(callers or funcs))


def _function_finding(ctx: Context, ch: Charges, f: int, rows, samples, total,
                      t: dict) -> Finding:
    p = ctx.profile
    fn = p.functions[f]
    m = p.mappings[fn.mapping_id]
    lo, hi = wilson(samples, total)
    share = samples / total
    cpus = ctx.cpus(int(samples))
    under, callers = _callers_text(ctx, ch, rows)
    rt, sub = runtimes.subsystem_of(fn.name, m.path, jit=m.kind == JIT, resolved=fn.resolved)
    own = ctx.app.get(f, False) or (sub is not None and sub.kind == "execution")
    in_runtime = rt is not None and not own
    library = _is_library(m) and not own
    if own:
        severity = "info"
    elif not fn.resolved:
        severity = "low"
    elif in_runtime and not knowledge.is_c_library(m.path):
        # (a library's function doing most of the work may be its job; the C library's,
        # working for a caller the stack lost, as a sort's memcmp, is said where the
        # time goes: its own subsystems in runtimes.py say when it is a fault)
        severity = "medium" if lo >= t["medium"] else "low"
    else:
        severity = "low"
    where = (f"{rt.name}'s own code" if in_runtime else
             f"{library_identity(m.path)}" if library else
             "the language's standard library" if knowledge.is_language_runtime(fn.name)
             else "the program's own code")
    if own:
        why = ("This is the program's own work (or its runtime running it): it is where "
               "the time goes, not a fault by itself. Whether it is too much is for a "
               "comparison with a faster build, or the CPU per unit of work, to say.")
        fix = (f"If the throughput must grow, {fn.name} is where to look: do it fewer "
               f"times per request, on less data, or with a cheaper algorithm.")
    else:
        why = (f"{fn.name} is not the program's code but {where}: one such function "
               f"holding this share says the program makes it work far more than usual.")
        fix = (f"Find why the program calls it this much (the callers above) and do "
               f"less of it per unit of work.")
    return Finding(
        "hot-spot", f"{pct(share)} of the CPU in {fn.name}" + (
            f" ({rt.name})" if in_runtime else ""),
        severity, "medium", share, int(samples),
        f"{fn.name} ({where}, {m.path}) and the C runtime and kernel work it asks for "
        f"take {pct(share)} of the busy samples{cpus_text(cpus)} (95% interval "
        f"{pct(lo)}-{pct(hi)}){under}.",
        why, fix, cpus=cpus,
        evidence={"dso": m.path, "functions": [ctx.function_row(f, int(samples))],
                  "callers": callers, "own_work": own,
                  "interval": [round(lo, 4), round(hi, 4)]},
        focus=focus_of([ctx.function_row(f, int(samples))]))
