"""Field layouts of the scheduler tracepoints perfweb reads (sched_switch,
sched_stat_runtime, sched_wakeup/sched_waking) from their raw records.

perf.data carries the kernel's format files for the tracepoints it recorded (the
HEADER_TRACING_DATA section: "name: sched_switch / ID: N / format: field:... offset:..;
size:..;"), so fields are read where that kernel put them: they moved (6.x kernels give
sched_stat_runtime a __data_loc comm, so its pid is at 12, not 24). Without that section
the layouts of kernels 4.x-6.x with fixed-size comms are used
(include/trace/events/sched.h).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

_BLOCK = re.compile(rb"name: (\w+)\s*\nID: (\d+)\s*\nformat:\s*\n(.*?)\n\s*\nprint fmt", re.S)
_FIELD = re.compile(rb"field:[^;]*?(\w+)(?:\[\d*\])?;\s*offset:(\d+);\s*size:(\d+);")

DEFAULTS = {
    "sched_switch": {"prev_pid": (24, 4), "prev_state": (32, 8), "next_pid": (56, 4)},
    "sched_stat_runtime": {"pid": (24, 4), "runtime": (32, 8)},
    "sched_wakeup": {"pid": (24, 4)},
    "sched_waking": {"pid": (24, 4)},
}


@dataclass
class Layout:
    event_id: int | None  # the tracepoint's id (attr.config) when the format says
    fields: dict = field(default_factory=dict)  # name -> (offset, size)
    #: (endian, field names) -> the reader _reader made for them
    readers: dict = field(default_factory=dict, repr=False, compare=False)

    def read(self, raw: bytes, endian: str, names: tuple[str, ...]) -> tuple | None:
        """The named integer fields of one raw record, or None if it is too short."""
        reader = self.readers.get((endian, names))
        if reader is None:
            reader = self.readers[endian, names] = self._reader(endian, names)
        need, unpack, order = reader
        if need is None or len(raw) < need:
            return None
        v = unpack(raw)
        return tuple(v[i] for i in order)

    def offsets(self, names: tuple[str, ...]) -> tuple[list[tuple[int, int]], int] | None:
        """((offset, size) of each named field, bytes a record needs), or None when the
        fields are no layout to read by: the format comes from the uploaded file, and a
        field past any real record (tracepoint records are a few hundred bytes), of an
        odd size or overlapping another is refused."""
        fields = sorted((self.fields[n][0], self.fields[n][1]) for n in names)
        pos = 0
        for off, size in fields:
            if size not in (4, 8) or off < pos or off > 4096:
                return None
            pos = off + size
        return [self.fields[n] for n in names], pos

    def _reader(self, endian: str, names: tuple[str, ...]):
        """One struct for the fields, in offset order with pad bytes between."""
        if self.offsets(names) is None:
            return (None, None, None)
        fields = sorted((self.fields[n][0], self.fields[n][1], k) for k, n in enumerate(names))
        fmt, pos, order = endian, 0, [0] * len(names)
        for slot, (off, size, k) in enumerate(fields):
            fmt += f"{off - pos}x" if off > pos else ""
            fmt += "i" if size == 4 else "q"
            pos = off + size
            order[k] = slot
        st = struct.Struct(fmt)
        return (st.size, lambda raw, u=st.unpack_from: u(raw, 0), order)


def layouts(tracing_data: bytes | None) -> dict[str, Layout]:
    """Layouts of the tracepoints of DEFAULTS, from the capture's formats when present."""
    found: dict[str, Layout] = {}
    for m in _BLOCK.finditer(tracing_data or b""):
        name = m.group(1).decode()
        if name not in DEFAULTS or name in found:
            continue
        fields = {f.group(1).decode(): (int(f.group(2)), int(f.group(3)))
                  for f in _FIELD.finditer(m.group(3))}
        wanted = {k: fields.get(k, v) for k, v in DEFAULTS[name].items()}
        found[name] = Layout(int(m.group(2)), wanted)
    for name, fields in DEFAULTS.items():
        found.setdefault(name, Layout(None, dict(fields)))
    return found
