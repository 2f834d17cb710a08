"""One stack walk: registers and a copy of the stack in, return addresses out.

Each step finds the mapping of the current instruction, its unwind rule (for a caller,
at the return address - 1: the call instruction, which may end its function), computes
the canonical frame address and reads the saved return address and registers from the
stack copy. Where a binary has no rule for the address, the frame pointer is followed
instead (`[fp]` is the caller's fp, `[fp + 8]` its return address), as perf's
unwinders do. The walk stops cleanly, keeping what it found, at the outermost frame
(no return address rule), at a read outside the copied stack, at an address in no
mapping, when the stack pointer does not move up, or at `MAX_FRAMES`.
"""
from __future__ import annotations

import bisect
import functools
import struct
from typing import Callable

from .cfi import ADD, CFA, DEREF, FP, IP, SP, CfiTable, evaluate

#: maps of JIT code (perf-PID.map names them): no binary, often frame pointers (V8, the
#: JVM with -XX:+PreserveFramePointer)
JIT_PATHS = ("/tmp/perf-",)

#: perf's default limit (kernel.perf_event_max_stack is 127)
MAX_FRAMES = 127

#: perf's regs_user bit numbers for the registers the walker keeps, per architecture,
#: in cfi.REGISTERS order (arch/x86/include/uapi/asm/perf_regs.h: AX 0, BX 1, CX 2,
#: DX 3, SI 4, DI 5, BP 6, SP 7, IP 8, R8-R15 16-23; arm64: X0-X30 0-30, SP 31, PC 32)
PERF_BITS = {
    "x86_64": (0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8),
    "aarch64": tuple(range(33)),
}

#: (unwind table, file offset -> the table's address) of the binary behind one mapping
Module = tuple[CfiTable | None, Callable[[int], int | None]]


def registers(arch: str, mask: int, values: tuple) -> list[int | None]:
    """perf's registers (in mask bit order) -> the walker's list (None when absent)."""
    n = len(values)
    return [values[j] if j is not None and j < n else None for j in _positions(arch, mask)]


@functools.lru_cache(maxsize=64)
def _positions(arch: str, mask: int) -> tuple[int | None, ...]:
    """Where each of the walker's registers sits in a sample of this regs mask."""
    pos, i = {}, 0
    for bit in range(64):
        if mask >> bit & 1:
            pos[bit] = i
            i += 1
    return tuple(pos.get(bit) for bit in PERF_BITS[arch])


class Space:
    """A process's executable maps, with the unwind rule at each address looked up once
    (`rule_at`): the same return addresses recur in nearly every sample, so a walk costs
    a dict lookup per frame after the first."""

    def __init__(self, rows: tuple, module_of: Callable[[tuple], Module | None]) -> None:
        self.rows = rows
        self.starts = [r[0] for r in rows]
        self._module_of = module_of
        self._modules: dict[int, Module | None] = {}
        self._rules: dict[int, tuple] = {}

    def find(self, address: int) -> tuple[tuple, Module | None] | None:
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0 or address >= self.rows[i][1]:
            return None
        mod = self._modules.get(i, False)
        if mod is False:
            mod = self._modules[i] = self._module_of(self.rows[i])
        return self.rows[i], mod

    def rule_at(self, address: int) -> tuple | None:
        """(rule,) for an address its binary has a rule for; (None,) where the binary
        has none (hand-written assembly) or for JIT code, which has no binary: frame
        pointers then, as libunwind falls back to them; None when no file maps the
        address or the binary that ran was not given, where perf's unwinders stop too
        rather than follow a register that may hold anything."""
        got = self._rules.get(address)
        if got is None:
            hit = self.find(address)
            got = ()
            if hit is not None:
                row, mod = hit
                if mod is not None and mod[0] is not None:
                    rel = mod[1](address - row[0] + row[2])
                    got = (mod[0].lookup(rel) if rel is not None else None,)
                elif row[3].startswith(JIT_PATHS):
                    got = (None,)
            self._rules[address] = got
        return got or None


_U64 = struct.Struct("<Q").unpack_from
_MASK = 0xFFFFFFFFFFFFFFFF


def walk(arch: str, regs: list[int | None], stack: bytes, space: Space,
         max_frames: int = MAX_FRAMES) -> list[int]:
    """The return addresses above the sampled instruction, innermost first."""
    sp_i, fp_i, ip_i = SP[arch], FP[arch], IP[arch]
    base = regs[sp_i]
    ip = regs[ip_i]
    if base is None or ip is None:
        return []
    limit = len(stack) - 8  # the last offset a u64 can be read at
    u64 = _U64

    def read(addr: int) -> int | None:
        off = addr - base
        if 0 <= off <= limit:
            return u64(stack, off)[0]
        return None

    regs = list(regs)
    out: list[int] = []
    rule_at = space.rule_at
    for depth in range(max_frames):
        got = rule_at(ip - 1 if depth else ip)
        if got is None:
            break
        rule = got[0]
        sp = regs[sp_i]
        if rule is None:
            fp = regs[fp_i]
            if fp is None or sp is None or fp < sp:
                break
            ra, caller_fp, cfa = read(fp + 8), read(fp), fp + 16
            if ra is None or caller_fp is None:
                break
            regs[fp_i] = caller_fp
        else:
            (kind, reg, off), ra_rule, saved = rule
            if kind == ADD:  # the common CFA rule: REG + N
                v = regs[reg]
                if v is None:
                    break
                cfa = (v + off) & _MASK
            else:
                cfa = _value(rule[0], regs, None, read)
                if cfa is None:
                    break
            if ra_rule is None:
                break  # the outermost frame
            kind, reg, off = ra_rule
            if kind == DEREF and reg == CFA:  # the common return address rule
                o = cfa + off - base
                if not 0 <= o <= limit:
                    break
                ra = u64(stack, o)[0]
            else:
                ra = _value(ra_rule, regs, cfa, read)
                if ra is None:
                    break
            if saved:  # callee-saved registers, mostly `.cfa N + ^`: read them here
                new = []
                for r, e in saved:
                    if e[0] == DEREF and e[1] == CFA:
                        o = cfa + e[2] - base
                        new.append((r, u64(stack, o)[0] if 0 <= o <= limit else None))
                    else:
                        new.append((r, _value(e, regs, cfa, read)))
                for r, v in new:
                    regs[r] = v
        if sp is not None and (cfa < sp or (cfa == sp and depth)):
            break  # a frame that does not move up the stack would loop (an AArch64
            # leaf that has not pushed anything yet has its CFA at sp)
        if ra == 0:
            break
        regs[sp_i] = cfa
        regs[ip_i] = ra
        out.append(ra)
        ip = ra
    return out


def _value(e: tuple, regs: list, cfa: int | None, read) -> int | None:
    kind, reg, off = e
    if kind == ADD or kind == DEREF:
        v = cfa if reg == CFA else regs[reg]
        if v is None:
            return None
        v = (v + off) & _MASK
        return read(v) if kind == DEREF else v
    return evaluate(reg, regs, cfa, read)
