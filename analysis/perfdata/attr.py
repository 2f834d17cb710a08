"""perf_event_attr: what each event recorded and therefore how its records are laid out.

Any attr size from 64 bytes (perf 2.6) to today's 136 and beyond is accepted; fields the
writer did not have read as zero, bytes we do not know are ignored.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

# sample_type bits
IDENTIFIER = 1 << 16
IP, TID, TIME, ADDR, READ, CALLCHAIN, ID, CPU, PERIOD, STREAM_ID, RAW, BRANCH_STACK = (
    1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8, 1 << 9,
    1 << 10, 1 << 11)
REGS_USER, STACK_USER, WEIGHT, DATA_SRC, TRANSACTION, REGS_INTR, PHYS_ADDR, AUX, CGROUP = (
    1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21)
DATA_PAGE_SIZE, CODE_PAGE_SIZE, WEIGHT_STRUCT = 1 << 22, 1 << 23, 1 << 24

# read_format bits
FMT_TOTAL_TIME_ENABLED, FMT_TOTAL_TIME_RUNNING, FMT_ID, FMT_GROUP, FMT_LOST = 1, 2, 4, 8, 16

# branch_sample_type bits that change the sample layout or meaning
BRANCH_CALL_STACK = 1 << 11
BRANCH_HW_INDEX = 1 << 17
BRANCH_COUNTERS = 1 << 19

_HW_NAMES = ["cycles", "instructions", "cache-references", "cache-misses", "branches",
             "branch-misses", "bus-cycles", "stalled-cycles-frontend",
             "stalled-cycles-backend", "ref-cycles"]
_SW_NAMES = ["cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
             "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
             "bpf-output", "cgroup-switches"]


@dataclass
class Attr:
    type: int
    size: int
    config: int
    sample_period_or_freq: int
    sample_type: int
    read_format: int
    flags: int
    branch_sample_type: int
    sample_regs_user: int
    sample_stack_user: int
    sample_regs_intr: int
    ids: list[int]
    name: str = ""

    @property
    def freq(self) -> bool:
        return bool(self.flags & (1 << 10))

    @property
    def sample_id_all(self) -> bool:
        return bool(self.flags & (1 << 18))

    @property
    def exclude_callchain_user(self) -> bool:
        return bool(self.flags & (1 << 22))

    @property
    def context_switch(self) -> bool:
        """perf record --switch-events (perf_event_attr.context_switch, bit 35)."""
        return bool(self.flags & (1 << 35))

    @property
    def is_dummy(self) -> bool:
        return self.type == 1 and self.config == 9

    def default_name(self) -> str:
        if self.type == 0 and self.config < len(_HW_NAMES):
            return _HW_NAMES[self.config]
        if self.type == 1 and self.config < len(_SW_NAMES):
            return _SW_NAMES[self.config]
        if self.type == 2:
            return f"tracepoint:{self.config}"
        if self.type == 4:
            return f"raw:0x{self.config:x}"
        return f"type{self.type}:0x{self.config:x}"

    # ---- where the sample id sits, for records of this attr --------------------------
    def sample_id_offset(self) -> int | None:
        """Byte offset of the id in a SAMPLE body, or None when samples carry no id."""
        st = self.sample_type
        if st & IDENTIFIER:
            return 0
        if not st & ID:
            return None
        return 8 * bin(st & (IP | TID | TIME | ADDR)).count("1")

    def trailer_size(self) -> int:
        """Size of the sample_id_all trailer at the end of non-sample kernel records."""
        if not self.sample_id_all:
            return 0
        return 8 * bin(self.sample_type & (TID | TIME | ID | STREAM_ID | CPU | IDENTIFIER)
                       ).count("1")

    def trailer_id_offset_from_end(self) -> int | None:
        st = self.sample_type
        if not self.sample_id_all:
            return None
        if st & IDENTIFIER:
            return 8
        if not st & ID:
            return None
        return 8 * bin(st & (ID | STREAM_ID | CPU | IDENTIFIER)).count("1")


def parse_attr(buf: bytes | memoryview, offset: int, avail: int, endian: str) -> Attr:
    """Decode one perf_event_attr of `avail` bytes at `offset`."""
    raw = bytes(buf[offset:offset + avail])
    if len(raw) < 64:
        raw = raw + bytes(64 - len(raw))
    type_, size = struct.unpack_from(endian + "II", raw, 0)
    if size == 0:
        size = 64
    body = raw[:max(size, 64)]
    if len(body) < 136:
        body = body + bytes(136 - len(body))  # fields newer than the writer read as 0
    (config, period, sample_type, read_format, flags) = struct.unpack_from(endian + "QQQQQ",
                                                                           body, 8)
    branch_sample_type, regs_user = struct.unpack_from(endian + "QQ", body, 72)
    (stack_user,) = struct.unpack_from(endian + "I", body, 88)
    (regs_intr,) = struct.unpack_from(endian + "Q", body, 96)
    if endian == ">":
        flags = _swap_bitfield(flags)
    return Attr(type_, size, config, period, sample_type, read_format, flags,
                branch_sample_type, regs_user, stack_user, regs_intr, [])


def _swap_bitfield(flags: int) -> int:
    """A big-endian writer's bit-field: bit 0 is the most significant bit of the u64."""
    return int(f"{flags:064b}"[::-1], 2)
