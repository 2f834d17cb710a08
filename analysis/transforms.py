"""Call-tree transforms, as the Firefox Profiler offers them: rewrite a profile's stacks
so the views (flame graph, call trees, top functions, sandwich, hot lines) show the
program without the frames in the way.

- merge a function (`mf`): its frames leave every stack; its self time goes to its caller;
- drop a function (`df`): the samples whose stack contains it leave the profile (what
  `perf report --parent F -x` keeps is what is dropped);
- collapse a library (`cr`): consecutive frames of the function's DSO become one frame
  named after the DSO (its self is `perf report --sort dso`'s);
- collapse recursion (`rec`): a function calling itself directly is one frame (A→A→A
  becomes A, the innermost frame kept, where the sampled line is).

A transform names a function id of the profile it applies to; transforms stack, each
applied to what the ones before it made (a collapsed library's frame is a function of
its own, which a later transform may name). Every result is a Profile over the same
sample rows (dropping removes some), with the function ids of the profile before it
kept, so a URL's focus and zoom keep meaning what they meant.

Memory: a profile keeps the last few stacks of transforms asked of it (KEEP), each as
its final profile and the names its chips say, never the profiles between (each step is
freed as the next is made); together they hold at most about the profile's own size
(KEEP_BYTES_MIN at least). A drop copies the sample columns it keeps; the other
transforms share them. The web process counts what is kept against its cache of
profiles (perfweb/captures/services/profiles.py, via kept_bytes and forget).
"""
from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from itertools import chain as chain_iter, compress, filterfalse, groupby
from operator import and_, not_

from .errors import AnalysisError
from .location_table import functions_by_id, mapping_ids, with_function
from .profile import Function, Location, Profile
from .profile_check import checked
from .profile_size import approx_bytes, derived_bytes
from .tree_index import held_bytes
from .stack_table import frame_count

MERGE, DROP, COLLAPSE_LIB, COLLAPSE_REC = "mf", "df", "cr", "rec"
#: what each transform says in a sentence (the page's chips)
VERBS = {MERGE: "merge", DROP: "drop", COLLAPSE_LIB: "collapse", COLLAPSE_REC: "collapse recursion"}
#: transforms one view stacks at most: each one is a pass over the stacks
MAX_TRANSFORMS = 12
#: frames (every stack's, and the profile's locations) the passes of one chain may read
#: together: fewer transforms at once on a larger capture, so a chain that no request
#: made before (another web process, or one evicted) costs a worker a few seconds at
#: most whatever the capture (a 158k-sample system-wide capture, 1.27 million: twelve
#: hot merges, drops, recursion or library collapses 2.1-2.6 s on this project's 2-CPU
#: machine with its load average at 7)
WORK_BUDGET = 16_000_000
#: transformed profiles kept per profile (a few stacks of transforms tried in turn)
KEEP = 4
#: the bytes those may hold together: the profile's own estimated size, and at least
#: this (a small profile's few derived ones all fit)
KEEP_BYTES_MIN = 8 << 20
_LOCK = threading.Lock()  # the kept results, which threads serving requests share
_COLUMNS = ("s_stack", "s_count", "s_period", "s_pid", "s_tid", "s_cpu", "s_time",
            "s_event", "s_comm")


@dataclass(frozen=True)
class Transform:
    kind: str  # MERGE, DROP, COLLAPSE_LIB or COLLAPSE_REC
    function: int  # a function id of the profile the transform applies to

    def __str__(self) -> str:
        return f"{self.kind}-{self.function}"


def parse(text: str | None) -> tuple[Transform, ...]:
    """`mf-12.df-40.cr-3.rec-7` (the page's `tf` parameter), in the order applied; a
    transform repeated right after itself is one. AnalysisError for anything else."""
    if not text:
        return ()
    out: list[Transform] = []
    for item in text.split("."):
        kind, _, fid = item.partition("-")
        if kind not in VERBS or not fid.isdigit() or len(fid) > 9:
            raise AnalysisError(f"Transform {item[:40]!r} is not one of mf-, df-, cr- or "
                                f"rec- and a function id.")
        t = Transform(kind, int(fid))
        if not out or out[-1] != t:
            out.append(t)
    if len(out) > MAX_TRANSFORMS:
        raise AnalysisError(f"At most {MAX_TRANSFORMS} transforms at once.")
    return tuple(out)


def unparse(transforms) -> str:
    return ".".join(map(str, transforms))


@dataclass(frozen=True)
class Applied:
    """A profile after a stack of transforms, with the names its chips say (taken from
    the profile before each transform as it was applied: those are not kept)."""
    profile: Profile
    names: tuple[str, ...]  # per transform, the function's (for `cr` the DSO's) name
    size: int = 0  # bytes of its own (profile_size.derived_bytes), what keeping it costs


class _Kept(OrderedDict):
    """transforms -> Applied, least recently used first, within `limit` bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def held(self) -> int:
        # a kept profile's tree index is built by the first flame graph asked of it
        return sum(a.size + held_bytes(a.profile) for a in self.values())

    def fit(self) -> None:
        while len(self) > KEEP or (self and self.held() > self.limit):
            self.popitem(last=False)


def apply(profile: Profile, transforms: tuple[Transform, ...]) -> Profile:
    """The profile after `transforms`; `profile` itself for none. The last few results
    are kept with the profile, and a stack of transforms that extends a kept one (the
    page adds one at a time) starts from it."""
    return chain(profile, transforms).profile


def normalized(transforms: tuple[Transform, ...]) -> tuple[Transform, ...]:
    """The same transforms in the order results are kept under: merges, drops and
    recursion collapses next to others of their kind in any order mean the same (a
    merged function's frames are gone whichever goes first; a dropped sample had any of
    the functions), so such runs are sorted, each transform once in its run. A
    collapsed library makes a function whose id later transforms name: it stays put."""
    out: list[Transform] = []
    run: list[Transform] = []
    for t in transforms + (None,):
        if run and (t is None or t.kind != run[0].kind or t.kind == COLLAPSE_LIB):
            out.extend(sorted(set(run), key=lambda r: r.function))
            run = []
        if t is not None:
            run.append(t)
    return tuple(out)


def frames(profile: Profile) -> int:
    """What one transform's pass reads: the frames of every stack, and the locations."""
    return profile.memo(("frames",), lambda: frame_count(profile.stacks) +
                        len(profile.locations))


def most_transforms(profile: Profile) -> int:
    """The transforms one chain may hold on `profile` (WORK_BUDGET)."""
    return max(1, min(MAX_TRANSFORMS, WORK_BUDGET // max(1, frames(profile))))


def chain(profile: Profile, transforms: tuple[Transform, ...]) -> Applied:
    """`profile` after `transforms`, and what its chips say (describe); AnalysisError
    for more transforms than the profile's size allows (most_transforms), whether the
    result is kept or not, so the answer does not depend on which process serves it."""
    if not transforms:
        return Applied(profile, ())
    most = most_transforms(profile)
    if len(transforms) > most:
        raise AnalysisError(
            f"At most {most} transforms at once on this capture: its stacks hold "
            f"{frames(profile):,} frames, and each transform is a pass over them.")
    key = normalized(transforms)
    kept: _Kept = profile.memo(("transforms",), lambda: _Kept(
        max(approx_bytes(profile), KEEP_BYTES_MIN)))
    start = Applied(profile, ())
    with _LOCK:
        for n in range(len(key), 0, -1):  # the longest prefix kept
            hit = kept.get(key[:n])
            if hit is not None:
                kept.move_to_end(key[:n])
                start = hit
                break
    if len(start.names) == len(key):
        return _as_asked(start, key, transforms)
    p, names = start.profile, list(start.names)
    for t in key[len(names):]:
        names.append(_name(p, t))
        p = _one(p, t)  # (the step before is dropped here, unless it is a kept one)
    out = Applied(p, tuple(names), derived_bytes(profile, p))
    with _LOCK:
        kept[key] = out
        kept.move_to_end(key)
        kept.fit()
    return _as_asked(out, key, transforms)


def _as_asked(applied: Applied, key: tuple[Transform, ...],
              transforms: tuple[Transform, ...]) -> Applied:
    """`applied` (made for `key`) with its names in the order `transforms` gives them."""
    if key == transforms:
        return applied
    name = dict(zip(key, applied.names))
    return Applied(applied.profile, tuple(name[t] for t in transforms), applied.size)


def kept_bytes(profile: Profile) -> int:
    """Estimated bytes of the transformed profiles kept with `profile`."""
    kept = _kept(profile)
    if kept is None:
        return 0
    with _LOCK:
        return kept.held()


def forget(profile: Profile) -> int:
    """Let go of the transformed profiles kept with `profile`; the bytes they held."""
    kept = _kept(profile)
    if kept is None:
        return 0
    with _LOCK:
        held = kept.held()
        kept.clear()
    return held


def _kept(profile: Profile) -> _Kept | None:
    entry = profile._cache.get(("transforms",))  # memo's (stamp, value), not made here
    return None if entry is None else entry[1]


def describe(applied: Applied, transforms: tuple[Transform, ...]) -> list[dict]:
    """Per transform, what the page's chip says: {"t": "mf-12", "kind", "verb", "n": the
    function's (or for `cr` the DSO's) name}; `applied` from chain()."""
    return [{"t": str(t), "kind": t.kind, "verb": VERBS[t.kind], "n": name}
            for t, name in zip(transforms, applied.names)]


def _name(p: Profile, t: Transform) -> str:
    """The name `t`'s chip says, in `p`, the profile `t` applies to."""
    if not 0 <= t.function < len(p.functions):
        raise AnalysisError(f"Transform {t}: no such function.")
    fn = p.functions[t.function]
    return p.mappings[fn.mapping_id].basename if t.kind == COLLAPSE_LIB else fn.name


def _one(p: Profile, t: Transform) -> Profile:
    return checked(_transformed(p, t), f"transform {t}")


def _transformed(p: Profile, t: Transform) -> Profile:
    if not 0 <= t.function < len(p.functions):
        raise AnalysisError(f"Transform {t}: no such function.")
    if t.kind == DROP:
        return _drop(p, t.function)
    if t.kind == COLLAPSE_LIB:
        return _collapse_lib(p, p.functions[t.function].mapping_id)
    f = t.function
    if t.kind == MERGE:
        def keep(funcs: list[int], k: int) -> bool:
            return funcs[k] != f

        def fast(stack: tuple[int, ...], alone: set[int]) -> tuple[int, ...]:
            return tuple(filterfalse(alone.__contains__, stack))
    else:  # COLLAPSE_REC: a frame of f whose callee (the frame before, leaf first) is f
        def keep(funcs: list[int], k: int) -> bool:
            return not (k and funcs[k] == f and funcs[k - 1] == f)

        def fast(stack: tuple[int, ...], alone: set[int]) -> tuple[int, ...]:
            of_f = list(map(alone.__contains__, stack))
            return tuple(compress(stack, chain_iter((True,), map(not_, map(
                and_, of_f[1:], of_f)))))
    return _filter_frames(p, f, keep, fast)


def _derived(p: Profile, stacks: list[tuple[int, ...]], rows: bytes | None = None) -> Profile:
    """A profile over `p`'s tables with `stacks` in place of its stacks (the same ids),
    and its sample rows, all of them or those `rows` marks. Functions and locations are
    copied lists (a transform appends to them), as are the other tables (small); the
    sample columns are shared when every row is kept (nothing appends to them). The
    result is only read (the views): its interning dicts are not copied (they cost
    about 100 bytes a function, per profile kept) but built if something interns."""
    v = Profile(p.meta.format)
    v._stack_ix = v._function_ix = None
    v.meta, v.notes, v.approximate, v.coverage = p.meta, p.notes, p.approximate, p.coverage
    v.mappings, v.events, v.strings = list(p.mappings), list(p.events), list(p.strings)
    # (a LocationTable's copy shares its columns and appends to a list of its own)
    v.functions, v.locations, v.stacks = list(p.functions), p.locations.copy(), stacks
    for c in _COLUMNS:
        if c == "s_count" and not p.has_count_column():
            v.s_count = None  # (every row counts 1: a view's rows too)
            continue
        if c == "s_period" and not p.has_period_column():
            v.set_period_value(p.period_value())  # (one period: a view's rows have it)
            continue
        col = getattr(p, c)
        setattr(v, c, col if rows is None else array(col.typecode, compress(col, rows)))
    # the last sample may be cut short (the input ended inside it), if it is still here
    v.truncated_tail = p.truncated_tail and (rows is None or not rows or rows[-1] == 1)
    return v


def _with(p: Profile, fid: int) -> set[int]:
    """Location ids with `fid` among their (inline) functions."""
    return with_function(p.locations, fid)


def _drop(p: Profile, fid: int) -> Profile:
    hit = _with(p, fid)
    dead = bytearray(len(p.stacks))
    for sid, stack in enumerate(p.stacks):
        if not hit.isdisjoint(stack):
            dead[sid] = 1
    if not any(dead):
        return _derived(p, p.stacks)
    alive = bytes(1 - d for d in dead)
    rows = bytes(map(alive.__getitem__, p.s_stack))
    return _derived(p, p.stacks, rows)


def _filter_frames(p: Profile, fid: int, keep, fast=None) -> Profile:
    """Stacks without the frames `keep(funcs, k)` refuses, `funcs` being the stack's
    functions leaf first (inline frames expanded) and k a frame's index in it. Only the
    stacks through `fid` are looked at; a location losing some of its inline functions
    becomes a new location with the others (and their lines). A stack whose locations
    of `fid` hold it alone (no other function inlined there: most stacks) is filtered by
    `fast(stack, those locations)` in C loops instead (when given): the same frames go."""
    hit = _with(p, fid)
    stacks = p.stacks.copy()  # (a list, or a StackTable whose changes are its own)
    v = _derived(p, stacks)
    locs, loc_functions = p.locations, functions_by_id(p.locations)
    alone = {lid for lid in hit if len(loc_functions[lid]) == 1}
    mixed = hit - alone
    made: dict[tuple[int, tuple[int, ...]], int] = {}
    for sid, stack in enumerate(p.stacks):
        if hit.isdisjoint(stack):
            continue
        if fast is not None and mixed.isdisjoint(stack):
            stacks[sid] = fast(stack, alone)
            continue
        funcs = [g for loc in stack for g in loc_functions[loc]]
        out: list[int] = []
        k = 0
        for loc in stack:
            fns = loc_functions[loc]
            kept = tuple(i for i in range(len(fns)) if keep(funcs, k + i))
            k += len(fns)
            if len(kept) == len(fns):
                out.append(loc)
            elif kept:
                out.append(_part(v, locs[loc], kept, made))
        stacks[sid] = tuple(out)
    return v


def _part(v: Profile, loc: Location, kept: tuple[int, ...],
          made: dict[tuple[int, tuple[int, ...]], int]) -> int:
    """The location of `loc`'s inline functions at indexes `kept`, made once."""
    key = (loc.id, kept)
    lid = made.get(key)
    if lid is None:
        lid = made[key] = len(v.locations)
        lines = tuple(loc.lines[i] for i in kept) if loc.lines else ()
        v.locations.append(Location(lid, loc.mapping_id, loc.address,
                                    tuple(loc.functions[i] for i in kept), loc.dso_offset,
                                    loc.symbol_offset, loc.is_return, lines))
    return lid


def _collapse_lib(p: Profile, mapping_id: int) -> Profile:
    """Runs of frames in `mapping_id` become one frame: a function named after the DSO
    (a new id, past the profile's), at one location of its own."""
    stacks = p.stacks.copy()  # (a list, or a StackTable whose changes are its own)
    v = _derived(p, stacks)
    m = p.mappings[mapping_id]
    fid = len(v.functions)
    v.functions.append(Function(fid, m.basename, m.basename, mapping_id, True))
    lid = len(v.locations)
    v.locations.append(Location(lid, mapping_id, 0, (fid,)))
    inside = bytes(m == mapping_id for m in mapping_ids(p.locations))
    hit = {lid for lid, is_in in enumerate(inside) if is_in}
    for sid, stack in enumerate(p.stacks):
        if hit.isdisjoint(stack):
            continue
        out: list[int] = []
        for is_in, run in groupby(stack, inside.__getitem__):  # (a run at a time)
            if is_in:
                out.append(lid)
            else:
                out.extend(run)
        stacks[sid] = tuple(out)
    return v
