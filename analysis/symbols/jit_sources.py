"""Which uploaded JIT symbol file (perf-PID.map, jit-PID.dump) names which JIT mapping.

A capture calls the anonymous executable memory of process PID `/tmp/perf-PID.map`, as
perf does; the files users have rarely carry that exact name: `jcmd` output renamed
`bad.perf-21082.map`, a map written inside a container by PID 1 for a process the host
knows as 48213, a jitdump whose header holds the JIT's own view of its pid. So a file is
matched to the mapping of the PID it says it belongs to (a jitdump's header, else a
`perf-PID.map` or `jit-PID.dump` in its name) when the capture has that PID; the others
go to the JIT mappings no file claims by PID, each to the mapping whose sampled
addresses it names most. A file that names none of them names nothing: a map of another
process names addresses by chance.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .symindex import SymbolIndex

_NAME_PID = re.compile(r"(?:^|[^0-9A-Za-z])(?:perf|jit)-(\d{1,10})\.(?:map|dump)\b")
_MAPPING_PID = re.compile(r"^/tmp/perf-(\d+)\.map$")
#: sampled addresses a file is scored on, at most (spread over the mapping's)
SCORED_ADDRESSES = 4096


@dataclass
class JitSource:
    origin: str  # what the user called it
    kind: str  # "perf map" | "jitdump": the coverage table's `from`
    pid: int | None  # the process it says it is of
    index: SymbolIndex


def pid_in_name(origin: str) -> int | None:
    """`bundle.zip:tmp/bad.perf-21082.map` -> 21082: the last component's name only."""
    base = origin.rsplit(":", 1)[-1].replace("\\", "/").rsplit("/", 1)[-1]
    m = _NAME_PID.search(base)
    return int(m.group(1)) if m else None


def mapping_pid(path: str) -> int | None:
    m = _MAPPING_PID.match(path)
    return int(m.group(1)) if m else None


def choose(sources: list[JitSource], pid: int | None, addresses: list[int],
           claimed: set[int]) -> list[JitSource]:
    """The files that name the JIT mapping of process `pid` whose sampled code is at
    `addresses`, best first. `claimed`: the PIDs of every JIT mapping of the capture (a
    file naming one of those is that mapping's, never another's)."""
    if pid is not None:
        own = [s for s in sources if s.pid == pid]
        if own:
            return own
    step = max(1, len(addresses) // SCORED_ADDRESSES)
    addresses = addresses[::step]
    scored = []
    for s in sources:
        if s.pid is not None and s.pid in claimed:
            continue
        named = sum(1 for a in addresses if s.index.lookup(a) is not None)
        if named:
            scored.append((named, s))
    scored.sort(key=lambda ns: -ns[0])  # (stable: upload order breaks ties)
    return [s for _, s in scored]


def name(sources: list[JitSource], address: int) -> str | None:
    for s in sources:
        found = s.index.lookup(address)
        if found:
            return found
    return None
