"""Folded stacks (`root;caller;leaf 42`), as written by stackcollapse-*.pl and inferno.

The count is the last space-separated field, so frame names may contain spaces. By the
FlameGraph convention the first frame is usually the process name; we cannot know that
for sure, so frames are imported as they are and the process stays unknown.
"""
from __future__ import annotations

import re

from ..errors import UnrecognizedFormat
from ..profile import Profile
from ..textio import Source, text_lines

NAME = "folded"

# the count is after the last space; frames may end in a space ("handler<void 42")
_LINE = re.compile(r"^(?P<stack>.+) (?P<count>\d+)$")
_ANNOTATION = re.compile(r"_\[([kjiw])\]$")


def sniff(head: str) -> bool:
    """Every line (but a possibly cut last one) is `text count`, starting at column 0."""
    lines = [ln for ln in head.splitlines()[:-1] or head.splitlines()
             if ln.strip() and not ln.startswith("#")][:200]
    return bool(lines) and all(_LINE.match(ln) and not ln[:1].isspace() for ln in lines)


def parse(source: Source) -> Profile:
    p = Profile(NAME)
    unknown = p.mapping("[unknown]")
    kernel = p.mapping("[kernel.kallsyms]")
    locs: dict[str, int] = {}
    stack_cache: dict[str, int] = {}
    event = p.event("")
    bad = 0
    for n, line in enumerate(text_lines(source), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _LINE.match(line.rstrip("\r"))
        if m is None:
            bad += 1
            if bad > 10 and bad * 2 > n:
                raise UnrecognizedFormat(f"line {n} is not `frame;frame;... count`")
            continue
        text = m.group("stack")
        sid = stack_cache.get(text)
        if sid is None:
            ids = []
            for frame in reversed(text.split(";")):  # leaf first
                loc = locs.get(frame)
                if loc is None:
                    name, mapping = frame, unknown
                    a = _ANNOTATION.search(frame)
                    if a is not None:
                        name = frame[:a.start()]
                        if a.group(1) == "k":
                            mapping = kernel
                    loc = p.add_location(mapping, 0, (p.function(name, mapping),))
                    locs[frame] = loc
                ids.append(loc)
            sid = p.stack(tuple(ids))
            stack_cache[text] = sid
        count = int(m.group("count"))
        p.add_sample(sid, count=count, event_id=event)
    if bad:
        p.notes.append(f"{bad} lines that are not folded stacks were skipped")
    return p

