"""Folded stacks (`root;caller;leaf 42`), as written by stackcollapse-*.pl and inferno.

The count is the last space-separated field, so frame names may contain spaces. By the
FlameGraph convention the first frame is usually the process name; we cannot know that
for sure, so frames are imported as they are and the process stays unknown.
"""
from __future__ import annotations

import re

from ..errors import UnrecognizedFormat
from ..profile import Profile
from ..textio import HEAD_BYTES, Source, text_lines
from .deep_stacks import MAX_FRAMES, Cuts

NAME = "folded"

# the count is after the last space; frames may end in a space ("handler<void 42"); a
# count of more than 18 digits is past the sample column's int64: no such line
_LINE = re.compile(r"^(?P<stack>.+) (?P<count>\d{1,18})$")
_ANNOTATION = re.compile(r"_\[([kjiw])\]$")
#: stack texts up to this length are remembered (most lines repeat a stack seen before);
#: a longer one is parsed again rather than kept whole for the rest of the import
_CACHED_TEXT = 64 * 1024


def sniff(head: str) -> bool:
    """Every line (but a possibly cut last one) is `text count`, starting at column 0; or
    the head is all one line longer than itself: a deep stack, `frame;frame;...`."""
    if "\n" not in head.rstrip("\n") and len(head) >= HEAD_BYTES // 2:
        return ";" in head and not head[:1].isspace() and not head.startswith("#")
    lines = [ln for ln in head.splitlines()[:-1] or head.splitlines()
             if ln.strip() and not ln.startswith("#")][:200]
    return bool(lines) and all(_LINE.match(ln) and not ln[:1].isspace() for ln in lines)


def _leaf_first(text: str, cut: list[int]):
    """The frames of `text` leaf first, at most MAX_FRAMES of them; `cut` gets how many
    more there are on the root side. A long stack is walked from its end one frame at a
    time instead of split whole: 2,000,000 frames would be as many strings at once."""
    if len(text) <= _CACHED_TEXT:
        yield from reversed(text.split(";"))
        return
    end = len(text)
    for _ in range(MAX_FRAMES):
        start = text.rfind(";", 0, end) + 1
        yield text[start:end]
        if start == 0:
            return
        end = start - 1
    cut.append(text.count(";", 0, end) + 1)


def parse(source: Source) -> Profile:
    p = Profile(NAME)
    unknown = p.mapping("[unknown]")
    kernel = p.mapping("[kernel.kallsyms]")
    locs: dict[str, int] = {}
    stack_cache: dict[str, int] = {}
    event = p.event("")
    cuts = Cuts(p)
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
            cut: list[int] = []
            for frame in _leaf_first(text, cut):
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
            if cut:
                ids.append(cuts.frame(cut[0]))
            sid = p.stack(tuple(ids))
            if len(text) <= _CACHED_TEXT:
                stack_cache[text] = sid
        count = int(m.group("count"))
        p.add_sample(sid, count=count, event_id=event)
    if bad:
        p.notes.append(f"{bad} lines that are not folded stacks were skipped")
    cuts.note()
    return p

