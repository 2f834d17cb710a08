"""What reading one symbol file may cost: CPU time and work counted in entries.

A symbol file is an upload: its headers choose how many symbols, relocations, notes and
PLT entries the readers walk. Every size is checked against the file before it drives a
loop (elf.py), but a file can still be built so that reading it is slow within its own
bounds, and one reading of one file must never hold a worker that other teams' captures
wait for (an 8-byte edit of one sh_size held every worker slot for 20 minutes). So every
reading of a symbol file runs inside `reading(...)`: the loops that walk the file's
entries, and every read pyelftools makes of it (elf_stream.py), `charge` that file's
budget, and past either limit the reading stops with `OverBudget`, which names the file
and the limit. The caller skips the file with that sentence as a note, and the capture
goes on with the others. A file refused once is refused at once afterwards (by the
SHA-256 of its bytes, in this process): the same bytes cost the same again.

CPU time is this thread's (`time.thread_time`), so the heartbeat thread and other
processes on the host count for nothing, and it is read between entries, not by a
signal: a native call (symbolic building a line table) is charged when it returns, so
the file's later readings stop, but it cannot be cut short; what it reads is bounded by
the file's size instead.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from contextvars import ContextVar

from ..errors import AnalysisError

#: CPU seconds one symbol file may take, over all its readings in one analysis; the
#: largest real files take a few (libLLVM-15's 35,568 exported symbols: 0.2 s)
CPU_SECONDS = float(os.environ.get("PERFWEB_SYMBOL_FILE_CPU_S", "30"))
#: entries one symbol file may make us walk: symbols, relocations, PLT entries, notes,
#: dynamic tags, sections, reads of its headers, and one per 64 bytes of names made.
#: libtorch_cpu.so's full symbol table, among the largest there are, is about 2 million
MAX_ENTRIES = int(os.environ.get("PERFWEB_SYMBOL_FILE_MAX_ENTRIES", str(8 << 20)))
#: entries between two looks at the CPU clock (a look costs about a microsecond)
_CLOCK_EVERY = 1024


class OverBudget(AnalysisError):
    """A symbol file that could not be read within its budget; the message names the
    file and the limit, and the file is skipped."""

    budget: "Budget | None" = None  # whose limit it was


class Budget:
    """One symbol file's budget, spent over all its readings (headers, symbols, line
    table, unwind table)."""

    def __init__(self, name: str, key: str = "", cpu_seconds: float | None = None,
                 max_entries: int | None = None) -> None:
        self.name, self.key = name, key
        self.cpu_seconds = CPU_SECONDS if cpu_seconds is None else cpu_seconds
        self.max_entries = MAX_ENTRIES if max_entries is None else max_entries
        self.entries = 0
        self.cpu = 0.0  # spent in readings that ended
        self._started = 0.0  # thread CPU time when the current reading began
        self._next_look = _CLOCK_EVERY
        self.refused = ""  # why, once it was

    def charge(self, entries: int = 1) -> None:
        self.entries += entries
        if self.entries > self.max_entries:
            self._refuse(f"it asks for more than {self.max_entries:,} entries "
                         f"(symbols, relocations, notes or name bytes) to be read")
        if self.entries >= self._next_look or entries >= _CLOCK_EVERY:
            self._next_look = self.entries + _CLOCK_EVERY
            if self.cpu + time.thread_time() - self._started > self.cpu_seconds:
                self._refuse(f"reading it took more than {self.cpu_seconds:g} s of CPU")

    def _refuse(self, why: str):
        self.refused = (f"{self.name}: skipped: {why} (the limit for one symbol file); "
                        f"the capture was analysed without it")
        e = OverBudget(self.refused)
        e.budget = self
        raise e


#: the budget of the symbol file being read in this thread (or task), if any
_ACTIVE: ContextVar[Budget | None] = ContextVar("symbol_file_budget", default=None)
#: SHA-256 -> why: files refused in this process, refused again at once
_REFUSED: OrderedDict[str, str] = OrderedDict()
_REFUSED_MAX = 1024
_LOCK = threading.Lock()


def charge(entries: int = 1) -> None:
    """Count `entries` against the file being read (nothing outside a reading)."""
    b = _ACTIVE.get()
    if b is not None:
        b.charge(entries)


def ahead(entries: int) -> None:
    """Refuse now a walk of `entries` (a count read from the file) that would pass the
    budget, before it starts; the walk charges as it goes."""
    b = _ACTIVE.get()
    if b is not None and b.entries + entries > b.max_entries:
        b.charge(entries)


@contextlib.contextmanager
def reading(name: str, key: str = "", budget: Budget | None = None):
    """Charge what the block does to one symbol file: `budget` (kept by a caller that
    reads the file in several steps), else a fresh one; inside a reading of the same
    file (a reader calling a reader, `key` and `budget` unset or the same) the one
    already running. `key`: the SHA-256 of the file's bytes, when known, to refuse a
    file refused before without reading it."""
    outer = _ACTIVE.get()
    key = key or (budget.key if budget is not None else "")
    if outer is not None and budget in (None, outer) and \
            (not key or not outer.key or key == outer.key):
        outer.key = outer.key or key
        yield outer
        return
    why = budget.refused if budget is not None else ""
    if key and not why:
        with _LOCK:
            why = _REFUSED.get(key, "")
    if why:
        raise OverBudget(why)
    b = budget if budget is not None else Budget(name, key)
    b.key = b.key or key
    now = time.thread_time()
    if outer is not None:  # another file's reading waits meanwhile
        outer.cpu += now - outer._started
    b._started = now
    token = _ACTIVE.set(b)
    try:
        yield b
    except OverBudget as e:
        if b.key and e.budget is b:
            with _LOCK:
                _REFUSED[b.key] = str(e)
                while len(_REFUSED) > _REFUSED_MAX:
                    _REFUSED.popitem(last=False)
        raise
    finally:
        now = time.thread_time()
        b.cpu += now - b._started
        _ACTIVE.reset(token)
        if outer is not None:
            outer._started = now
