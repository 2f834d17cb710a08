"""Folded stacks (`comm;root;...;leaf count`), the lingua franca of flame graph tools.

Two spellings exist in the wild and users compare our output with both, so the writer
reproduces each exactly from the profile model:

- ``flamegraph``: Brendan Gregg's `stackcollapse-perf.pl` (the reference; perl rules for
  tidying names, `[dso]` for unknown frames, `_[k]`/`_[j]`/`_[i]` annotations);
- ``inferno``: `inferno-collapse-perf`, which fixes half-demangled Rust names, keeps
  quotes and parenthesised template arguments, and knows more kernel module spellings.

Weights are either the sample period (what FlameGraph does since 2021) or sample counts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress, islice, repeat
from typing import Iterable, Iterator, TextIO

import numpy as np

from ..column_ops import CHUNK, dense_ids_in_chunks, first_met_of_chunks, view
from ..location_table import location_fields
from ..profile import NO_ID, Profile
from ..profile_columns import stack_table

FLAMEGRAPH, INFERNO = "flamegraph", "inferno"
PERIOD, SAMPLES = "period", "samples"


@dataclass(frozen=True)
class FoldOptions:
    convention: str = FLAMEGRAPH
    weight: str = PERIOD
    include_pid: bool = False
    include_tid: bool = False
    annotate_kernel: bool = False
    annotate_jit: bool = False
    include_addrs: bool = False
    include_comm: bool = True
    #: event name to keep; None = the first event in the input, as both tools do
    event: str | None = None
    #: names as the capture page shows them (only `;`, the separator, becomes `:`),
    #: not tidied as the tools do: stackcollapse-perf.pl cuts a name at its first "(",
    #: `std::_Function_handler<void (), main::{lambda()#1}>::_M_invoke` to
    #: `std::_Function_handler<void `
    names_as_shown: bool = False

    @classmethod
    def from_flag(cls, flag: str | None, **kw) -> "FoldOptions":
        """The option names of both tools' test suites: pid tid kernel jit all addrs."""
        flags = {
            None: {}, "": {},
            "pid": {"include_pid": True},
            "tid": {"include_tid": True},
            "kernel": {"annotate_kernel": True},
            "jit": {"annotate_jit": True},
            "all": {"annotate_kernel": True, "annotate_jit": True},
            "addrs": {"include_addrs": True},
        }[flag]
        return cls(**flags, **kw)


def fold(profile: Profile, opts: FoldOptions = FoldOptions(),
         compiled: bool = True) -> dict[str, int]:
    """Folded stack -> weight, for the samples of one event.

    A diverse capture has 240,000 samples on 100,000 (stack, process) pairs whose
    100,000 address stacks fold to 19,000 lines, so the work is done per distinct thing:
    the rows are summed per (stack, process) pair (a sort of the columns), each location
    gets the id of its printed names (locations that print alike share it), and each
    distinct sequence of ids is joined once. `compiled=False` runs the row-by-row Python
    loop the array pass is tested against. How a frame or a process prints is decided
    here either way, once per distinct location and process."""
    event_ids = _selected_events(profile, opts)
    namer = _Namer(profile, opts)
    p = profile
    rows = len(p.s_stack)
    if rows and p.truncated_tail and opts.convention == FLAMEGRAPH:
        rows -= 1  # the perl script only counts a sample at the blank line ending it
    procs = _process_columns(p, opts)
    keep = None
    if not event_ids.issuperset(p.s_event[:rows]):
        keep = bytes(i in event_ids for i in range(len(p.events)))
    # (columns the profile does not keep are not made: None for counts of one, the one
    # period as an int)
    count = p.s_count if p.has_count_column() else None
    period = p.s_period if p.has_period_column() else p.period_value()
    by_period = opts.weight == PERIOD
    if not compiled or (count is not None and getattr(count, "typecode", "") != "q") or \
            (not isinstance(period, int) and getattr(period, "typecode", "") != "Q") or \
            any(getattr(c, "typecode", "") != "i" for c in (p.s_stack, p.s_event) + procs):
        return _fold_python(p, namer, procs, keep, rows, by_period)
    folded = _fold_arrays(p, namer, procs, keep, rows, count,
                          period if by_period else None)
    return _fold_python(p, namer, procs, keep, rows, by_period) if folded is None else folded


def _fold_arrays(p: Profile, namer: "_Namer", procs: tuple, keep: bytes | None, rows: int,
                 count, period) -> dict[str, int] | None:
    """fold on the columns: the rows summed per (stack, process key) in the order of each
    pair's first row by a sort, then per pair its process name and body, the bodies of
    the pairs' stacks made once per distinct sequence of printed-names ids. `period`: the
    period column or value (None: weigh by count), a row's count where it is 0. None
    when the weights could pass int64 (the Python loop sums them exactly)."""
    stack = view(p.s_stack, np.int32)[:rows]
    cols = [view(c, np.int32)[:rows] for c in procs]
    # (None: every row weighs 1, counted, not summed)
    w = None if count is None else view(count, np.int64)[:rows]
    if period is not None:
        per = np.full(rows, period, dtype=np.uint64) if isinstance(period, int) else \
            view(period, np.uint64)[:rows]
        if per.size and int(per.max()) >= 1 << 62:
            return None
        w = np.where(per != 0, per.astype(np.int64), 1 if w is None else w)
    if keep is not None:
        ev = view(p.s_event, np.int32)[:rows]
        flags = np.frombuffer(keep, dtype=np.uint8)
        kept = (ev >= 0) & (ev < len(flags))
        kept[kept] = flags[ev[kept]] == 1
        stack, cols = stack[kept], [c[kept] for c in cols]
        w = None if w is None else w[kept]
    if w is not None and w.size and \
            (int(w.min()) < 0 or int(w.max()) >= (1 << 62) // max(len(w), 1)):
        return None
    if not stack.size:
        return {}
    # each row's process (its key's id, first met first) and the body of its stack, as
    # printed for that process (Java's frames print apart): then the rows are summed per
    # (process, body), and each distinct line is made once. The rows a chunk at a time:
    # whole-column temporaries of a 4M-sample text were 180 MiB, the worker's peak.
    if cols:
        proc, keys = dense_ids_in_chunks(*cols, chunk=ROW_CHUNK)
        procs_met = list(zip(*(k.tolist() for k in keys)))
    else:
        proc, procs_met = None, [()]
    names = [namer.proc_name(k) for k in procs_met]
    java = np.array([n is not None and n.startswith("java") for n in names], dtype=bool)
    n_stacks = len(p.stacks)
    used = np.zeros((2, n_stacks), dtype=bool)  # the stacks of other and of Java processes
    for a in range(0, len(stack), ROW_CHUNK):
        some = stack[a:a + ROW_CHUNK]
        if proc is None:
            used[0, some] = True
        else:
            on_java = java[proc[a:a + ROW_CHUNK]]
            used[1, some[on_java]] = True
            used[0, some[~on_java]] = True
    body_of = np.full((2, n_stacks), -1, dtype=np.int64)
    texts: list[str] = []
    for j in (0, 1):
        if used[j].any():
            of, made = _bodies(p, namer, np.flatnonzero(used[j]), bool(j))
            body_of[j] = np.where(of >= 0, of + len(texts), -1)
            texts += made
    del used

    def chunks():
        for a in range(0, len(stack), ROW_CHUNK):
            some = stack[a:a + ROW_CHUNK]
            their = proc[a:a + ROW_CHUNK] if proc is not None else \
                np.zeros(len(some), dtype=np.int32)
            yield (their, body_of[java[their].view(np.int8), some]), \
                None if w is None else w[a:a + ROW_CHUNK]
    (pk, bk), sums = first_met_of_chunks(chunks())
    out: dict[str, int] = {}
    inferno = namer.inferno
    for k, b, x in zip(pk.tolist(), bk.tolist(), sums.tolist()):
        pname = names[k]
        if b < 0 and (inferno or pname is None):
            continue  # inferno drops frame-less samples; perl keeps the comm alone
        folded = texts[b] if pname is None else pname if b < 0 else f"{pname};{texts[b]}"
        out[folded] = out.get(folded, 0) + x
    return out


def _bodies(p: Profile, namer: "_Namer", stacks: np.ndarray, is_java: bool
            ) -> tuple[np.ndarray, list[str]]:
    """(per stack id, the index of its body in the list, -1 when it prints no frame;
    the bodies, frames root first joined by ";", each once) for these stacks: each
    location's printed-names id asked of the namer once. A chunk of stacks at a time,
    and the bodies told apart by their text: a list of every frame's id and a tuple of
    ids per distinct stack were 1.2 KB a stack of a 4M-sample text's million (ids past
    256 are an int object each), most of the worker's peak."""
    st = stack_table(p)
    s = _present(stacks, st.rows)
    text_of = np.full(len(p.locations), -1, dtype=np.int64)
    texts = namer.texts[is_java]
    index: dict[str, int] = {}
    bodies: list[str] = []
    body_of = np.full(st.rows, -1, dtype=np.int64)
    for a in range(0, len(s), STACK_CHUNK):
        chunk = s[a:a + STACK_CHUNK]
        pos, _ = st.gather(chunk)
        locs = st.values[pos]
        used = _present(locs, len(p.locations))
        new = used[text_of[used] < 0]
        lids = new.tolist()
        text_of[new] = list(map(namer.text_id_of, lids, repeat(is_java),
                                *location_fields(p.locations, lids)))
        flat = text_of[locs].tolist()
        joined: dict[tuple, int] = {}  # (this chunk's sequences of ids, each joined once)
        of = []
        start = 0
        for end in np.cumsum(st.lengths(chunk)).tolist():
            ids = tuple(flat[start:end])
            start = end
            b = joined.get(ids)
            if b is None:
                parts = [texts[i] for i in reversed(ids) if texts[i] is not None]
                b = -1
                if parts:
                    body = ";".join(parts)
                    b = index.get(body)
                    if b is None:
                        b = index[body] = len(bodies)
                        bodies.append(body)
                joined[ids] = b
            of.append(b)
        body_of[chunk] = of
    return body_of, bodies


#: stacks _bodies names at a time; rows _fold_arrays sums at a time
STACK_CHUNK, ROW_CHUNK = 1 << 16, CHUNK


def _present(ids: np.ndarray, n: int) -> np.ndarray:
    """The distinct ids (each below n), ascending: by a flag per id, not a sort."""
    flags = np.zeros(n, dtype=bool)
    flags[ids] = True
    return np.flatnonzero(flags)


def _process_columns(p: Profile, opts: FoldOptions) -> tuple:
    """The columns a row's process name is made of: comm[, pid[, tid]], or none."""
    if not opts.include_comm:
        return ()
    if opts.include_tid:
        return p.s_comm, p.s_pid, p.s_tid
    if opts.include_pid:
        return p.s_comm, p.s_pid
    return (p.s_comm,)


def _fold_python(p: Profile, namer: "_Namer", procs: tuple, keep: bytes | None, rows: int,
                 by_period: bool) -> dict[str, int]:
    """fold's loop in Python, row by row: the reference of the array pass."""
    keys = zip(islice(p.s_stack, rows), *(islice(c, rows) for c in procs))
    if by_period:  # the period, or the row's count when it has none
        weights: Iterable = (c if not w else w for w, c in
                             zip(islice(p.periods(), rows), islice(p.counts(), rows)))
    else:
        weights = islice(p.counts(), rows)
    if keep is not None:
        kept = [0 <= e < len(keep) and keep[e] == 1 for e in islice(p.s_event, rows)]
        keys, weights = compress(keys, kept), compress(weights, kept)
    sums: dict[tuple, int] = {}  # (stack, process key) -> weight, in first-row order
    for key, w in zip(keys, weights):
        sums[key] = sums.get(key, 0) + w
    out: dict[str, int] = {}
    for key, w in sums.items():
        pname = namer.proc_name(key[1:])
        is_java = pname is not None and pname.startswith("java")
        body = namer.body(key[0], is_java)
        if body is None and (namer.inferno or pname is None):
            continue  # inferno drops frame-less samples; perl keeps the comm alone
        folded = body if pname is None else pname if body is None else f"{pname};{body}"
        out[folded] = out.get(folded, 0) + w
    return out


def write_folded(profile: Profile, stream: TextIO, opts: FoldOptions = FoldOptions()) -> None:
    for line in folded_lines(fold(profile, opts)):
        stream.write(line)
        stream.write("\n")


def folded_lines(folded: dict[str, int]) -> Iterator[str]:
    for k in sorted(folded):
        yield f"{k} {folded[k]}"


def _selected_events(profile: Profile, opts: FoldOptions) -> set[int]:
    # samples without an event name are never filtered out (both tools behave so)
    unnamed = {i for i, e in enumerate(profile.events) if e.name == ""}
    if opts.event is not None:
        return unnamed | {i for i, e in enumerate(profile.events) if e.name == opts.event}
    named = [i for i, e in enumerate(profile.events) if e.name != ""]
    if not named:
        return unnamed
    first = profile.events[named[0]].name
    if opts.convention == INFERNO:
        # inferno compares the event without its modifiers ("cycles:u" and "cycles" match)
        first = first.split(":")[0]
        return unnamed | {i for i, e in enumerate(profile.events)
                          if e.name.split(":")[0] == first}
    return unnamed | {named[0]}


class _Namer:
    """How each process and frame prints, decided once per distinct one."""

    def __init__(self, profile: Profile, opts: FoldOptions) -> None:
        self.p = profile
        self.o = opts
        self.inferno = opts.convention == INFERNO
        self.include_addrs = opts.include_addrs
        self._proc_names: dict[tuple, str | None] = {}
        #: per is_java (False, True): the printed names of each text id joined by ";"
        #: (None: the location prints no frame), and the text id of each distinct key
        #: of text_id seen; the compiled loop reads them too
        self.texts: tuple[list[str | None], list[str | None]] = ([], [])
        self.text_ids: tuple[dict[tuple, int], dict[tuple, int]] = ({}, {})
        self.locations = profile.locations
        #: per function: the name perf script would print for it
        self.raw = [f.system_name if not f.resolved else f.name for f in profile.functions]
        # the Python loop's memos (the compiled one keeps its own)
        self._text_of: dict[bool, list[int] | None] = {False: None, True: None}
        self._by_ids: dict[tuple, str | None] = {}
        self._bodies: dict[tuple[int, bool], str | None] = {}

    def proc_name(self, proc: tuple) -> str | None:
        """The process name of a process key, (comm id[, pid[, tid]]); None without
        comms."""
        if proc in self._proc_names:
            return self._proc_names[proc]
        o = self.o
        if not o.include_comm:
            name = None
        else:
            cid = proc[0]
            name = (self.p.strings[cid] if cid >= 0 else "").replace(" ", "_")
            if o.include_pid or o.include_tid:
                pid_s = "?" if proc[1] == NO_ID else str(proc[1])
                if o.include_tid:
                    name = f"{name}-{pid_s}/{'?' if proc[2] == NO_ID else proc[2]}"
                else:
                    name = f"{name}-{pid_s}"
        self._proc_names[proc] = name
        return name

    def body(self, sid: int, is_java: bool) -> str | None:
        """The frames of stack `sid`, root first, joined; None when it prints none."""
        key = (sid, is_java)
        if key in self._bodies:
            return self._bodies[key]
        location_ids = self.p.stacks[sid]
        text_of = self._text_of[is_java]
        if text_of is None:
            text_of = self._text_of[is_java] = [-1] * len(self.p.locations)
        for loc in location_ids:
            if text_of[loc] == -1:
                text_of[loc] = self.text_id(loc, is_java)
        ids = (tuple(map(text_of.__getitem__, location_ids)), is_java)
        if ids not in self._by_ids:
            texts = self.texts[is_java]
            parts = [texts[i] for i in reversed(ids[0]) if texts[i] is not None]
            self._by_ids[ids] = ";".join(parts) if parts else None
        body = self._bodies[key] = self._by_ids[ids]
        return body

    def text_id(self, loc_id: int, is_java: bool) -> int:
        """The id of the printed names of a location in texts[is_java], shared by the
        locations _name_location prints alike: it reads their raw names, mapping, line
        info, and the address when addresses are printed."""
        loc = self.p.locations[loc_id]
        return self.text_id_of(loc_id, is_java, loc.functions, loc.mapping_id,
                               not loc.lines, loc.address)

    def text_id_of(self, loc_id: int, is_java: bool, funcs: tuple[int, ...],
                   mapping_id: int, no_lines: bool, address: int) -> int:
        """text_id from the fields it reads (location_table.location_fields)."""
        raw = self.raw
        text = raw[funcs[0]] if len(funcs) == 1 else "->".join(raw[f] for f in reversed(funcs))
        key = (text, mapping_id, no_lines, address if self.include_addrs else 0)
        ids = self.text_ids[is_java]
        tid = ids.get(key)
        if tid is None:
            names = self._name_location(loc_id, is_java)
            texts = self.texts[is_java]
            tid = ids[key] = len(texts)
            texts.append(";".join(names) if names else None)
        return tid

    def _name_location(self, loc_id: int, is_java: bool) -> list[str]:
        p, o = self.p, self.o
        loc = p.locations[loc_id]
        mapping = p.mappings[loc.mapping_id]
        module = mapping.path
        pc = f"{loc.address:x}"
        funcs = [p.functions[f] for f in reversed(loc.functions)]  # outermost inline first
        # what perf script would print: the readable name, or `[unknown]`/nothing
        raw = "->".join(f.system_name if not f.resolved else f.name for f in funcs)
        if raw == "":
            raw = " "  # "ip  (dso)": both tools keep a one-space name
        if raw.startswith("("):
            return []  # old perf printed "(comm)" frames; both tools skip them
        if self.inferno:
            raw = fix_partially_demangled_rust_symbol(raw)
        out: list[str] = []
        for i, func in enumerate(raw.split("->")):
            if func == "[unknown]":
                func = self._unknown(module, pc)
            if o.names_as_shown:
                func = func.replace(";", ":")
            elif self.inferno:
                func = tidy_generic_inferno(func)
            else:
                func = tidy_generic_perl(func)
            if is_java and func.startswith("L") and "/" in func:
                func = func[1:]
            if i > 0:
                # inline frames perf printed as `a->b` get stackcollapse's mark; those
                # from DWARF line tables are frames of their own, as perf prints them
                if "_[i]" not in func and not loc.lines:
                    func += "_[i]"
            elif o.annotate_kernel and self._is_kernel(module):
                func += "_[k]"
            elif o.annotate_jit and self._is_jit(module) and "_[j]" not in func:
                func += "_[j]"
            out.append(func)
        return out

    def _unknown(self, module: str, pc: str) -> str:
        if module != "[unknown]":
            name = module.rsplit("/", 1)[-1]
        elif self.inferno and not self.o.include_addrs:
            return "[unknown]"
        else:
            name = "unknown"
        return f"[{name} <{pc}>]" if self.o.include_addrs else f"[{name}]"

    def _is_kernel(self, module: str) -> bool:
        if self.inferno:
            return (module.startswith("[") or module.endswith(".ko") or _is_vmlinux(module)) \
                and module != "[unknown]"
        return (module.startswith("[") or module.endswith("vmlinux")) and "unknown" not in module

    def _is_jit(self, module: str) -> bool:
        if self.inferno:
            return (module.startswith("/tmp/perf-") and module.endswith(".map")) or \
                ("/jitted-" in module and module.endswith(".so"))
        return _PERL_JIT.search(module) is not None


_PERL_JIT = re.compile(r"/tmp/perf-\d+\.map")
_PERL_GO_METHOD = re.compile(r"\.\(.*\)\.")
_PERL_ARGS = re.compile(r"\((?!anonymous namespace\)).*", re.S)
_VMLINUX_TAIL = re.compile(r"^[A-Za-z0-9._-]*$")


def tidy_generic_perl(func: str) -> str:
    """stackcollapse-perf.pl: `;` -> `:`, drop an argument list, drop quotes."""
    func = func.replace(";", ":")
    if not _PERL_GO_METHOD.search(func):
        func = _PERL_ARGS.sub("", func, count=1)
    return func.replace('"', "").replace("'", "")


def tidy_generic_inferno(func: str) -> str:
    """inferno: cut at the first top-level `(` that is not a Go method or anonymous
    namespace, counting <>, {}, [] and () so template arguments survive."""
    func = func.replace(";", ":")
    depth = 0
    last_dot = None
    for idx, c in enumerate(func):
        if c in "<{[":
            depth += 1
        elif c in ">}])":
            depth -= 1
        elif c == "(":
            if depth == 0:
                is_go = last_dot == idx
                if not is_go and not func.startswith("(anonymous namespace)", idx):
                    return func[:idx]
            depth += 1
        elif c == ".":
            last_dot = idx + 1
    return func


def _is_vmlinux(s: str) -> bool:
    i = s.rfind("vmlinux")
    return i >= 0 and _VMLINUX_TAIL.match(s[i:]) is not None


_RUST_ESCAPES = [
    ("$SP$", "@"), ("$BP$", "*"), ("$RF$", "&"), ("$LT$", "<"), ("$GT$", ">"),
    ("$LP$", "("), ("$RP$", ")"), ("$C$", ","), ("$u7e$", "~"), ("$u20$", " "),
    ("$u27$", "'"), ("$u3d$", "="), ("$u5b$", "["), ("$u5d$", "]"), ("$u7b$", "{"),
    ("$u7d$", "}"), ("$u3b$", ";"), ("$u2b$", "+"), ("$u21$", "!"), ("$u22$", '"'),
]
_RUST_HASH = re.compile(r"h[0-9a-fA-F]{16}$")


def fix_partially_demangled_rust_symbol(symbol: str) -> str:
    """`std..fs..File$u20$as...::h0123456789abcdef` -> `std::fs::File as ...` (the half
    demangled legacy Rust names old perf prints); anything else is returned unchanged."""
    if len(symbol) < 17 or not _RUST_HASH.search(symbol):
        return symbol
    rest = symbol[:-17]
    if rest.endswith("::"):
        rest = rest[:-2]
    if rest.startswith("_$"):
        rest = rest[1:]
    out: list[str] = []
    i, n = 0, len(rest)
    while i < n:
        c = rest[i]
        if c == ".":
            if rest.startswith("..", i):
                out.append("::")
                i += 2
            else:
                out.append(".")
                i += 1
        elif c == "$":
            for pat, rep in _RUST_ESCAPES:
                if rest.startswith(pat, i):
                    out.append(rep)
                    i += len(pat)
                    break
            else:
                out.append(rest[i:])
                break
        else:
            j = i
            while j < n and rest[j] not in "$.":
                j += 1
            out.append(rest[i:j])
            i = j
    return "".join(out)
