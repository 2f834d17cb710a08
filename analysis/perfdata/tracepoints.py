"""The layout of the sched:sched_switch tracepoint's raw record.

perf.data carries the kernel's format files for the tracepoints it recorded (the
HEADER_TRACING_DATA section: "name: sched_switch / ID: N / format: field:... offset:..;
size:..;"), so the fields are read where that kernel put them. Without that section the
layout of every kernel since 4.x is used (include/trace/events/sched.h: prev_comm[16],
prev_pid, prev_prio, long prev_state, next_comm[16], next_pid, next_prio after the 8
bytes of common fields).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

_FORMAT = re.compile(rb"name: sched_switch\s*\nID: (\d+)\s*\nformat:\s*\n(.*?)\n\s*\nprint fmt",
                     re.S)
_FIELD = re.compile(rb"field:[^;]*?(\w+)(?:\[\d+\])?;\s*offset:(\d+);\s*size:(\d+);")


@dataclass(frozen=True)
class SwitchLayout:
    event_id: int | None  # the tracepoint's id (attr.config) when the format says
    prev_pid: tuple[int, int] = (24, 4)  # (offset, size)
    prev_state: tuple[int, int] = (32, 8)
    next_pid: tuple[int, int] = (56, 4)

    def read(self, raw: bytes, endian: str) -> tuple[int, int, int] | None:
        """(prev_pid, prev_state, next_pid) of one raw record, or None if too short."""
        out = []
        for off, size in (self.prev_pid, self.prev_state, self.next_pid):
            if off + size > len(raw) or size not in (4, 8):
                return None
            out.append(struct.unpack_from(endian + ("i" if size == 4 else "q"), raw, off)[0])
        return out[0], out[1], out[2]


DEFAULT = SwitchLayout(None)


def switch_layout(tracing_data: bytes | None) -> SwitchLayout:
    if not tracing_data:
        return DEFAULT
    m = _FORMAT.search(tracing_data)
    if m is None:
        return DEFAULT
    fields = {f.group(1).decode(): (int(f.group(2)), int(f.group(3)))
              for f in _FIELD.finditer(m.group(2))}
    try:
        return SwitchLayout(int(m.group(1)), fields["prev_pid"], fields["prev_state"],
                            fields["next_pid"])
    except KeyError:
        return SwitchLayout(int(m.group(1)))
