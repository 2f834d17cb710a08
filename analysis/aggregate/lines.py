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

import numpy as np

from ..location_table import all_functions, all_lines, function_files
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
    functions, lines = all_functions(profile.locations), all_lines(profile.locations)
    for sid, w in weights.items():
        stack = profile.stacks[sid]
        if not stack:
            continue
        leaf = stack[0]  # the sample's own frame: its innermost line is self
        if lines[leaf] and functions[leaf][0] == function_id:
            self_w[lines[leaf][0]] += w
        seen = set()  # each line once per sample, however often the stack passes it
        for lid in stack:
            for fid, at in zip(functions[lid], lines[lid]):
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
        fids, files, names = function_files(profile.locations)
        if not fids.size:
            return {}
        # the (function, file) pairs, counted, each with its first position
        key = fids * len(names) + files
        order = np.argsort(key, kind="stable")
        k = key[order]
        start = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
        count = np.diff(np.append(start, len(k)))
        first = order[start]
        fid, file = k[start] // len(names), k[start] % len(names)
        # per function the most frequent file, the first met on a tie (Counter's
        # most_common), the functions in the order first met
        best = np.lexsort((first, -count, fid))
        lead = best[np.concatenate(([True], fid[best][1:] != fid[best][:-1]))]
        met = np.minimum.reduceat(first[best], np.flatnonzero(np.concatenate(
            ([True], fid[best][1:] != fid[best][:-1]))))
        rows = lead[np.argsort(met, kind="stable")]
        return dict(zip(fid[rows].tolist(), map(names.__getitem__, file[rows].tolist())))
    return profile.memo(("source-files",), compute)
