"""Give every `--call-graph dwarf` sample its callers, with the binaries that ran.

Runs at the start of the symbolization pass, when the uploaded files are known: each
saved stack copy is walked (`walker.walk`) with the unwind table of the binary behind
each frame, matched to the capture's mappings the way names are (build-id first, see
`Symbolizer.plan`), and the callers found are appended to the sample's stack as return
addresses. Identical copies (same registers, same bytes, same maps) are walked once. The
copies are then dropped: from here on the stacks are ordinary stacks.
"""
from __future__ import annotations

from ..profile import Profile
from .cfi import ARCH_ALIASES, REGISTERS, CfiTable, image_base
from .user_stacks import DWARF_NOTE, MapRow
from .walker import JIT_PATHS, Module, Space, registers, walk


def unwind(p: Profile, plan_of, table_of) -> None:
    """`plan_of(mapping_id)` -> the symbolizer's plan for that DSO (its `runtime` is the
    binary that ran); `table_of(elf, arch)` -> its unwind table (cfi.table_for, within
    the file's budget) or None. The stacks are columns afterwards (the importer left
    them a list for this pass to add to)."""
    if p.user_stacks is None:
        return
    try:
        _unwind(p, plan_of, table_of)
    finally:
        p.drop_indexes()
        p.compact_stacks()


def _unwind(p: Profile, plan_of, table_of) -> None:
    us = p.user_stacks
    p.user_stacks = None
    if not len(us):
        return
    if DWARF_NOTE in p.notes:
        p.notes.remove(DWARF_NOTE)
    arch = ARCH_ALIASES.get(us.arch, us.arch)
    if arch not in REGISTERS:
        p.notes.append(f"recorded with --call-graph dwarf on {us.arch}: perfweb unwinds "
                       f"x86-64 and AArch64 stacks only, so only the user-space leaf of "
                       f"each stack is shown")
        return
    tables: dict[str, CfiTable | None] = {}
    modules: dict[tuple[str, str], Module | None] = {}
    without_binary: set[str] = set()  # DSOs a walk reached with no unwind table

    def module_of(row: MapRow) -> Module | None:
        key = (row[3], row[4])
        if key in modules:
            return modules[key]
        plan = plan_of(p.mapping(row[3], build_id=row[4]))
        elf = plan.runtime if plan is not None else None
        mod = None
        if elf is not None:
            if elf.path not in tables:
                tables[elf.path] = table_of(elf, arch)
            base = image_base(s.vaddr for s in elf.segments)
            vaddr_of = elf.vaddr_of

            def relative(file_offset: int, vaddr_of=vaddr_of, base=base) -> int | None:
                v = vaddr_of(file_offset)
                return None if v is None else v - base
            mod = (tables[elf.path], relative)
        if (mod is None or mod[0] is None) and not row[3].startswith(JIT_PATHS):
            without_binary.add(row[3])  # (JIT code has no binary: frame pointers there)
        modules[key] = mod
        return mod

    spaces = [Space(rows, module_of) for rows in us.spaces]
    locs = {(loc.mapping_id, loc.dso_offset, loc.is_return): loc.id
            for loc in p.locations if loc.dso_offset is not None}
    walked: dict[tuple, tuple[int, ...]] = {}
    at_of: list[dict[int, int]] = [{} for _ in spaces]  # per space: return address -> location
    unwound = deep = 0
    for k in range(len(us)):
        space = us.space[k]
        regs = registers(arch, us.regs_mask[k], us.regs[k])
        key = (space, us.regs[k], us.stacks[k])
        callers = walked.get(key)
        if callers is None:
            ras = walk(arch, regs, us.stacks[k], spaces[space])
            located = at_of[space]
            found = []
            for ra in ras:
                loc = located.get(ra)
                if loc is None:
                    loc = located[ra] = _location(p, spaces[space], ra, locs)
                found.append(loc)
            callers = walked[key] = tuple(found)
        if not callers:
            continue
        unwound += 1
        deep += len(callers) >= 3
        row = us.row[k]
        p.s_stack[row] = p.stack(p.stacks[p.s_stack[row]] + callers)
    text = (f"recorded with --call-graph dwarf: {unwound:,} of {len(us):,} user stacks "
            f"unwound from the binaries' call frame information ({deep:,} to 3 or more "
            f"callers)")
    if without_binary:
        names = ", ".join(sorted(d.rsplit("/", 1)[-1] for d in without_binary)[:5])
        more = len(without_binary) - 5
        text += (f"; stacks stop at {names}{f' and {more} more' if more > 0 else ''}: "
                 f"no binary of it with call frame information was given, so upload the "
                 f"binaries that ran (perf archive) for whole stacks")
    p.notes.append(text)


def _location(p: Profile, space: Space, ra: int, locs: dict) -> int:
    """The location of return address `ra`, shared with the importer's when it made one
    for the same DSO offset."""
    hit = space.find(ra - 1)
    if hit is None:
        mid = p.mapping("[unknown]")
        key = (mid, ra, True)
        offset = None
    else:
        row = hit[0]
        mid = p.mapping(row[3], build_id=row[4])
        offset = ra - row[0] + row[2]
        key = (mid, offset, True)
    loc = locs.get(key)
    if loc is None:
        loc = locs[key] = p.add_unnamed_location(mid, ra, offset, is_return=True)
    return loc
