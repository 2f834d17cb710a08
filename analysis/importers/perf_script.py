"""`perf script` text: the default output of perf 3.x to today and its `-F` variants.

A sample is an event line (`comm pid/tid [cpu] time: period event:`), then one frame line
per call-chain entry (`ip symbol+0xoff (dso)`, leaf first), then a blank line. Fields
may be missing (`-F`), frames may share the event line when there is no call chain, and
old perf versions print frames at column 0, so a line is classified by its shape and by
where it stands in the block, not by indentation.

Speed matters (captures of hundreds of MB): the input is read in binary chunks and cut
into blocks at blank lines. A compiled loop (_script.c) takes the blocks of the plain
shape nearly every sample has, exactly as the line parser would take them; the rest come
here, where a block whose call-chain text was seen before maps to its interned stack with
one dict lookup, and every other block goes through the line parser, which parses each
distinct frame line once. The Python reader alone (`parse(..., compiled=False)`) is the
reference the loop is tested against.
"""
from __future__ import annotations

import math
import re
from typing import Iterable

from ..errors import UnrecognizedFormat
from ..offcpu.switches import (BLOCKED, EXIT, FORK, IN, OUT, RAN, RUNNABLE, TRACEPOINT,
                               WAKE, state_of_letters)
from ..profile import (JIT, KERNEL, NO_ID, NO_SAMPLES_NOTE, RELATIVE_LIMIT, UNKNOWN, Function,
                       Location, Profile, unresolved_name)
from ..textio import Source, open_binary
from . import _script
from .deep_stacks import MAX_FRAMES, Cuts
from .header import HeaderReader

NAME = "perf-script"

# Numbers are bounded by what perf can print and our columns hold (pid and tid below 10^9,
# cpu below 10^6, period below 10^18): a longer one makes the line no event line.
# comm pid[/tid] [cpu] time: rest     (comm may hold spaces; the time anchors the match)
_EVENT_TIMED = re.compile(
    r"^(?P<comm>.*?)\s+(?P<pid>-?\d{1,9})(?:/(?P<tid>-?\d{1,9}))?\s+(?:\[(?P<cpu>\d{1,6})\]\s+)?"
    r"(?P<time>\d+\.\d+):\s*(?P<rest>.*)$")
# comm pid[/tid] [cpu] rest            (no timestamp: `-F comm,tid,event,...`, old perf)
_EVENT_UNTIMED = re.compile(
    r"^(?P<comm>.*?)\s+(?P<pid>-?\d{1,9})(?:/(?P<tid>-?\d{1,9}))?(?:\s+\[(?P<cpu>\d{1,6})\])?"
    r"(?:\s+(?P<rest>.*))?$")
# period? event: remainder
_EVENT_REST = re.compile(r"^(?:(?P<period>\d{1,18})\s+)?(?P<event>[^\s:][^\s]*?):(?:\s+(?P<more>.*))?$")
_FRAME = re.compile(r"^\s*(?P<ip>[0-9a-fA-F]+)(?:\s+(?P<rest>.*))?$")
_OFFSET = re.compile(r"\+0x([0-9a-fA-F]+)$")



def sniff(head: str) -> bool:
    """An event line followed by a frame line, frame-less event lines (no call chains),
    or blocks of bare frames (`-F ip,...`)."""
    lines = [ln for ln in head.splitlines()
             if ln.strip() and not ln.startswith("#") and not ln.startswith("PERF_RECORD_")
             and ": PERF_RECORD_" not in ln]  # --show-switch-events & co.
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
    if rest and not line[:1].isspace() and not rest.rstrip().endswith(")"):
        # column-0 text without a `(dso)` is not a frame (old perf printed frames at column
        # 0, always with their DSO); `def work(n):` in a header is not one either
        return None
    ip = int(m.group("ip"), 16)
    if ip >> 64:  # perf prints 16 digits at most: a longer number is no address
        return None
    sym, dso = split_dso(rest)
    return ip, sym, dso


# the shape of nearly every event line, matched in one go (the general path is below)
_EVENT_COMMON = re.compile(
    r"^\s*(\S.*?)\s+(-?\d{1,9})(?:/(-?\d{1,9}))?\s+(?:\[(\d{1,6})\]\s+)?(\d+\.\d+):\s+"
    r"(?:(\d{1,18})\s+)?"
    r"([^\s:][^\s]*?):\s*$")


def _parse_event_line(line: str):
    """(comm, pid, tid, cpu, time, period, event, trailing) or None."""
    m = _EVENT_COMMON.match(line)
    if m is not None:
        comm, pid_s, tid_s, cpu_s, time_s, period_s, event = m.groups()
        if tid_s is None:
            pid, tid = NO_ID, int(pid_s)
        else:
            pid, tid = int(pid_s), int(tid_s)
        return (comm, pid, tid, int(cpu_s) if cpu_s else NO_ID, float(time_s),
                int(period_s) if period_s else 0, event, "")
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
        elif rest.isdigit() and len(rest) <= 18:
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
        self.callers: dict[int, int] = {}

    def caller(self, loc_id: int) -> int:
        """The same frame in a caller position: its address is a return address, which
        symbolization looks up at address - 1."""
        twin = self.callers.get(loc_id)
        if twin is None:
            loc = self.p.locations[loc_id]
            twin = self.callers[loc_id] = self.p.add_location(
                loc.mapping_id, loc.address, loc.functions, loc.dso_offset,
                loc.symbol_offset, is_return=True)
        return twin

    def location(self, line: str) -> int | None:
        loc = self.by_line.get(line)
        if loc is not None:
            return loc
        parts = _split_frame(line)
        if parts is None:
            return None
        loc = self.by_line[line] = self.location_from_parts(*parts)
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
        # `ip sym (inlined)`: perf's inline expansion; it does not print the DSO
        mapping_id = p.mapping("[unknown]" if dso == "inlined" or not dso else dso)
        mapping = p.mappings[mapping_id]
        offset = None
        m = _OFFSET.search(sym)
        if m is not None and not int(m.group(1), 16) >> 64:  # (else part of the name)
            offset = int(m.group(1), 16)
            sym = sym[:m.start()]
        if mapping.kind == KERNEL:
            dso_offset = ip  # perf's kernel maps are identity-mapped
        elif mapping.kind != UNKNOWN and ip < RELATIVE_LIMIT:
            dso_offset = ip
        else:
            dso_offset = None
        if sym in ("[unknown]", ""):
            funcs = (p.function(unresolved_name(p, mapping_id, ip, dso_offset),
                                mapping_id, resolved=False, system_name=sym),)
        else:
            # `a->b->c`: perf's inline chain, outermost first; we keep leaf-most first.
            # A JIT symbol file's name is free text (V8 names a regular expression by
            # its source, `RegExp:<!-- (\w+) -->`): one name
            names = [sym] if mapping.kind == JIT else sym.split("->")
            funcs = tuple(p.function(n, mapping_id) for n in reversed(names))
        return p.add_location(mapping_id, ip, funcs, dso_offset=dso_offset,
                              symbol_offset=offset)


def parse(source: Source, compiled: bool = True) -> Profile:
    """Stream `source` in large binary chunks split into sample blocks (text between blank
    lines). The compiled loop (_script.c) takes the blocks of the plain shape nearly every
    sample has, as the line parser would; any other block goes to `_Parser.block`, where
    a block whose call chain was seen before costs one dict lookup plus parsing its event
    line, and any other goes through the line parser, which handles every shape perf
    prints. `compiled=False`: the Python reader alone (the reference the loop is tested
    against)."""
    parser = _Parser()
    take, sync = None, _nothing
    if compiled:  # sync() before the Python reader reads: the frames the loop made
        loop = _compiled_loop(parser)
        take, sync = loop.take, loop.sync

    def piece(lines: bytes, last: bool) -> None:
        sync()
        parser.feed_piece(lines, last)
    tail: list[bytes] = []
    for block in _blocks(open_binary(source), tail, piece, take):
        sync()
        parser.block(block)
    if tail:  # the input did not end with a blank line: its last sample may be cut
        sync()
        for line in tail[0].decode("utf-8", "replace").split("\n"):
            parser.feed(line)
    return parser.finish()


def _compiled_loop(parser: "_Parser") -> "_script.Reader":
    """The compiled loop of this import, working through the parser's and the profile's
    own tables, so that it and the Python reader can take turns block by block."""
    p, frames = parser.p, parser.frames

    def mapping_info(path: str):
        mid = p.mapping(path)
        m = p.mappings[mid]
        return mid, m.kind == KERNEL, m.kind == UNKNOWN, m.kind == JIT, m.basename

    return _script.Reader(
        parser=parser, locations=p.locations, functions=p.functions, stacks=p.stacks,
        stack_ix=p.stack_index(), function_ix=p.function_index(), by_parts=frames.by_parts,
        callers=frames.callers, Location=Location, Function=Function,
        mapping_info=mapping_info, event=p.event, string=p.string,
        # (no count column while every row counts 1, as a perf script sample does: the
        # Python reader's rows count 1 too; no period column while the periods are one)
        columns=(p.s_stack, p.s_count if p.has_count_column() else None,
                 p.period_appender(),
                 p.s_pid, p.s_tid, p.s_cpu, p.s_time,
                 p.s_event, p.s_comm),
        max_frames=MAX_FRAMES, relative_limit=RELATIVE_LIMIT)


def parse_lines(lines: Iterable[str]) -> Profile:
    """The same from already decoded lines (tests, small inputs)."""
    parser = _Parser()
    for line in lines:
        parser.feed(line)
    return parser.finish()


_CHUNK = 1 << 20
#: a block longer than this (some 100,000 frames) is not held whole: its lines go to the
#: parser as they stream in, so a stack of millions of frames costs what perf can record
_LONG_BLOCK = 4 << 20
#: call chains up to this many bytes are remembered for the fast path
_CACHED_CHAIN = 256 * 1024


def _blocks(stream, tail: list[bytes], long_piece, take=None):
    """Blank-line separated blocks of bytes, without their separators; what follows the
    last blank line goes to `tail`. A block longer than _LONG_BLOCK goes instead, in
    pieces of whole lines, to `long_piece(piece, last)`. `take(data, pos) -> pos`, when
    given, consumes the blocks it can from `pos` first (the compiled loop); the block
    it stops at is yielded."""
    carry = b""
    long = False  # the carry continues a block already partly given to long_piece
    try:
        while True:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            data = carry + chunk
            pos = 0
            if long:
                end = data.find(b"\n\n")
                if end >= 0:
                    long_piece(data[1:end], True)  # [1:]: the newline kept in the carry
                    long = False
                    pos = end + 2
            while not long:
                if take is not None:
                    pos = take(data, pos)
                end = data.find(b"\n\n", pos)
                if end < 0:
                    break
                if end > pos:
                    yield data[pos:end]
                pos = end + 2
            carry = data[pos:]
            if len(carry) > _LONG_BLOCK:
                cut = carry.rfind(b"\n")
                if cut > 0:  # keep the newline: with the next chunk's it may end the block
                    long_piece(carry[1:cut] if long else carry[:cut], False)
                    carry = carry[cut:]
                    long = True
        if long:
            rest = carry[1:].rstrip(b"\n")
            if rest:  # no blank line after it: finish() marks the sample as maybe cut
                long_piece(rest, False)
        elif carry.strip(b"\n"):
            tail.append(carry.rstrip(b"\n"))
    finally:
        stream.close()


def _nothing() -> None:
    pass


class _Parser:
    """Line-level state machine: event line, frame lines, blank line; tolerant of every
    deviation seen in the wild (no blank line between samples, frames without an event
    line, decorations such as srcline or brstack lines)."""

    def __init__(self) -> None:
        self.p = p = Profile(NAME)
        self.header = HeaderReader(p)
        self.frames = _FrameTable(p)
        self.fast_stacks: dict[bytes, int] = {}
        self.in_sample = False
        self.chain: list[int] = []
        self.dropped = 0  # frames of this sample beyond MAX_FRAMES (the root side)
        self.cuts = Cuts(p)
        self.cur: tuple | None = None  # (comm_id, pid, tid, cpu, time, period, event_id)
        self.seen_event_line = False
        self.unparsed = 0
        self.switch_row: int | None = None  # the switch-out this sample's stack is for
        #: --show-task-events' PERF_RECORD_FORK/EXIT: (time, tid, pid, FORK or EXIT)
        self.lives: list[tuple[float, int, int, int]] = []

    # ---- blocks: the fast path, and the slow path that teaches it ----------------------
    def block(self, block: bytes) -> None:
        """One block: a call chain seen before maps to its stack with one lookup, and
        only the event line is parsed, as `feed` would parse it (the same decoded line,
        the same pattern); anything else goes through `feed_block`."""
        nl = block.find(b"\n")
        if nl > 0:
            sid = self.fast_stacks.get(block[nl + 1:])
            if sid is not None:
                line = block[:nl].decode("utf-8", "replace")
                m = None if line.startswith(("#", "PERF_RECORD_")) else \
                    _EVENT_COMMON.match(line)
                # (an event named PERF_RECORD_... is sideband to feed: no sample)
                if m is not None and not m.group(7).startswith("PERF_RECORD_"):
                    comm, pid_s, tid_s, cpu_s, time_s, period_s, event = m.groups()
                    p = self.p
                    if tid_s is None:
                        pid, tid = NO_ID, int(pid_s)
                    else:
                        pid, tid = int(pid_s), int(tid_s)
                    p.add_sample(sid, period=int(period_s) if period_s else 0, pid=pid,
                                 tid=tid, cpu=int(cpu_s) if cpu_s else NO_ID,
                                 time=float(time_s), event_id=p.event(event),
                                 comm_id=p.string(comm))
                    return
        self.feed_block(block)

    def feed_block(self, block: bytes) -> None:
        """Slow path for one block; remembers its chain when it was one plain sample."""
        before = len(self.p)
        unparsed = self.unparsed
        text = block.decode("utf-8", "replace")
        lines = text.split("\n")
        for line in lines:
            self.feed(line)
        self.feed("")  # the blank line that separated this block from the next
        nl = block.find(b"\n")
        if nl > 0 and len(self.p) == before + 1 and self.unparsed == unparsed and \
                len(block) <= _CACHED_CHAIN and _EVENT_COMMON.match(lines[0]) is not None:
            self.fast_stacks[block[nl + 1:]] = self.p.s_stack[-1]

    def feed_piece(self, piece: bytes, last: bool) -> None:
        """Whole lines of a block too long to hold; `last`: the block ends after them."""
        for line in piece.decode("utf-8", "replace").split("\n"):
            self.feed(line)
        if last:
            self.feed("")

    # ---- line by line ------------------------------------------------------------------
    def _end_sample(self) -> None:
        comm_id, pid, tid, cpu, time, period, event_id = self.cur
        if self.dropped:
            self.chain.append(self.cuts.frame(self.dropped))
            self.dropped = 0
        sid = self.p.stack(tuple(self.chain))
        if self.switch_row is not None:  # a sched_switch sample: its stack is the out's
            self.p.switches.stack[self.switch_row] = sid
            self.switch_row = None
        self.p.add_sample(sid, period=period, pid=pid, tid=tid,
                          cpu=cpu, time=time, event_id=event_id, comm_id=comm_id)
        self.in_sample = False
        self.chain = []

    def feed(self, line: str) -> None:
        frames, p = self.frames, self.p
        if self.in_sample:
            loc = frames.by_line.get(line)
            if loc is None:
                if not line or line.isspace():
                    self._end_sample()
                    return
                loc = frames.location(line)
            if loc is not None:
                if len(self.chain) < MAX_FRAMES:
                    self.chain.append(frames.caller(loc) if self.chain else loc)
                else:
                    self.dropped += 1
                return
            if line.startswith("#"):
                return
            ev = _parse_event_line(line)
            if ev is None:
                self.unparsed += 1  # srcline, brstack and other decorations
                return
            self._end_sample()  # a new sample without a blank line between
        else:
            if not line or line.isspace():
                return
            if line.startswith("#"):
                if not self.seen_event_line:
                    self.header.feed(line)
                return
            if line.startswith("PERF_RECORD_"):
                return  # --show-mmap-events & co.
            ev = _parse_event_line(line)
            if ev is None:
                if _split_frame(line) is None:
                    self.unparsed += 1
                    return
                # `-F ip,sym,...` without comm/tid: the block starts with its first frame
                self.cur = (NO_ID, NO_ID, NO_ID, NO_ID, math.nan, 0, p.event(""))
                self.chain = [frames.location(line)]
                self.in_sample = True
                self.seen_event_line = True
                return
        # an event line
        self.seen_event_line = True
        comm, pid, tid, cpu, time, period, event, more = ev
        if not event and more.startswith("PERF_RECORD_SWITCH"):
            _switch_line(p, more, pid, tid, cpu, time)
            self.in_sample = False
            return
        if (not event and more.startswith("PERF_RECORD_")) or \
                event.startswith("PERF_RECORD_"):
            # --show-task-events & co. (`PERF_RECORD_COMM: ...` parses as an event named
            # so): sideband, no sample; FORK and EXIT bound the threads' timelines
            m = _TASK.match(more)
            if m is not None and time == time and time > 0:
                self.lives.append((time, int(m.group(3)), int(m.group(2)),
                                   FORK if m.group(1) == "FORK" else EXIT))
            self.in_sample = False
            return
        if event.endswith("sched_switch") and "prev_state=" in more:
            self.switch_row = _sched_switch_line(p, more, pid, tid, cpu, time)
        elif event.endswith(("sched_wakeup", "sched_waking")) and "pid=" in more:
            m = _WAKEE.search(more)
            if m is not None and time == time:  # the line's thread is the waker
                self.switch_row = len(p.switches)
                p.switches.add(time, int(m.group(1)), NO_ID, cpu, WAKE, BLOCKED, -1,
                               TRACEPOINT, 0.0, tid)
        elif event.endswith("sched_stat_runtime") and "runtime=" in more:
            m = _RUNTIME_FIELDS.search(more)
            if m is not None and time == time:
                p.switches.add(time, int(m.group(1)), pid, cpu, RAN, BLOCKED, -1,
                               TRACEPOINT, int(m.group(2)) / 1e9)
        self.cur = (p.string(comm), pid, tid, cpu, time, period, p.event(event))
        self.chain = []
        self.in_sample = True
        if more:
            parts = _split_frame(more)
            if parts is not None and more.rstrip().endswith(")"):
                self.chain.append(frames.location_from_parts(*parts))

    def finish(self) -> Profile:
        p = self.p
        if len(p.switches):
            # after the switches (the thread loop sorts a thread's rows by time); only
            # with switches: a thread's creation and exit alone say nothing off-CPU
            for time, tid, pid, kind in self.lives:
                p.switches.add(time, tid, pid, NO_ID, kind)
        self.lives = []
        if self.in_sample:
            self._end_sample()
            p.truncated_tail = True
        if not self.seen_event_line and self.unparsed:
            raise UnrecognizedFormat("no perf script sample lines found")
        if not len(p):
            p.notes.append(NO_SAMPLES_NOTE)
        if self.unparsed:
            p.notes.append(f"{self.unparsed} lines that are neither samples nor frames "
                           f"were skipped")
        self.cuts.note()
        self.header.finish()
        return p


# numbers bounded as the event line's are (pid below 10^9, runtime a u64): a longer one
# makes the line no such event, not an overflow
# PERF_RECORD_FORK(pid:tid):(ppid:ptid), PERF_RECORD_EXIT(pid:tid):(ppid:ptid)
_TASK = re.compile(r"^PERF_RECORD_(FORK|EXIT)\((-?\d{1,9}):(-?\d{1,9})\)")
_WAKEE = re.compile(r"\bpid=(\d{1,9})\b")
_RUNTIME_FIELDS = re.compile(r"\bpid=(\d{1,9})\s+runtime=(\d{1,20})\b")
_SWITCH_FIELDS = re.compile(r"prev_pid=(-?\d{1,9})\b.*?prev_state=(\S{1,16}).*?"
                            r"next_pid=(-?\d{1,9})\b")


def _switch_line(p: Profile, text: str, pid: int, tid: int, cpu: int, time: float) -> None:
    """`PERF_RECORD_SWITCH IN`, `... OUT`, `... OUT preempt` (--show-switch-events; the
    CPU-wide form adds `next pid/tid`): the line's thread is the one switching."""
    words = text.split()
    if len(words) < 2 or time != time:
        return
    if words[1] == "OUT":
        p.switches.add(time, tid, pid, cpu, OUT,
                       RUNNABLE if len(words) > 2 and words[2] == "preempt" else BLOCKED)
    elif words[1] == "IN":
        p.switches.add(time, tid, pid, cpu, IN)


def _sched_switch_line(p: Profile, text: str, pid: int, tid: int, cpu: int,
                       time: float) -> int | None:
    """sched:sched_switch: prev_comm=.. prev_pid=N prev_prio=.. prev_state=S ==>
    next_comm=.. next_pid=M ..: the switch-out row (its stack follows as the sample's)."""
    m = _SWITCH_FIELDS.search(text)
    if m is None or time != time:
        return None
    prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
    row = len(p.switches)
    p.switches.add(time, prev if prev > 0 else tid, pid, cpu, OUT, state_of_letters(state),
                   -1, TRACEPOINT)
    if nxt > 0:
        p.switches.add(time, nxt, NO_ID, cpu, IN, BLOCKED, -1, TRACEPOINT)
    return row
