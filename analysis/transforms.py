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
"""
from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from itertools import compress

from .errors import AnalysisError
from .profile import Function, Location, Profile

MERGE, DROP, COLLAPSE_LIB, COLLAPSE_REC = "mf", "df", "cr", "rec"
#: what each transform says in a sentence (the page's chips)
VERBS = {MERGE: "merge", DROP: "drop", COLLAPSE_LIB: "collapse", COLLAPSE_REC: "collapse recursion"}
#: transforms one view stacks at most: each one is a pass over the stacks
MAX_TRANSFORMS = 12
#: transformed profiles kept per profile (a few stacks of transforms tried in turn)
KEEP = 4
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


def apply(profile: Profile, transforms: tuple[Transform, ...]) -> Profile:
    """The profile after `transforms`; `profile` itself for none. The last few results
    are kept with the profile, and a stack of transforms that extends a kept one (the
    page adds one at a time) starts from it."""
    return chain(profile, transforms)[-1]


def chain(profile: Profile, transforms: tuple[Transform, ...]) -> list[Profile]:
    """[profile, after the first transform, after the second, ...]."""
    if not transforms:
        return [profile]
    kept: OrderedDict = profile.memo(("transforms",), OrderedDict)
    steps = [profile]
    with _LOCK:
        for n in range(len(transforms), 0, -1):  # the longest prefix kept
            hit = kept.get(transforms[:n])
            if hit is not None:
                kept.move_to_end(transforms[:n])
                steps = hit
                break
    for t in transforms[len(steps) - 1:]:
        steps = steps + [_one(steps[-1], t)]
    with _LOCK:
        kept[transforms] = steps
        while len(kept) > KEEP:
            kept.popitem(last=False)
    return steps


def describe(steps: list[Profile], transforms: tuple[Transform, ...]) -> list[dict]:
    """Per transform, what the page's chip says: {"t": "mf-12", "kind", "verb", "n": the
    function's (or for `cr` the DSO's) name}; `steps` from chain()."""
    out = []
    for t, before in zip(transforms, steps):
        fn = before.functions[t.function]
        name = before.mappings[fn.mapping_id].basename if t.kind == COLLAPSE_LIB else fn.name
        out.append({"t": str(t), "kind": t.kind, "verb": VERBS[t.kind], "n": name})
    return out


def _one(p: Profile, t: Transform) -> Profile:
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
    else:  # COLLAPSE_REC: a frame of f whose callee (the frame before, leaf first) is f
        def keep(funcs: list[int], k: int) -> bool:
            return not (k and funcs[k] == f and funcs[k - 1] == f)
    return _filter_frames(p, f, keep)


def _derived(p: Profile, stacks: list[tuple[int, ...]], rows: bytes | None = None) -> Profile:
    """A profile over `p`'s tables with `stacks` in place of its stacks (the same ids),
    and its sample rows, all of them or those `rows` marks. Functions and locations are
    copied lists (a transform appends to them), as are the other tables (small); the
    sample columns are shared when every row is kept (nothing appends to them)."""
    v = Profile(p.meta.format)
    v.meta, v.notes, v.approximate, v.coverage = p.meta, p.notes, p.approximate, p.coverage
    v.mappings, v.events, v.strings = list(p.mappings), list(p.events), list(p.strings)
    v.functions, v.locations, v.stacks = list(p.functions), list(p.locations), stacks
    v._mapping_ix, v._event_ix = dict(p._mapping_ix), dict(p._event_ix)
    v._string_ix, v._function_ix = dict(p._string_ix), dict(p._function_ix)
    for c in _COLUMNS:
        col = getattr(p, c)
        setattr(v, c, col if rows is None else array(col.typecode, compress(col, rows)))
    # the last sample may be cut short (the input ended inside it), if it is still here
    v.truncated_tail = p.truncated_tail and (rows is None or not rows or rows[-1] == 1)
    return v


def _with(p: Profile, fid: int) -> set[int]:
    """Location ids with `fid` among their (inline) functions."""
    return {loc.id for loc in p.locations if fid in loc.functions}


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


def _filter_frames(p: Profile, fid: int, keep) -> Profile:
    """Stacks without the frames `keep(funcs, k)` refuses, `funcs` being the stack's
    functions leaf first (inline frames expanded) and k a frame's index in it. Only the
    stacks through `fid` are looked at; a location losing some of its inline functions
    becomes a new location with the others (and their lines)."""
    hit = _with(p, fid)
    stacks = list(p.stacks)
    v = _derived(p, stacks)
    locs = p.locations
    made: dict[tuple[int, tuple[int, ...]], int] = {}
    for sid, stack in enumerate(p.stacks):
        if hit.isdisjoint(stack):
            continue
        funcs = [g for loc in stack for g in locs[loc].functions]
        out: list[int] = []
        k = 0
        for loc in stack:
            fns = locs[loc].functions
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
    stacks = list(p.stacks)
    v = _derived(p, stacks)
    m = p.mappings[mapping_id]
    fid = len(v.functions)
    v.functions.append(Function(fid, m.basename, m.basename, mapping_id, True))
    lid = len(v.locations)
    v.locations.append(Location(lid, mapping_id, 0, (fid,)))
    inside = bytes(loc.mapping_id == mapping_id for loc in p.locations)
    for sid, stack in enumerate(p.stacks):
        if not any(map(inside.__getitem__, stack)):
            continue
        out: list[int] = []
        for loc in stack:
            if not inside[loc]:
                out.append(loc)
            elif not out or out[-1] != lid:
                out.append(lid)
        stacks[sid] = tuple(out)
    return v
