"""Where a capture's busy time goes, by kind of work, and under which application frame.

A comparison judges a change by these shares: more CPU is not worse by itself (a fixed
server does more work and uses more CPU), but a larger share in lock waits, spinning or
commits to disk is time the work did not need. Each sample counts in one class, the
first of CLASSES its stack matches (a lock's slow path inside a commit counts as a lock
wait), so the shares add up to at most 1.

Blame: time in libraries and the kernel belongs to the application frame nearest to it
on the stack (the first frame, from the leaf, outside the C library, the language
runtime and the kernel), which is the code a person would change. Frame-pointer stacks
often lose the caller of a C library function (glibc has no frame pointers), so a stack
with no application frame is blamed on its thread's busiest application function.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from ..aggregate import stack_walks
from .context import APP, NO_THREADS, Context

#: (class, categories of knowledge.py any frame of the stack may have, categories of the
#: leaf frame only), in precedence. Waits inside a server's own locks and interpreter
#: locks (software.py) are lock waits; a pool runtime's spin loop is spinning only in
#: its own frames (inner_thread calling the GEMM kernel is work); commits (fsync) are
#: apart from writes and logging, their fixes differ.
CLASSES = (
    ("lock_wait", ("lock_slow", "server_wait", "interp_lock"), ()),
    ("lock", ("lock",), ()),
    # not epoll/poll: an event loop's wait is benign
    ("spin", ("runtime_spin", "yield"), ("spin_loop",)),
    ("commit_io", ("commit_io",), ()),
    ("writes", ("sync_io",), ()),
    ("scheduler", ("scheduler",), ()),
    ("allocator", ("allocator",), ()),
    ("copy", ("copy",), ()),
    ("interpreter", ("interpreter",), ()),
)
#: classes that are waiting or slow paths: their growth is a cause, their fall a fix
WASTE = ("lock_wait", "lock", "spin", "commit_io", "writes", "scheduler")
BLAME_TOP = 3


def time_in(ctx: Context) -> dict:
    """{"busy": samples outside the idle task, "classes": {class: {"share", "samples",
    "under": [{"name", "share"}]}}, "kernel": share of busy samples with a kernel leaf}.
    Shares are of the busy samples. (The stacks are classed in one pass,
    stack_walks.classify; blame walks only the stacks of a class.)"""
    thread_app = _threads_app_function(ctx)
    classes = [(ctx.bits(cats), ctx.bits(leaf_cats)) for _, cats, leaf_cats in CLASSES]
    busy, kernel, order, per_class = stack_walks.classify(
        ctx.weight_columns(), ctx.mask, ctx.leaf_mask, ctx.idle, ctx.kernel_leaf_stacks,
        classes)
    acc: Counter = Counter()
    under: dict[str, Counter] = {}
    # (no application code: no frame to blame, nor a thread's function)
    app = ctx.app.marks() if ctx.app.any() else None
    for k in order:  # (acc's keys in the order their first stack came: most_common's ties)
        cls, stacks = CLASSES[k][0], per_class[k]
        acc[cls] = sum(stacks.values())
        if app is None:
            continue
        # each stack's application function nearest to its leaf, if it has one
        blamed = stack_walks.first_marked(ctx.stack_funcs.sets, stacks, app)
        for sid, w in stacks.items():
            frame = blamed.get(sid)
            if frame is not None:
                under.setdefault(cls, Counter())[frame] += w
                continue
            for tid, n in ctx.thread_of.get(sid, NO_THREADS).items():
                if thread_app.get(tid) is not None:
                    under.setdefault(cls, Counter())[thread_app[tid]] += n
    total = busy or 1
    return {
        "busy": busy,
        "kernel": round(kernel / total, 4),
        "classes": {cls: {"samples": n, "share": round(n / total, 4),
                          "under": [{"name": ctx.name(f), "share": round(c / total, 4)}
                                    for f, c in under.get(cls, Counter()).most_common(
                                        BLAME_TOP)]}
                    for cls, n in acc.most_common()},
    }


def _threads_app_function(ctx: Context) -> dict[int, int]:
    """Each thread's application function on the most samples (any frame)."""
    per: defaultdict[int, Counter] = defaultdict(Counter)
    app_bit, mask = ctx.bit(APP), ctx.mask
    thread_of = ctx.thread_of
    for sid in thread_of.stacks():
        if not mask[sid] & app_bit:
            continue
        apps = {f for f in ctx.funcs[sid] if ctx.app.get(f, False)}
        for tid, n in thread_of[sid].items():
            c = per[tid]
            for f in apps:
                c[f] += n
    return {tid: c.most_common(1)[0][0] for tid, c in per.items() if c}
