"""Which well-known software (software.py) a capture, or a part of it, shows: what the
rules need to give the fix that fits that software rather than a generic one."""
from __future__ import annotations

from collections import Counter

from . import software
from .context import Context


def server_of(ctx: Context, stacks: dict[int, int]) -> software.Server | None:
    """The server or embedded database these stacks run in: by its functions or its
    code in the stacks themselves first, then by the code the same threads run
    elsewhere (frame-pointer stacks often stop at the C library), then by thread name."""
    score: Counter = Counter()
    for sid, w in stacks.items():
        for f in ctx.funcs[sid]:
            for s in software.SERVERS:
                how = software.server_matches(s, dso=ctx.dso(f), function=ctx.name(f))
                if how:
                    score[s.name] += w * (3 if how == "functions" else 2)
    if not score:
        for sid, w in ctx.same_threads(stacks).items():
            f = ctx.leaf(sid)
            if f is None:
                continue
            for s in software.SERVERS:
                if software.server_matches(s, dso=ctx.dso(f), function=ctx.name(f)):
                    score[s.name] += w
    if not score:
        for tid, w in ctx.threads(stacks).items():
            for s in software.SERVERS:
                if software.server_matches(s, comm=ctx.comm_of.get(tid, "")):
                    score[s.name] += w
    if not score:
        return None
    best = score.most_common(1)[0][0]
    return next(s for s in software.SERVERS if s.name == best)


def runtime_of(ctx: Context, stacks: dict[int, int]) -> software.Library | None:
    """The interpreter these stacks' threads run in, by the samples of its library."""
    score: Counter = Counter()
    leaves = ctx.interpreter_leaves()
    for sid, w in ctx.same_threads(stacks).items():
        if sid in leaves:
            score[leaves[sid][1].name] += w
    if not score:
        return None
    best = score.most_common(1)[0][0]
    return next(lib for lib in software.LIBRARIES if lib.name == best)


def who_runs(ctx: Context, stacks: dict[int, int]) -> str:
    """The threads of these stacks in words: "1 redis-server thread", "4 mariadbd
    threads"."""
    tids = [t for t in ctx.threads(stacks) if t >= 0]
    names = ctx.thread_names(tids)
    n = len(tids)
    return f"{n} {names[0] + ' ' if names else ''}thread{'s' if n != 1 else ''}"


def verb(subject: str, singular: str, plural: str) -> str:
    """"1 python3 thread uses" / "4 mariadbd threads use"."""
    return singular if subject.startswith("1 ") else plural
