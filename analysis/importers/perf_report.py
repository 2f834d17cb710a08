"""`perf report --stdio` text, the thing users paste from their terminals.

perf report has already aggregated the samples, so stacks are rebuilt from what it
prints: each entry's percentage, and under it the call graph whose branches carry the
share of samples that took them. A leaf path's weight is its share of the header's
`Samples:` count. perf hides branches below its graph threshold (0.5% by default) and
rounds percentages to two decimals, so the result is marked approximate and says how
much of the graph it could not place.

Handles `--no-children` (callee graphs under each self entry, or caller graphs with
`-g caller`), `--children` (caller graphs under each entry: stacks are rebuilt from the
entries that no other entry calls), flat output without graphs, `--sort sym` (perf then
omits the entry's own frame from its graph), `-n` sample columns, and raw addresses
(`[.] 0x0000000000002458`, `0x7f3fde8e0458`) where symbols were missing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError, UnrecognizedFormat
from ..profile import KERNEL, KERNEL_ADDR, RELATIVE_LIMIT, UNKNOWN, Profile, unresolved_name
from ..textio import Source, text_lines
from .header import HeaderReader

NAME = "perf-report"

_SAMPLES = re.compile(r"^# Samples: (\d+)([KMG]?)\s+of event '(.*)'")
_EVENT_COUNT = re.compile(r"^# Event count \(approx\.\): (\d{1,20})\s*$")  # (a u64)
_ENTRY = re.compile(r"^\s+\d+\.\d+%")
_BRANCH = re.compile(r"--(\d+\.\d+)%--")
_HEX = re.compile(r"^0x([0-9a-fA-F]+)$")
_UNITS = {"": 1, "K": 1000, "M": 1000_000, "G": 1000_000_000}
#: the columns of an entry that are its frame or its numbers, not what it is of
_FRAME_COLUMNS = frozenset({"Children", "Self", "Overhead", "Samples", "Period", "Symbol",
                            "Shared Object"})
#: perf's default call-graph threshold, used in the note when graphs lost weight
_DEFAULT_THRESHOLD = 0.5
#: Stands in a stack for frames perf report did not print (branches under its threshold),
#: so the weight stays visible in flame graphs instead of looking like a real stack end.
HIDDEN_FRAME = "[hidden by perf report threshold]"


def sniff(head: str) -> bool:
    return bool(re.search(r"^# (Overhead|Children|Samples)", head, re.M)) and \
        ("# Samples:" in head or "# Overhead" in head or "# Children" in head)


@dataclass
class _Node:
    name: str
    pct: float | None  # None: a chain continuation, same share as its parent
    children: list["_Node"] = field(default_factory=list)


@dataclass
class _Entry:
    values: dict[str, str]
    pct: float  # Overhead (no-children) or Children
    self_pct: float
    samples: int | None  # the -n column, when present
    graph: _Node | None = None


@dataclass
class _Section:
    event: str
    samples: int
    exact_samples: bool
    event_count: int | None = None  # `# Event count (approx.)`: the summed periods
    columns: list[tuple[str, int, int]] = field(default_factory=list)
    entries: list[_Entry] = field(default_factory=list)

    @property
    def children_mode(self) -> bool:
        return any(c[0] == "Children" for c in self.columns)


def parse(source: Source) -> Profile:
    p = Profile(NAME)
    header = HeaderReader(p)
    lines = _CountingLines(text_lines(source))
    sections = _read_sections(lines, header)
    if not sections and lines.content:
        raise UnrecognizedFormat("perf report text without a `# Samples:` header")
    builder = _StackBuilder(p)
    for sec in sections:
        p.meta.declared_samples[sec.event] = sec.samples
        if sec.event_count is not None:
            p.meta.declared_event_counts[sec.event] = sec.event_count
        builder.add_section(sec)
    header.finish()
    p.approximate = any(s.entries for s in sections)
    if p.approximate:
        p.notes.insert(0, "stacks rebuilt from perf report percentages (two decimals): "
                          "counts are approximate")
    if not len(p):
        p.notes.append("the capture holds no samples (idle, 0% CPU)")
    return p


class _CountingLines:
    """Remembers whether anything but comments went by (a sample-less report has none)."""

    def __init__(self, lines) -> None:
        self._lines = lines
        self.content = False

    def __iter__(self):
        for line in self._lines:
            if not self.content and line.strip() and not line.startswith("#"):
                self.content = True
            yield line


# ---- reading the text ----------------------------------------------------------------
def _read_sections(lines, header: HeaderReader) -> list[_Section]:
    sections: list[_Section] = []
    sec: _Section | None = None
    entry: _Entry | None = None
    graph_lines: list[str] = []
    pending_header: str | None = None

    def close_entry():
        nonlocal entry, graph_lines
        if entry is not None and graph_lines:
            entry.graph = _parse_graph(graph_lines, entry.pct)
        entry, graph_lines = None, []

    for line in lines:
        if line.startswith("#"):
            m = _SAMPLES.match(line)
            if m:
                close_entry()
                n = int(m.group(1)) * _UNITS[m.group(2)]
                sec = _Section(m.group(3), n, m.group(2) == "")
                sections.append(sec)
                continue
            m = _EVENT_COUNT.match(line)
            if m and sec is not None:
                sec.event_count = int(m.group(1))
                continue
            if sec is not None and re.match(r"^# (Overhead|Children|Samples)\b", line):
                pending_header = line
                continue
            if sec is not None and pending_header and re.match(r"^# \.+", line):
                sec.columns = _columns(pending_header, line)
                pending_header = None
                continue
            header.feed(line)
            continue
        if sec is None or not sec.columns:
            continue
        if _ENTRY.match(line):
            close_entry()
            entry = _parse_entry(line, sec)
            if entry is not None:
                sec.entries.append(entry)
            continue
        if entry is not None and line.strip():
            graph_lines.append(line)
    close_entry()
    return sections


def _columns(names_line: str, dots_line: str) -> list[tuple[str, int, int]]:
    """Column spans from the dotted underline; names from the text above each span."""
    starts = [m.start() for m in re.finditer(r"\.+", dots_line)]
    cols = []
    for i, a in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else -1
        name = (names_line[a:end] if end != -1 else names_line[a:]).strip()
        cols.append((name, a, end))
    return cols


def _parse_entry(line: str, sec: _Section) -> _Entry | None:
    values: dict[str, str] = {}
    for name, a, b in sec.columns:
        values[name] = (line[a:] if b == -1 else line[a:b]).strip()
    try:
        if sec.children_mode:
            pct = float(values["Children"].rstrip("%"))
            self_pct = float(values.get("Self", "0").rstrip("%"))
        else:
            pct = self_pct = float(values.get("Overhead", "0").rstrip("%"))
    except ValueError:
        return None
    _check_share(max(pct, self_pct), line)
    samples = values.get("Samples")
    return _Entry(values, pct, self_pct, int(samples) if samples and samples.isdigit() else None)


def _check_share(pct: float, line: str) -> float:
    """A percentage perf printed is a share of the samples: 0-100 (two decimals, so
    100.01 at most from rounding); anything else is not perf's output, and its counts
    would be absurd."""
    if not 0.0 <= pct <= 100.01:
        raise ParseError(f"perf report text: a percentage of {pct:g}% in the line "
                         f"{line.strip()[:100]!r}; perf prints shares of 0-100%")
    return pct


def _parse_graph(lines: list[str], entry_pct: float) -> _Node | None:
    """perf's ASCII call graph -> tree. A node's text column places it: a branch
    `|--P%--name` hangs under the node whose name starts at the branch's `|` column; a
    bare `name` continues the chain of the node whose name starts at that column."""
    root: _Node | None = None
    open_at: dict[int, _Node] = {}
    for line in lines:
        body = line.rstrip()
        stripped = body.lstrip(" |")
        if not stripped:
            continue
        col = len(body) - len(stripped)
        if root is None:
            root = _Node("", entry_pct)
            first = len(body) - len(body.lstrip(" "))
            open_at = {first: root}
        if stripped.startswith("---"):
            name, name_col, pct, parent_col = stripped[3:], col + 3, None, col
        else:
            m = _BRANCH.match(stripped)
            if m is not None:
                name = stripped[m.end():]
                name_col = col + m.end()
                pct = _check_share(float(m.group(1)), line)
                parent_col = col - 1
            else:
                name, name_col, pct, parent_col = stripped, col, None, col
        parent = open_at.get(parent_col)
        if parent is None:
            cands = [c for c in open_at if c <= parent_col]
            if not cands:
                continue
            parent = open_at[max(cands)]
        node = _Node(name.strip(), pct)
        parent.children.append(node)
        for c in [c for c in open_at if c >= name_col]:
            del open_at[c]
        open_at[name_col] = node
    if root is not None:
        _absolute_percentages(root)
    return root


def _absolute_percentages(root: _Node) -> None:
    """Give chain continuations their parent's share, and convert `-g fractal` graphs
    (each branch relative to its parent) to shares of all samples."""
    fractal = False
    stack = [root]
    while stack and not fractal:
        n = stack.pop()
        given = [c.pct for c in n.children if c.pct is not None]
        fractal = len(given) > 0 and sum(given) > 100.0 - 0.1 * len(given) and \
            root.pct < 99.0
        stack.extend(n.children)
    stack = [root]
    while stack:
        n = stack.pop()
        for c in n.children:
            if c.pct is None:
                c.pct = n.pct
            elif fractal:
                c.pct = n.pct * c.pct / 100.0
            stack.append(c)


def _leaf_paths(root: _Node) -> list[tuple[list[str], float]]:
    """(names from the top of the graph down to where a path ends, weight in %). Weight
    that ends at a node which also has printed branches went through branches perf did
    not print: such paths end in HIDDEN_FRAME."""
    out: list[tuple[list[str], float]] = []
    stack: list[tuple[_Node, list[str]]] = [(root, [])]
    while stack:
        node, path = stack.pop()
        here = path + [node.name] if node.name else path
        rest = node.pct - sum(c.pct for c in node.children)
        if rest > 0.005 * (len(node.children) + 1):
            if node.children and node.name:
                out.append((here + [HIDDEN_FRAME], rest))
            else:
                out.append((here, rest))
        for c in reversed(node.children):
            stack.append((c, here))
    return out


# ---- building stacks ----------------------------------------------------------------------
class _StackBuilder:
    def __init__(self, p: Profile) -> None:
        self.p = p
        self.dso_of: dict[str, str] = {}
        self.locs: dict[tuple[str, str], int] = {}

    def add_section(self, sec: _Section) -> None:
        event_id = self.p.event(sec.event)
        self.alias = _address_aliases(sec)
        for e in sec.entries:
            sym = _symbol(e.values)
            dso = e.values.get("Shared Object", "")
            if sym and dso:
                self.dso_of.setdefault(sym, dso)
        groups: list[tuple[_Entry, float, list[tuple[list[str], float]]]] = []
        if sec.children_mode:
            # group by leaf frame, so each keeps the Self share perf printed
            by_leaf: dict[str, tuple[_Entry, list]] = {}
            for e, names, w in self._children_paths(sec):
                by_leaf.setdefault(names[0], (e, []))[1].append((names, w))
            groups = [(e, sum(w for _, w in paths), paths) for e, paths in by_leaf.values()]
        else:
            groups = [(e, e.pct, self._self_paths(e)) for e in sec.entries]
        hidden = sum(w for _, _, paths in groups for names, w in paths if HIDDEN_FRAME in names)
        # whole counts per entry first, so each entry keeps the share perf printed
        # (or the exact count of its -n column), then per path within it
        group_counts = _apportion([w for _, w, _ in groups], sec.samples)
        placed = 0
        for (e, _, paths), gn in zip(groups, group_counts):
            if e.samples is not None and not sec.children_mode:
                gn = e.samples
            placed += gn
            path_total = sum(w for _, w in paths) or 1.0
            counts = _apportion([w * 100.0 / path_total for _, w in paths], gn)
            for (stack_names, _), n in zip(paths, counts):
                if n > 0:
                    # --no-children entries are the leaf; --children ones the root
                    own = len(stack_names) - 1 if sec.children_mode else 0
                    self._add(e, stack_names, n, event_id, own)
        if hidden >= 0.01:
            self.p.notes.append(
                f"event {sec.event}: {hidden:.2f}% of samples went through call-graph "
                f"branches that perf report did not print (below its threshold, "
                f"{_DEFAULT_THRESHOLD}% by default); they show as '{HIDDEN_FRAME}' and "
                f"totals per caller are approximate")
        shown = sum(e.self_pct for e in sec.entries)
        if sec.entries and shown < 99.0:
            self.p.notes.append(f"event {sec.event}: the entries shown add up to {shown:.2f}% "
                                f"(perf's --percent-limit hid the rest, kept as "
                                f"'{HIDDEN_FRAME}')")
        if sec.entries and sec.samples - placed > sec.samples // 100:
            # the samples of the entries perf did not print stay in the totals, so a
            # share is of all the samples, as perf printed it, not of those shown
            hidden = self._location(HIDDEN_FRAME, None, "", is_return=False)
            self.p.add_sample(self.p.stack((hidden,)), count=sec.samples - placed,
                              event_id=event_id)

    def _canonical(self, paths):
        alias = self.alias
        if not alias:
            return paths
        return [([alias.get(n, n) for n in names], w) for names, w in paths]

    def _add(self, e: _Entry, stack_names: list[str], n: int, event_id: int,
             own: int) -> None:
        p = self.p
        dso = e.values.get("Shared Object", "")
        kind = _symbol_kind(e.values)
        ids = tuple(self._location(name, dso if i == own else None, kind if i == own else "",
                                   is_return=i > 0)
                    for i, name in enumerate(stack_names))
        comm = e.values.get("Command")
        pid = -1
        pidcomm = e.values.get("Pid:Command")
        if pidcomm and ":" in pidcomm:
            pid_s, comm = pidcomm.split(":", 1)
            pid = int(pid_s) if pid_s.strip().lstrip("-").isdigit() else -1
        p.add_sample(p.stack(ids), count=n, pid=pid, event_id=event_id,
                     comm_id=p.string(comm) if comm else -1)

    def _self_paths(self, e: _Entry) -> list[tuple[list[str], float]]:
        """--no-children: the entry is the leaf; its graph lists callers (or, with
        `-g caller`, runs from the root down to the entry)."""
        sym = _symbol(e.values)
        if e.graph is None or not e.graph.children:
            return [([sym], e.pct)]
        paths = self._canonical(_leaf_paths(e.graph))
        caller_order = _is_caller_order(paths, sym)
        out = []
        for names, w in paths:
            if caller_order:
                names = names[::-1]
            out.append((_with_entry_frame(names, sym), w))
        return out

    def _children_paths(self, sec: _Section):
        """--children: graphs run from each entry down to its callees. Rebuild from the
        entries no already-taken graph contains (the roots: thread entry points)."""
        covered: set[tuple[tuple, str]] = set()  # (the entry's group, a frame)
        taken = 0.0
        out: list[tuple[_Entry, list[str], float]] = []
        for e in sorted(sec.entries, key=lambda e: -e.pct):
            sym, group = _symbol(e.values), _group(e)
            if (group, sym) in covered or e.pct <= 0 or taken >= 99.995:
                continue
            if e.graph is None or not e.graph.children:
                if e.self_pct > 0:
                    out.append((e, [sym], e.self_pct))
                    taken += e.self_pct
                covered.add((group, sym))
                continue
            paths = self._canonical(_leaf_paths(e.graph))
            for names, w in paths:
                if names and names[-1] == HIDDEN_FRAME:
                    names = names[:-1]  # a caller graph: the Self column decides below
                names = _with_entry_frame(names, sym)
                covered.update((group, n) for n in names)
                out.append((e, names[::-1], w))  # leaf first
            taken += e.pct
        return _split_hidden_callees(sec, out)

    def _location(self, name: str, dso: str | None, kind_hint: str, is_return: bool) -> int:
        p = self.p
        if dso is None:
            dso = self.dso_of.get(name, "")
        key = (name, dso, is_return)
        loc = self.locs.get(key)
        if loc is not None:
            return loc
        m = _HEX.match(name)
        address = int(m.group(1), 16) if m else 0
        if not dso:
            dso = "[kernel.kallsyms]" if (address >= KERNEL_ADDR or kind_hint == KERNEL) \
                else "[unknown]"
        mapping_id = p.mapping(dso)
        mapping = p.mappings[mapping_id]
        if m is not None:
            # `[.] 0x0000000000002458`: perf's DSO-relative address
            relative = address < RELATIVE_LIMIT and mapping.kind != UNKNOWN
            label = unresolved_name(p, mapping_id, address, address if relative else None)
            fid = p.function(label, mapping_id, resolved=False, system_name=name)
            loc = p.add_location(mapping_id, address, (fid,),
                                 dso_offset=address if relative else None,
                                 is_return=is_return)
        else:
            fid = p.function(name.removesuffix(" (inlined)"), mapping_id)
            loc = p.add_location(mapping_id, 0, (fid,), is_return=is_return)
        self.locs[key] = loc
        return loc


def _split_hidden_callees(sec: _Section, paths):
    """Make the Self column authoritative in --children mode.

    A path that ends at frame X stands for X's self time plus callees perf did not print;
    a frame Y whose Self share the graphs cannot place went through such unprinted
    branches. The excess at each X is handed to the missing Ys in proportion, as stacks
    `... X;HIDDEN_FRAME;Y`, so every frame keeps both the self and the children share
    perf printed, and the guess is marked where it is made."""
    ending: dict[tuple[tuple, str], float] = {}  # (group, leaf frame) -> weight
    for e, names, w in paths:
        key = (_group(e), names[0])
        ending[key] = ending.get(key, 0.0) + w
    stated = {(_group(e), _symbol(e.values)): (e, e.self_pct) for e in sec.entries}
    kept, excess = [], []
    for e, names, w in paths:
        key = (_group(e), names[0])
        total = ending[key]
        s = stated.get(key, (None, None))[1]
        if s is None or total <= s + 0.01:
            kept.append((e, names, w))
            continue
        if s > 0:
            kept.append((e, names, w * s / total))
        excess.append((e, names, w * (1 - s / total)))
    deficits = [(entry, key[1], s - min(ending.get(key, 0.0), s))
                for key, (entry, s) in stated.items()]
    deficits = [(entry, sym, d) for entry, sym, d in deficits if d > 0.01]
    by_group: dict[tuple, tuple[list, list]] = {}
    for i, rows in enumerate((excess, deficits)):
        for x in rows:
            by_group.setdefault(_group(x[0]), ([], []))[i].append(x)
    out = kept
    for ex, de in by_group.values():
        out += _fill(sorted(ex, key=lambda x: -x[2]), sorted(de, key=lambda x: -x[2]))
    return out


def _fill(excess, deficits):
    """Paths for one group's missing self shares, cut from its unexplained branches,
    the largest first (few large pieces keep the flame graph readable and the rounding
    small)."""
    out = []
    di, left = 0, (deficits[0][2] if deficits else 0.0)
    for e, names, w in excess:
        while w > 1e-9 and di < len(deficits):
            take = min(w, left)
            out.append((e, [deficits[di][1], HIDDEN_FRAME] + names, take))
            w -= take
            left -= take
            if left <= 1e-9:
                di += 1
                left = deficits[di][2] if di < len(deficits) else 0.0
        if w > 1e-9:
            out.append((e, [HIDDEN_FRAME] + names, w))
    while di < len(deficits):  # nothing printed left to hang these under: callers unknown
        out.append((deficits[di][0], [deficits[di][1], HIDDEN_FRAME], left))
        di += 1
        left = deficits[di][2] if di < len(deficits) else 0.0
    return out


def _group(e: _Entry) -> tuple:
    """What an entry is of besides its frame (perf's other sort keys: the command, the
    process, the thread): `--sort comm,dso,sym` prints one tree per thread name, each
    with the same frames."""
    return tuple(v for k, v in e.values.items()
                 if k not in _FRAME_COLUMNS)


def _symbol(values: dict[str, str]) -> str:
    sym = values.get("Symbol", "")
    if len(sym) > 4 and sym[0] == "[" and sym[2] == "]" and sym[3] == " ":
        sym = sym[4:]
    return sym.strip()


def _symbol_kind(values: dict[str, str]) -> str:
    sym = values.get("Symbol", "")
    return KERNEL if sym.startswith("[k]") else ""


def _address_aliases(sec: _Section) -> dict[str, str]:
    """Graph nodes print unresolved user frames as absolute addresses (`0x7f3fde8e0458`),
    entries as DSO-relative ones (`0x0000000000002458`). Where exactly one entry shares a
    node's offset within the page, the node is that entry's frame."""
    by_page_offset: dict[int, list[str]] = {}
    absolute: dict[int, str] = {}
    for e in sec.entries:
        sym = _symbol(e.values)
        m = _HEX.match(sym)
        if m and int(m.group(1), 16) < RELATIVE_LIMIT:
            by_page_offset.setdefault(int(m.group(1), 16) & 0xfff, []).append(sym)
        elif m:
            absolute[int(m.group(1), 16)] = sym
    alias: dict[str, str] = {}
    stack = [e.graph for e in sec.entries if e.graph is not None]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        m = _HEX.match(n.name)
        if m is None or n.name in alias:
            continue
        value = int(m.group(1), 16)
        if value in absolute:
            alias[n.name] = absolute[value]
        elif value >= RELATIVE_LIMIT:
            cands = by_page_offset.get(value & 0xfff, [])
            if len(cands) == 1:
                alias[n.name] = cands[0]
    return alias


def _with_entry_frame(names: list[str], sym: str) -> list[str]:
    """The entry's own frame first: perf omits it from the graph under `--sort sym`, and
    prints it as an absolute address where the entry has the DSO-relative one."""
    if names and _same_frame(names[0], sym):
        return [sym] + names[1:]
    return [sym] + names


def _same_frame(a: str, b: str) -> bool:
    """Names of one frame: equal, or a DSO-relative `0x0000000000002458` entry and the
    absolute `0x7f3fde8e0458` graph node for it (same offset within the 4 KiB page)."""
    if a == b:
        return True
    ma, mb = _HEX.match(a), _HEX.match(b)
    if ma and mb:
        xa, xb = int(ma.group(1), 16), int(mb.group(1), 16)
        if xa == xb:
            return True
        return (xa & 0xfff) == (xb & 0xfff) and (xa < RELATIVE_LIMIT) != (xb < RELATIVE_LIMIT)
    return False


def _is_caller_order(paths: list[tuple[list[str], float]], sym: str) -> bool:
    """`-g caller` with --no-children: the paths end at the entry instead of starting."""
    starts = sum(w for names, w in paths if names and _same_frame(names[0], sym))
    ends = sum(w for names, w in paths if names and _same_frame(names[-1], sym))
    return ends > starts


def _apportion(weights: list[float], total_samples: int) -> list[int]:
    """Percentages -> whole sample counts that add up to what the percentages promise
    (largest remainder), so the entry shares survive the rounding."""
    exact = [w * total_samples / 100.0 for w in weights]
    target = round(sum(exact))
    if abs(target - total_samples) <= max(1, total_samples // 100):
        target = total_samples  # what perf printed adds up to 100% but for rounding
    counts = [int(x) for x in exact]
    short = target - sum(counts)
    order = sorted(range(len(exact)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in order[:max(short, 0)]:
        counts[i] += 1
    return counts
