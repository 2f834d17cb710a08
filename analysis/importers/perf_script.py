"""`perf script` text: the default output of perf 3.x to today and its `-F` variants.

A sample is an event line (`comm pid/tid [cpu] time: period event:`), then one frame line
per call-chain entry (`ip symbol+0xoff (dso)`, leaf first), then a blank line. Fields
may be missing (`-F`), frames may share the event line when there is no call chain, and
old perf versions print frames at column 0, so a line is classified by its shape and by
where it stands in the block, not by indentation.

Speed matters (captures of hundreds of MB): every distinct frame line is parsed once and
then found in a dict keyed by the raw line, so the common path per frame is one lookup.
"""
from __future__ import annotations

import math
import re
from typing import Iterable

from ..errors import UnrecognizedFormat
from ..profile import NO_ID, UNKNOWN, Profile
from ..textio import Source, text_lines
from .header import HeaderReader

NAME = "perf-script"

# comm pid[/tid] [cpu] time: rest     (comm may hold spaces; the time anchors the match)
_EVENT_TIMED = re.compile(
    r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?P<time>\d+\.\d+):\s*(?P<rest>.*)$")
# comm pid[/tid] [cpu] rest            (no timestamp: `-F comm,tid,event,...`, old perf)
_EVENT_UNTIMED = re.compile(
    r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?(?:\s+\[(?P<cpu>\d+)\])?"
    r"(?:\s+(?P<rest>.*))?$")
# period? event: remainder
_EVENT_REST = re.compile(r"^(?:(?P<period>\d+)\s+)?(?P<event>[^\s:][^\s]*?):(?:\s+(?P<more>.*))?$")
_FRAME = re.compile(r"^\s*(?P<ip>[0-9a-fA-F]+)(?:\s+(?P<rest>.*))?$")
_OFFSET = re.compile(r"\+0x([0-9a-fA-F]+)$")

#: Below this, a user-space address printed next to a shared object is DSO-relative
#: (perf 6.1 prints those); shared objects and PIE executables load far above it.
_RELATIVE_LIMIT = 0x10000000


def sniff(head: str) -> bool:
    """An event line followed by a frame line, frame-less event lines (no call chains),
    or blocks of bare frames (`-F ip,...`)."""
    lines = [ln for ln in head.splitlines()
             if ln.strip() and not ln.startswith("#") and not ln.startswith("PERF_RECORD_")]
    for i, line in enumerate(lines[:200]):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        ev = _parse_event_line(line)
        if ev is None:
            if line[:1].isspace() and _split_frame(line) is not None:
                return True
            continue
        if _split_frame(nxt) is not None:
            return True
        return bool(ev[6] and nxt and _parse_event_line(nxt))
    return False


def split_dso(text: str) -> tuple[str, str]:
    """`sym+0x1 (dso)` -> (`sym+0x1`, `dso`); the DSO is the last balanced (...) group,
    so `foo(int) (/lib/x.so (deleted))` keeps both the parentheses and `(deleted)`."""
    text = text.rstrip()
    if not text.endswith(")"):
        return text, ""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return text[:i].rstrip(), text[i + 1:-1]
    return text, ""


def _split_frame(line: str):
    m = _FRAME.match(line)
    if m is None:
        return None
    rest = m.group("rest") or ""
    if rest and "(" not in rest and not line[:1].isspace():
        # column-0 text without a DSO is an event line, not a frame
        return None
    sym, dso = split_dso(rest)
    return int(m.group("ip"), 16), sym, dso


def _parse_event_line(line: str):
    """(comm, pid, tid, cpu, time, period, event, trailing) or None."""
    m = _EVENT_TIMED.match(line)
    if m is None:
        m = _EVENT_UNTIMED.match(line)
        if m is None:
            return None
        time = math.nan
    else:
        time = float(m.group("time"))
    comm = m.group("comm").strip()
    if not comm:
        return None
    pid_s, tid_s, cpu_s = m.group("pid"), m.group("tid"), m.group("cpu")
    if tid_s is None:
        pid, tid = NO_ID, int(pid_s)
    else:
        pid, tid = int(pid_s), int(tid_s)
    rest = (m.group("rest") or "").strip()
    period, event, more = 0, "", ""
    if rest:
        r = _EVENT_REST.match(rest)
        if r is not None:
            period = int(r.group("period") or 0)
            event = r.group("event")
            more = r.group("more") or ""
        elif rest.isdigit():
            period = int(rest)
        elif math.isnan(time):
            return None  # "word 12 something" without time or event: not an event line
        else:
            more = rest
    return comm, pid, tid, int(cpu_s) if cpu_s else NO_ID, time, period, event, more


class _FrameTable:
    """Raw frame text -> location id, parsing each distinct frame once."""

    def __init__(self, profile: Profile) -> None:
        self.p = profile
        self.by_line: dict[str, int] = {}
        self.by_parts: dict[tuple[int, str, str], int] = {}

    def location(self, line: str) -> int | None:
        loc = self.by_line.get(line)
        if loc is not None:
            return loc
        parts = _split_frame(line)
        if parts is None:
            return None
        loc = self.by_parts.get(parts)
        if loc is None:
            loc = self._new_location(*parts)
            self.by_parts[parts] = loc
        self.by_line[line] = loc
        return loc

    def location_from_parts(self, ip: int, sym: str, dso: str) -> int:
        key = (ip, sym, dso)
        loc = self.by_parts.get(key)
        if loc is None:
            loc = self._new_location(ip, sym, dso)
            self.by_parts[key] = loc
        return loc

    def _new_location(self, ip: int, sym: str, dso: str) -> int:
        p = self.p
        mapping_id = p.mapping(dso or "[unknown]")
        mapping = p.mappings[mapping_id]
        offset = None
        m = _OFFSET.search(sym)
        if m is not None:
            offset = int(m.group(1), 16)
            sym = sym[:m.start()]
        relative = mapping.kind not in ("kernel", UNKNOWN) and ip < _RELATIVE_LIMIT
        if sym in ("[unknown]", ""):
            funcs = (p.function(unresolved_name(mapping.basename, ip, relative, mapping.kind),
                                mapping_id, resolved=False, system_name=sym),)
        else:
            # `a->b->c`: perf's inline chain, outermost first; we keep leaf-most first
            names = sym.split("->")
            funcs = tuple(p.function(n, mapping_id) for n in reversed(names))
        return p.add_location(mapping_id, ip, funcs, dso_relative=relative,
                              symbol_offset=offset)


def unresolved_name(dso_base: str, address: int, relative: bool, kind: str) -> str:
    """How an unresolved frame reads: `libfoo.so+0x2458` when the DSO offset is known,
    the raw address otherwise (an absolute address only means something with maps)."""
    if kind == UNKNOWN or not dso_base:
        return "[unknown]" if address == 0 else f"0x{address:x}"
    if relative:
        return f"{dso_base}+0x{address:x}"
    return f"[{dso_base}] 0x{address:x}"


def parse(source: Source) -> Profile:
    return parse_lines(text_lines(source))


def parse_lines(lines: Iterable[str]) -> Profile:
    p = Profile(NAME)
    header = HeaderReader(p)
    frames = _FrameTable(p)
    loc_of = frames.by_line.get
    add_sample, stack_of = p.add_sample, p.stack

    in_sample = False
    chain: list[int] = []
    cur = None  # (comm_id, pid, tid, cpu, time, period, event_id)
    seen_event_line = False
    unparsed = 0

    def finish():
        comm_id, pid, tid, cpu, time, period, event_id = cur
        add_sample(stack_of(tuple(chain)), period=period, pid=pid, tid=tid, cpu=cpu,
                   time=time, event_id=event_id, comm_id=comm_id)

    for line in lines:
        if in_sample:
            loc = loc_of(line)
            if loc is None:
                if not line or line.isspace():
                    finish()
                    in_sample = False
                    chain = []
                    continue
                loc = frames.location(line)
                if loc is None:
                    if line.startswith("#"):
                        continue
                    ev = _parse_event_line(line)
                    if ev is None:
                        unparsed += 1  # srcline, brstack and other decorations
                        continue
                    finish()  # a new sample without a blank line between
                    chain = []
                    in_sample = False
                else:
                    chain.append(loc)
                    continue
            else:
                chain.append(loc)
                continue
        else:
            if not line or line.isspace():
                continue
            if line.startswith("#"):
                if not seen_event_line:
                    header.feed(line)
                continue
            if line.startswith("PERF_RECORD_"):
                continue  # --show-mmap-events & co.
            ev = _parse_event_line(line)
            if ev is None:
                parts = _split_frame(line)
                if parts is None:
                    unparsed += 1
                    continue
                # `-F ip,sym,...` without comm/tid: the block starts with its first frame
                cur = (NO_ID, NO_ID, NO_ID, NO_ID, math.nan, 0, p.event(""))
                chain = [frames.location(line)]
                in_sample = True
                seen_event_line = True
                continue
        # an event line
        seen_event_line = True
        comm, pid, tid, cpu, time, period, event, more = ev
        cur = (p.string(comm), pid, tid, cpu, time, period, p.event(event))
        chain = []
        in_sample = True
        if more:
            parts = _split_frame(more)
            if parts is not None and more.rstrip().endswith(")"):
                chain.append(frames.location_from_parts(*parts))
    if in_sample:
        finish()
        p.truncated_tail = True

    if not seen_event_line and unparsed:
        raise UnrecognizedFormat("no perf script sample lines found")
    if not len(p):
        p.notes.append("the capture holds no samples: the process did not run on a CPU "
                       "while perf recorded (idle, 0% CPU)")
    if unparsed:
        p.notes.append(f"{unparsed} lines that are neither samples nor frames were skipped")
    header.finish()
    return p

