"""Where inside a function the time goes: its source lines by samples.

Every location symbolized from DWARF carries (file, line) for each of its frames
(analysis.symbols.lines). A function's line is *self* when the sample's leaf frame is
that function at that line (the CPU was executing it), and *total* once per sample when
the function is anywhere on the stack at that line (a call made from it, or code
inlined there). perf annotate reads the same line tables; this is its table, without the
disassembly.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..profile import Profile


@dataclass(frozen=True)
class LineCost:
    file: str
    line: int
    self: int
    total: int


def hot_lines(profile: Profile, weights: dict[int, int], function_id: int
              ) -> list[LineCost]:
    """The lines of `function_id` in the selection's stacks, hottest first."""
    self_w: Counter = Counter()
    total_w: Counter = Counter()
    locs = profile.locations
    for sid, w in weights.items():
        stack = profile.stacks[sid]
        if not stack:
            continue
        leaf = locs[stack[0]]  # the sample's own frame: its innermost line is self
        if leaf.lines and leaf.functions[0] == function_id:
            self_w[leaf.lines[0]] += w
        seen = set()  # each line once per sample, however often the stack passes it
        for lid in stack:
            loc = locs[lid]
            for fid, at in zip(loc.functions, loc.lines):
                if fid == function_id and at not in seen:
                    seen.add(at)
                    total_w[at] += w
    rows = [LineCost(f, n, self_w[(f, n)], t) for (f, n), t in total_w.items()]
    rows.sort(key=lambda r: (-r.self, -r.total, r.file, r.line))
    return rows


def source_files(profile: Profile) -> dict[int, str]:
    """function id -> the file most of its located frames are in (what the tables show
    beside its name); functions no debug info placed are absent. Computed once."""
    def compute() -> dict[int, str]:
        counts: dict[int, Counter] = {}
        for loc in profile.locations:
            for fid, (file, _) in zip(loc.functions, loc.lines):
                counts.setdefault(fid, Counter())[file] += 1
        return {fid: c.most_common(1)[0][0] for fid, c in counts.items()}
    return profile.memo(("source-files",), compute)
