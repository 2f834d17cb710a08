"""What a `--call-graph dwarf` sample leaves for the unwinder, kept beside the profile.

perf copies the user registers and the top of the user stack (8 KiB by default) into
every sample instead of walking it; the walk needs the binaries' call frame information,
which arrives with the symbol files, after the import. So the importer keeps each
sample's registers and stack bytes together with the executable maps of its process at
that moment, and `unwind_pass` runs when the files are known. Nothing here is saved
with the profile: once unwound, the stacks are ordinary stacks.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field

#: what the importer says of a capture with stack copies until they are unwound
DWARF_NOTE = ("recorded with --call-graph dwarf: kernel frames and the user-space leaf are "
              "shown; the user frames above the leaf come from unwinding the saved stacks "
              "with the binaries that ran: upload them (perf archive) to see them")

#: (start, end, pgoff, path, build_id) of one executable mapping, sorted by start
MapRow = tuple[int, int, int, str, str]


@dataclass
class UserStacks:
    arch: str  # of the recording host ("x86_64", "aarch64")
    row: array = field(default_factory=lambda: array("i"))  # sample row of each copy
    pid: array = field(default_factory=lambda: array("i"))
    space: array = field(default_factory=lambda: array("i"))  # index into `spaces`
    regs_mask: list[int] = field(default_factory=list)  # sample_regs_user of its event
    regs: list[tuple[int, ...]] = field(default_factory=list)  # in the mask's bit order
    stacks: list[bytes] = field(default_factory=list)  # from the sampled stack pointer
    #: a process's executable maps at the time of its samples, one entry per distinct
    #: set (a process that maps nothing new keeps using the same entry)
    spaces: list[tuple[MapRow, ...]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.row)

    def add(self, row: int, pid: int, space: int, mask: int, regs: tuple,
            stack: bytes) -> None:
        self.row.append(row)
        self.pid.append(pid)
        self.space.append(space)
        self.regs_mask.append(mask)
        self.regs.append(regs)
        self.stacks.append(stack)
