"""Unwind tables: for every address of a binary, how to find its caller's frame.

The call frame information of an ELF (`.eh_frame`, `.debug_frame`) is a bytecode per
function; Sentry's `symbolic` (the library under its symbolicator) evaluates it into
Breakpad's text form, one row per address where a rule changes:

    STACK CFI INIT 26000 360 .cfa: $rsp 16 + .ra: .cfa -8 + ^
    STACK CFI 26006 .cfa: $rsp 24 +

An INIT row opens a function's range with its rules; each later row inside that range
changes some of them from its address on. Every row is expanded here into the whole rule
set in force at its address, so a lookup is one binary search. Rules are postfix
expressions over registers and `.cfa` (`^` reads memory); the shapes the compilers emit,
`REG N +` and `REG N + ^`, are compiled to tuples the walker evaluates without a stack;
anything else (signal trampolines, `setcontext`) is kept as tokens for `evaluate`.
A row without `.ra` is the outermost frame (`_start`, `clone`: the return address is
undefined there).

Tables are built once per file content and kept on disk beside the symbol indexes,
under the SHA-256 of the file, never a build-id (any file can claim any build-id).
"""
from __future__ import annotations

import bisect
import marshal
import os
from array import array
from pathlib import Path

#: bump when what a table holds changes: tables of older code are then not read
_VERSION = 2  # 2: PLT expression rows; addresses relative to the image base

#: register names per architecture in the order the walker keeps them. For x86-64 the
#: order is the DWARF numbering (System V psABI, fig. 3.36); for AArch64 x0-x30, sp, pc
#: (DWARF numbers 0-31 and the return address column). Breakpad writes `$rsp` on x86-64
#: and `sp`/`x29` on AArch64; the `$` is dropped before lookup.
REGISTERS = {
    "x86_64": ("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",
               "r11", "r12", "r13", "r14", "r15", "rip"),
    "aarch64": tuple(f"x{i}" for i in range(31)) + ("sp", "pc"),
}
#: which registers are the stack pointer, the frame pointer and the instruction
#: pointer, per architecture, as indexes into REGISTERS
SP, FP, IP = {"x86_64": 7, "aarch64": 31}, {"x86_64": 6, "aarch64": 29}, \
    {"x86_64": 16, "aarch64": 32}
ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

CFA = -1  # the index `.cfa` compiles to
# compiled expression kinds
ADD, DEREF, EXPR = 0, 1, 2

_OPS = set("+-*/%@^&") | {">="}

#: GNU ld's call frame rule for x86-64 lazy-binding PLT entries, which Breakpad's text
#: cannot say: `CFA = rsp + 8 + ((rip & 15) >= 11) * 8` (16-byte entries that push their
#: index at byte 6 of 16). binutils bfd/elf64-x86-64.c, elf_x86_64_eh_frame_lazy_plt
#: (DW_OP_lit11) and elf_x86_64_eh_frame_lazy_ibt_plt (DW_OP_lit10, IBT entries):
#: DW_CFA_def_cfa_expression, 11, breg7 8, breg16 0, lit15, and, litN, ge, lit3, shl, plus
_PLT_EXPRESSIONS = {bytes.fromhex("0f0b770880003f1a3b2a332422"): 11,
                    bytes.fromhex("0f0b770880003f1a3a2a332422"): 10}
_PLT0 = 16  # the first entry pushes the GOT and jumps: the FDE's own rows cover it


class CfiTable:
    """Rows sorted by address relative to the image base (`image_base`); `lookup(rel)`
    is the rule set in force there or None."""

    __slots__ = ("starts", "ends", "rule_ix", "rules")

    def __init__(self, starts: array, ends: array, rule_ix: array, rules: list) -> None:
        self.starts, self.ends, self.rule_ix, self.rules = starts, ends, rule_ix, rules

    def __len__(self) -> int:
        return len(self.starts)

    def lookup(self, vaddr: int):
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i < 0 or vaddr >= self.ends[i]:
            return None
        return self.rules[self.rule_ix[i]]

    def dumps(self) -> bytes:
        return marshal.dumps((_VERSION, self.starts.tobytes(), self.ends.tobytes(),
                              self.rule_ix.tobytes(), self.rules))

    @classmethod
    def loads(cls, data: bytes) -> "CfiTable | None":
        try:
            version, starts, ends, rule_ix, rules = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return None
        if version != _VERSION:
            return None
        a, b, c = array("Q"), array("Q"), array("I")
        a.frombytes(starts)
        b.frombytes(ends)
        c.frombytes(rule_ix)
        return cls(a, b, c, rules)


def parse_breakpad(text: str, arch: str) -> CfiTable:
    """Breakpad `STACK CFI` rows -> a table. Rows of other record kinds are ignored; a
    rule this module cannot read drops its row (the walker then falls back to frame
    pointers there) rather than guessing."""
    names = {n: i for i, n in enumerate(REGISTERS[arch])}
    interned: dict[tuple, int] = {}
    by_text: dict[tuple, int | None] = {}  # the rule set's text -> its index (most repeat)
    parsed: dict[str, dict[str, str]] = {}
    rules: list = []
    rows: list[tuple[int, int, int]] = []  # (start, end, rule index)
    current: dict[str, str] | None = None
    end = 0
    for line in text.splitlines():
        if not line.startswith("STACK CFI "):
            continue
        parts = line.split(" ", 4)
        try:
            if parts[2] == "INIT":
                start, size = int(parts[3], 16), int(parts[4].split(" ", 1)[0], 16)
                end = start + size
                body = parts[4].split(" ", 1)[1] if " " in parts[4] else ""
                current = parsed.get(body)
                if current is None:
                    current = parsed[body] = _rules(body)
                at = start
            elif current is not None:
                at = int(parts[2], 16)
                body = line.split(" ", 3)[3]
                delta = parsed.get(body)
                if delta is None:
                    delta = parsed[body] = _rules(body)
                current = {**current, **delta}
            else:
                continue
        except (IndexError, ValueError):
            current = None
            continue
        key = tuple(current.items())
        ix = by_text.get(key, -1)
        if ix == -1:
            compiled = _compile(current, names)
            ix = None
            if compiled is not None:
                ix = interned.get(compiled)
                if ix is None:
                    ix = interned[compiled] = len(rules)
                    rules.append(compiled)
            by_text[key] = ix
        if ix is not None:
            rows.append((at, end, ix))
    rows.sort()
    # a row's range ends where the next row starts (functions do not overlap)
    starts, ends, rule_ix = array("Q"), array("Q"), array("I")
    for i, (at, stop, ix) in enumerate(rows):
        starts.append(at)
        ends.append(min(stop, rows[i + 1][0]) if i + 1 < len(rows) else stop)
        rule_ix.append(ix)
    return CfiTable(starts, ends, rule_ix, rules)


def _rules(text: str) -> dict[str, str]:
    """`.cfa: $rsp 16 + .ra: .cfa -8 + ^` -> {".cfa": "$rsp 16 +", ".ra": ".cfa -8 + ^"}"""
    out: dict[str, str] = {}
    key = None
    for tok in text.split():
        if tok.endswith(":"):
            key = tok[:-1]
            out[key] = ""
        elif key is not None:
            out[key] = f"{out[key]} {tok}" if out[key] else tok
    return out


def _compile(rules: dict[str, str], names: dict[str, int]):
    """(cfa, ra or None, ((register, expression), ...)) or None when unreadable."""
    if ".cfa" not in rules:
        return None
    cfa = _expression(rules[".cfa"], names)
    if cfa is None:
        return None
    ra = None
    if ".ra" in rules:
        ra = _expression(rules[".ra"], names)
        if ra is None:
            return None
    saved = []
    for reg, expr in rules.items():
        if reg.startswith("."):
            continue
        r = names.get(reg.lstrip("$"))
        e = _expression(expr, names)
        if r is None or e is None:
            continue  # a register the walker does not keep (vector registers)
        saved.append((r, e))
    return cfa, ra, tuple(sorted(saved))


def _expression(text: str, names: dict[str, int]):
    toks = text.split()
    if not toks:
        return None
    reg = _operand(toks[0], names)
    # REG, REG N +, REG N -, and each followed by ^
    deref = toks[-1] == "^"
    body = toks[:-1] if deref else toks
    if reg is not None and (len(body) == 1 or (len(body) == 3 and body[2] in "+-")):
        off = 0
        if len(body) == 3:
            try:
                off = int(body[1])
            except ValueError:
                return _tokens(toks, names)
            off = off if body[2] == "+" else -off
        return (DEREF if deref else ADD, reg, off)
    return _tokens(toks, names)


def _operand(tok: str, names: dict[str, int]) -> int | None:
    if tok == ".cfa":
        return CFA
    return names.get(tok.lstrip("$"))


def _tokens(toks: list[str], names: dict[str, int]):
    out = []
    for t in toks:
        if t in _OPS:
            out.append(t)
            continue
        r = _operand(t, names)
        if r is not None:
            out.append(("r", r))
            continue
        try:
            out.append(int(t, 0) if not t.lstrip("-").isdigit() else int(t))
        except ValueError:
            return None
    return (EXPR, tuple(out), 0)


def evaluate(tokens: tuple, regs: list, cfa: int | None, read) -> int | None:
    """A general postfix expression; None when it reads what is not there."""
    stack: list[int] = []
    mask = (1 << 64) - 1
    for t in tokens:
        if isinstance(t, tuple):
            v = cfa if t[1] == CFA else regs[t[1]]
            if v is None:
                return None
            stack.append(v)
        elif isinstance(t, int):
            stack.append(t)
        elif t == "^":
            if not stack:
                return None
            v = read(stack.pop())
            if v is None:
                return None
            stack.append(v)
        else:
            if len(stack) < 2:
                return None
            b, a = stack.pop(), stack.pop()
            if t == "+":
                stack.append((a + b) & mask)
            elif t == "-":
                stack.append((a - b) & mask)
            elif t == "*":
                stack.append((a * b) & mask)
            elif t in "/%":
                if b == 0:
                    return None
                stack.append(a // b if t == "/" else a % b)
            elif t == "&":
                stack.append(a & b)
            elif t == ">=":
                stack.append(int(a >= b))
            elif t == "@":
                if b <= 0:
                    return None
                stack.append(a - a % b)
    return stack[-1] if len(stack) == 1 else None


def with_plt_rule(table: CfiTable, start: int, end: int, threshold: int) -> CfiTable:
    """`table` with the PLT expression in force over [start + 16, end): the rows there
    are replaced, and those of PLT0 end where the entries begin."""
    regs = REGISTERS["x86_64"]
    rsp, rip = regs.index("rsp"), regs.index("rip")
    rule = ((EXPR, (("r", rsp), 8, "+", ("r", rip), 15, "&", threshold, ">=", 8, "*", "+"),
             0), (DEREF, CFA, -8), ())
    entries = start + _PLT0
    i = bisect.bisect_left(table.starts, entries)
    j = bisect.bisect_left(table.starts, end)
    rules = list(table.rules)
    rules.append(rule)
    ends = table.ends[:i]
    k = bisect.bisect_left(table.starts, start)
    for n in range(k, i):  # PLT0's own rows
        ends[n] = min(ends[n], entries)
    starts = table.starts[:i] + array("Q", [entries]) + table.starts[j:]
    ends = ends + array("Q", [end]) + table.ends[j:]
    rule_ix = table.rule_ix[:i] + array("I", [len(rules) - 1]) + table.rule_ix[j:]
    return CfiTable(starts, ends, rule_ix, rules)


def table_for(path: str, digest: str, arch: str) -> CfiTable | None:
    """The unwind table of the ELF at `path` (SHA-256 `digest`), from the disk cache or
    built now; None when the file has no call frame information symbolic can read."""
    from ..symbols.index_cache import cache_dir, cache_key  # (analysis.symbols imports us)

    arch = ARCH_ALIASES.get(arch, arch)
    if arch not in REGISTERS:
        return None
    cache = Path(cache_dir()) / f"{cache_key('cfi-' + arch, digest)}.cfi"
    try:
        table = CfiTable.loads(cache.read_bytes())
        if table is not None:
            return table
    except OSError:
        pass
    text = _breakpad_text(path)
    if text is None:
        return None
    table = parse_breakpad(text, arch)
    if arch == "x86_64":
        plt = _lazy_plt(path)
        if plt is not None:
            table = with_plt_rule(table, *plt)
    try:
        tmp = cache.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(table.dumps())
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only cache only costs time
    return table


def image_base(load_vaddrs) -> int:
    """What Breakpad's (and so the table's) addresses are relative to: the address of
    the first PT_LOAD segment (0 for shared libraries and PIE, 0x400000 for a classic
    executable such as Debian's python3.11)."""
    return next(iter(load_vaddrs), 0)


def _lazy_plt(path: str) -> tuple[int, int, int] | None:
    """(start, end, threshold) of the `.plt` section when its `.eh_frame` holds GNU ld's
    PLT expression, else None. Both sections must lie inside the file (elf.sections),
    and the PLT inside an executable PT_LOAD segment."""
    from ..errors import AnalysisError
    from ..symbols.budget import OverBudget
    from ..symbols.elf import sections

    try:
        secs, loads = sections(path)
        plt, eh = secs.get(".plt"), secs.get(".eh_frame")
        if plt is None or eh is None or eh.type == "SHT_NOBITS":
            return None
        with open(path, "rb") as f:
            f.seek(eh.offset)
            data = f.read(eh.size)
    except OverBudget:
        raise  # the file's reader skips it, with a note
    except (AnalysisError, OSError):  # damaged: no PLT rule
        return None
    base = image_base(seg.vaddr for seg in loads)
    if plt.addr < base or not any(seg.executable and seg.vaddr <= plt.addr and
                                  plt.addr + plt.size <= seg.vaddr + seg.filesz
                                  for seg in loads):
        return None  # no PLT of code that ran: an address or size was edited
    for pattern, threshold in _PLT_EXPRESSIONS.items():
        if pattern in data:
            start = plt.addr - base
            return start, start + plt.size, threshold
    return None


def _breakpad_text(path: str) -> str | None:
    import io

    import symbolic  # the CFI evaluator; imported here, only captures that need it pay

    try:
        archive = symbolic.Archive.open(path)
        objects = list(archive.iter_objects())
        if not objects or "unwind" not in objects[0].features:
            return None
        cache = symbolic.CfiCache.from_object(objects[0])
        buf = io.BytesIO()
        cache.write_to(buf)
    except symbolic.SymbolicError:
        return None
    return buf.getvalue().decode("ascii", "replace")
