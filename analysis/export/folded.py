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
from typing import Iterable, Iterator, TextIO

from ..profile import NO_ID, Profile

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


def fold(profile: Profile, opts: FoldOptions = FoldOptions()) -> dict[str, int]:
    """Folded stack -> weight, for the samples of one event."""
    event_ids = _selected_events(profile, opts)
    namer = _Namer(profile, opts)
    out: dict[str, int] = {}
    stacks, s_stack, s_event = profile.stacks, profile.s_stack, profile.s_event
    s_count, s_period = profile.s_count, profile.s_period
    by_period = opts.weight == PERIOD
    frames_of: dict[tuple[int, str], str | None] = {}
    rows = len(s_stack)
    if profile.truncated_tail and opts.convention == FLAMEGRAPH:
        rows -= 1  # the perl script only counts a sample at the blank line ending it
    for row in range(rows):
        if s_event[row] not in event_ids:
            continue
        pname = namer.process_name(row) if opts.include_comm else None
        sid = s_stack[row]
        key = (sid, pname or "")
        folded = frames_of.get(key)
        if folded is None and key not in frames_of:
            folded = namer.stack(stacks[sid], pname)
            frames_of[key] = folded
        if folded is None:
            continue
        if by_period:
            w = s_period[row] or s_count[row]
        else:
            w = s_count[row]
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
    def __init__(self, profile: Profile, opts: FoldOptions) -> None:
        self.p = profile
        self.o = opts
        self.inferno = opts.convention == INFERNO
        self._loc_cache: dict[tuple[int, bool], list[str]] = {}

    def process_name(self, row: int) -> str:
        p, o = self.p, self.o
        name = p.comm(row).replace(" ", "_")
        pid = p.s_pid[row]
        pid_s = "?" if pid == NO_ID else str(pid)
        if o.include_tid:
            tid = p.s_tid[row]
            return f"{name}-{pid_s}/{'?' if tid == NO_ID else tid}"
        if o.include_pid:
            return f"{name}-{pid_s}"
        return name

    def stack(self, location_ids: Iterable[int], pname: str | None) -> str | None:
        is_java = bool(pname) and pname.startswith("java")
        frames: list[str] = []
        for loc in reversed(tuple(location_ids)):  # root first
            frames.extend(self._location(loc, is_java))
        if not frames and (self.inferno or pname is None):
            return None  # inferno drops frame-less samples; perl keeps the comm alone
        if pname is not None:
            frames.insert(0, pname)
        return ";".join(frames)

    def _location(self, loc_id: int, is_java: bool) -> list[str]:
        key = (loc_id, is_java)
        names = self._loc_cache.get(key)
        if names is None:
            names = self._name_location(loc_id, is_java)
            self._loc_cache[key] = names
        return names

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
            if self.inferno:
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
