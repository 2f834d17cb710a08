"""Decoding SAMPLE records: one reader per attr, built from its sample_type once.

Only what a CPU profile needs is decoded (ip, pid/tid, time, id, cpu, period, call chain,
the branch stack of LBR call stacks, the user IP register of DWARF-mode samples); every
other field is skipped by its size, so any sample_type combination is walked correctly.
"""
from __future__ import annotations

import struct

from .attr import (ADDR, BRANCH_CALL_STACK, BRANCH_COUNTERS, BRANCH_HW_INDEX, BRANCH_STACK, CALLCHAIN, CPU,
                   FMT_GROUP, FMT_ID, FMT_LOST, FMT_TOTAL_TIME_ENABLED,
                   FMT_TOTAL_TIME_RUNNING, ID, IDENTIFIER, IP, PERIOD, RAW, READ, REGS_USER,
                   STACK_USER, STREAM_ID, TID, TIME, Attr)

#: Bit of the instruction pointer in sample_regs_user, per architecture
USER_IP_REG = {"x86_64": 8, "i386": 8, "i686": 8, "aarch64": 32, "arm64": 32, "arm": 15,
               "armv7l": 15, "riscv64": 0, "ppc64le": 32, "ppc64": 32, "s390x": 1}


class SampleReader:
    def __init__(self, attr: Attr, endian: str, arch: str | None,
                 want_raw: bool = False) -> None:
        st = attr.sample_type
        self.endian = endian
        fmt, fields = endian, []
        #: byte offset of each prefix field in the record body (each is 8 or 4 bytes)
        self.offsets: dict[str, int] = {}
        for bit, code, name in ((IDENTIFIER, "Q", "identifier"), (IP, "Q", "ip"),
                                (TID, "ii", "pid tid"), (TIME, "Q", "time"),
                                (ADDR, "Q", "addr"), (ID, "Q", "id"),
                                (STREAM_ID, "Q", "stream_id"), (CPU, "ii", "cpu res"),
                                (PERIOD, "Q", "period")):
            if st & bit:
                for c, n in zip(code, name.split()):
                    self.offsets[n] = struct.calcsize(fmt)
                    fmt += c
                fields += name.split()
        self.prefix = struct.Struct(fmt)
        index = {name: i for i, name in enumerate(fields)}
        # absent fields read the sentinels appended to each unpacked tuple: 0 or -1, and
        # for the period the attr's own: perf gives a sample without PERIOD in its type
        # the attr's sample_period (`perf record -c N`, or an event given its period as
        # page-faults/period=200/ is), 0 in frequency mode (evsel__parse_sample)
        zero, minus_one, own_period = -2, -1, -3
        self.fixed_period = 0 if attr.freq else attr.sample_period_or_freq
        self.i_ip = index.get("ip", zero)
        self.i_pid = index.get("pid", minus_one)
        self.i_tid = index.get("tid", minus_one)
        self.i_time = index.get("time", zero)
        self.i_cpu = index.get("cpu", minus_one)
        self.i_period = index.get("period", own_period)
        self.st = st
        rf = attr.read_format
        if st & READ:
            per_value = 8 * (1 + bool(rf & FMT_ID) + bool(rf & FMT_LOST))
            extra = 8 * (bool(rf & FMT_TOTAL_TIME_ENABLED) + bool(rf & FMT_TOTAL_TIME_RUNNING))
            self.read_group = bool(rf & FMT_GROUP)
            self.read_per_value, self.read_extra = per_value, extra
        self.hw_index = bool(attr.branch_sample_type & BRANCH_HW_INDEX)
        self.branch_counters = bool(attr.branch_sample_type & BRANCH_COUNTERS)
        # branch records make the user call stack only in LBR call-stack mode; plain
        # branch sampling (-b, -j any) says nothing about the stack
        self.want_branches = bool(st & BRANCH_STACK) and \
            bool(attr.branch_sample_type & BRANCH_CALL_STACK)
        ip_bit = USER_IP_REG.get(arch or "x86_64")
        self.user_ip_index = None
        if ip_bit is not None and attr.sample_regs_user >> ip_bit & 1:
            self.user_ip_index = bin(attr.sample_regs_user & ((1 << ip_bit) - 1)).count("1")
        self.want_regs = bool(st & REGS_USER) and attr.exclude_callchain_user
        # DWARF mode: the user registers and the copied stack, for the unwinder
        self.want_stack = self.want_regs and bool(st & STACK_USER)
        self.regs_mask = attr.sample_regs_user
        self.n_regs = bin(attr.sample_regs_user).count("1")
        self.regs: tuple | None = None  # of the last sample read, in mask order
        self.stack: bytes | None = None
        # a tracepoint's fields (sched_switch's prev_state), kept in `raw` by read()
        self.want_raw = want_raw and bool(st & RAW)
        self.raw: bytes | None = None
        self.sched: str | None = None  # which scheduler tracepoint (the importer sets it)
        self.needs_tail = self.want_branches or self.want_regs or self.want_raw

    def spec(self, event: int, switch_fields: tuple | None = None) -> bytes | None:
        """The layout as the compiled record loop (_scan.c, its S_* order) reads it: for
        layouts without variable-size fields before the call chain and nothing wanted
        after it but sched_switch's fields (`switch_fields`: ((offset, size) of prev_pid,
        prev_state, next_pid), bytes needed); else None, and `read` decodes them."""
        if self.st & READ or self.want_branches or self.want_regs or \
                self.want_raw != (switch_fields is not None):
            return None
        o = self.offsets
        vals = [event, self.prefix.size] + \
            [o.get(n, -1) for n in ("ip", "pid", "tid", "time", "cpu", "period")] + \
            [1 if self.st & CALLCHAIN else 0]
        if switch_fields is None:
            vals += [-1] * 7
        else:
            (pp, ps, np_), need = switch_fields
            vals += [*pp, *ps, *np_, need]
        # (a u64 as the loop's int64 reads it back)
        fixed = self.fixed_period
        vals.append(fixed - (1 << 64) if fixed >= 1 << 63 else fixed)
        return struct.pack(f"<{len(vals)}q", *vals)

    def read(self, buf, start: int, end: int) -> tuple:
        """(ip, pid, tid, time, cpu, period, chain, branch_from, user_ip); BadSample
        (naming the field and its byte) when a count or size of the record does not fit
        in it, struct.error when the record is shorter than its fixed fields."""
        e, rec = self.endian, start - 8  # (positions in messages: from the record's start)
        vals = self.prefix.unpack_from(buf, start) + (self.fixed_period, 0, -1)
        pos = start + self.prefix.size
        st = self.st
        if st & READ:
            if self.read_group:
                nr = _u64(buf, pos, rec, end, e, "the read group's nr")
                pos = _fits(pos, 8 + self.read_extra + nr * self.read_per_value, rec, end,
                            f"the read group's nr (byte {pos - rec} of the record) says "
                            f"{nr:,} values of {self.read_per_value} bytes")
            else:
                pos += self.read_extra + self.read_per_value
        chain = None
        if st & CALLCHAIN:
            nr = _u64(buf, pos, rec, end, e, "the call chain's nr")
            pos = _fits(pos, 8 + 8 * nr, rec, end, f"the call chain's nr (byte "
                                                    f"{pos - rec} of the record) says {nr:,} "
                                                    f"addresses")
            chain = bytes(buf[pos - 8 * nr:pos])
        branch_from = user_ip = None
        if self.needs_tail:
            if st & RAW:
                size = _u32(buf, pos, rec, end, e, "the raw data's size")
                at, pos = pos, _fits(pos, 4 + size, rec, end,
                                     f"the raw data's size (byte {pos - rec} of the record) "
                                     f"says {size:,} bytes")
                if self.want_raw:
                    self.raw = bytes(buf[at + 4:pos])
            if self.want_branches:
                nr = _u64(buf, pos, rec, end, e, "the branch stack's nr")
                at = pos + 8 + (8 if self.hw_index else 0)
                pos = _fits(pos, at - pos + 24 * nr + (8 * nr if self.branch_counters else 0),
                            rec, end, f"the branch stack's nr (byte {pos - rec} of the "
                                      f"record) says {nr:,} branches")
                if nr:
                    branch_from = struct.unpack_from(f"{e}{3 * nr}Q", buf, at)[0::3]
            if self.want_regs:
                abi = _u64(buf, pos, rec, end, e, "the user registers' abi")
                pos += 8
                if abi and self.user_ip_index is not None:
                    user_ip = _u64(buf, pos + 8 * self.user_ip_index, rec, end, e,
                                   "the user IP register")
                if self.want_stack:
                    self._regs_and_stack(buf, pos, end, abi)
        return (vals[self.i_ip], vals[self.i_pid], vals[self.i_tid], vals[self.i_time],
                vals[self.i_cpu], vals[self.i_period], chain, branch_from, user_ip)

    def _regs_and_stack(self, buf, pos: int, end: int, abi: int) -> None:
        """Keep the user registers and the used part of the stack copy (`dyn_size` of
        `size` bytes): what the unwinder walks. A layout that does not fit keeps none."""
        e, n = self.endian, self.n_regs if abi else 0
        self.regs = self.stack = None
        if pos + 8 * n > end:
            return
        regs = struct.unpack_from(f"{e}{n}Q", buf, pos) if n else ()
        pos += 8 * n
        if pos + 8 > end:
            return
        (size,) = struct.unpack_from(e + "Q", buf, pos)
        pos += 8
        if not size or pos + size + 8 > end:
            return
        (dyn,) = struct.unpack_from(e + "Q", buf, pos + size)
        if regs:
            self.regs = regs
            self.stack = bytes(buf[pos:pos + min(dyn, size)])


class BadSample(ValueError):
    """A sample whose count or size field says more than its record holds: the message
    names the field and its byte (perf refuses such a sample too)."""


def _fits(pos: int, n: int, rec: int, end: int, what: str) -> int:
    """pos + n, when that is still inside the record (from `rec` to `end`): a count read
    from the file is checked before the position it moves is used (a read group's nr of
    2^62 moved it to 2^66, which no buffer can be indexed with: an OverflowError)."""
    if pos + n > end:
        raise BadSample(f"{what}, which run past the end of the {end - rec:,}-byte record")
    return pos + n


def _u64(buf, pos: int, rec: int, end: int, e: str, what: str) -> int:
    if pos + 8 > end:
        raise BadSample(f"{what} (byte {pos - rec} of the record) lies past the end of "
                        f"the {end - rec:,}-byte record")
    return struct.unpack_from(e + "Q", buf, pos)[0]


def _u32(buf, pos: int, rec: int, end: int, e: str, what: str) -> int:
    if pos + 4 > end:
        raise BadSample(f"{what} (byte {pos - rec} of the record) lies past the end of "
                        f"the {end - rec:,}-byte record")
    return struct.unpack_from(e + "I", buf, pos)[0]
