"""The one normalized profile model every importer produces and every pass reads.

It follows pprof's design: samples point at interned stacks, stacks are rows of
location ids (leaf first; tuples while an import runs, then columns read as tuples:
analysis.stack_table), locations point at a mapping and at one or more functions (more
than one when the compiler inlined callees into that address). Per-sample columns live in
compact arrays so a capture with a million samples costs tens of megabytes, not a million
Python objects; a million samples with the same stack share one stack entry.

Symbolization (step 3) rewrites locations and functions only; samples never change.
"""
from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from itertools import repeat

from . import column_ops
from .offcpu.switches import SwitchLog
from .location_table import Location  # noqa: F401  (the model's location, with its table)
from .stack_table import StackTable

#: Mapping kinds, decided from the DSO name as perf prints it (see classify_dso).
KERNEL, USER, JIT, VDSO, UNKNOWN = "kernel", "user", "jit", "vdso", "unknown"

NO_ID = -1  # pid/tid/cpu not present in the input


class _Same:
    """A read-only column of one value, as long as the rows (Profile.counts, periods)."""

    __slots__ = ("n", "value")

    def __init__(self, n: int, value: int) -> None:
        self.n, self.value = n, value

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.value] * len(range(*i.indices(self.n)))
        if not -self.n <= i < self.n:
            raise IndexError("row out of range")
        return self.value

    def __iter__(self):
        return repeat(self.value, self.n)


class _PeriodSink:
    """What _script.Reader appends its rows' periods to (a column's frombytes): the
    profile's, which keeps none while they are all one value."""

    itemsize = 8

    def __init__(self, profile: "Profile") -> None:
        self.profile = profile

    def frombytes(self, data: bytes) -> None:
        self.profile.extend_periods(data)


@dataclass
class Mapping:
    """A DSO as seen in the capture (one per distinct path in text inputs)."""

    id: int
    path: str  # as perf printed it: "/usr/lib/libc.so.6", "[kernel.kallsyms]", "[unknown]"
    kind: str
    build_id: str = ""
    start: int = 0
    limit: int = 0
    pgoff: int = 0
    deleted: bool = False  # "(deleted)": the file was replaced after the process mapped it

    @property
    def basename(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(slots=True)  # 100,000 of them in a diverse capture
class Function:
    """A named function; unresolved locations get a synthetic one (resolved=False)."""

    id: int
    name: str  # what a human reads (demangled when a demangled form is known)
    system_name: str  # exactly as the input spelled it
    mapping_id: int  # functions of the same name in different DSOs are different
    resolved: bool = True


@dataclass
class Event:
    name: str
    #: sampling frequency (Hz) or fixed period, when the input says (header / cmdline)
    frequency: float | None = None
    period: int | None = None


@dataclass
class Metadata:
    """What is known about the capture as a whole; None means the input did not say."""

    format: str = ""
    hostname: str | None = None
    os_release: str | None = None
    arch: str | None = None
    cpus_online: int | None = None
    cpus_available: int | None = None
    cpu_desc: str | None = None
    perf_version: str | None = None
    cmdline: str | None = None
    #: samples the producer says it recorded (`# Samples: N` in perf report text)
    declared_samples: dict[str, int] = field(default_factory=dict)
    #: the events' summed periods the producer states (`# Event count (approx.): N` in
    #: perf report text): for a clock event, nanoseconds of CPU time, all samples'
    #: (those under perf's --percent-limit too)
    declared_event_counts: dict[str, int] = field(default_factory=dict)
    lost_samples: int | None = None
    #: capture duration the producer states (perf.data time range); otherwise derived
    #: from sample timestamps
    duration_s: float | None = None
    #: what could not be read, when the samples read were kept from a capture cut short
    #: (analysis.perfdata.damage); no finding is drawn from such a profile
    damaged: str | None = None


class Profile:
    """Interning tables plus columnar sample storage."""

    def __init__(self, fmt: str = "") -> None:
        self.meta = Metadata(format=fmt)
        self.mappings: list[Mapping] = []
        self.functions: list[Function] = []
        self.locations: list[Location] = []
        self.stacks: list[tuple[int, ...]] = []  # location ids, leaf first
        self.events: list[Event] = []
        self.strings: list[str] = []  # comm names
        #: Messages a user should read next to the result ("totals are approximate ...").
        self.notes: list[str] = []
        #: True when weights were reconstructed from rounded percentages.
        self.approximate = False
        #: The input ended inside a sample's stack with no blank line after it, so that
        #: sample may be cut short. It is kept; stackcollapse-perf.pl drops it.
        self.truncated_tail = False
        #: Per DSO: how well symbolization covered it (filled by analysis.symbols)
        self.coverage: list[dict] = []
        #: context switches, when the capture recorded them (analysis.offcpu)
        self.switches = SwitchLog()
        #: `--call-graph dwarf` samples not unwound yet (analysis.unwind.user_stacks):
        #: the symbolization pass unwinds them with the uploaded binaries, then drops it
        self.user_stacks = None

        self._mapping_ix: dict[str, int] = {}
        self._function_ix: dict[tuple[str, int, bool], int] | None = {}
        self._stack_ix: dict[tuple[int, ...], int] | None = {}
        self._event_ix: dict[str, int] = {}
        self._string_ix: dict[str, int] = {}
        self._cache: dict = {}  # derived per-sample facts, see memo

        # one entry per sample (or per aggregated row, for perf report text)
        self.s_stack = array("i")
        self._s_count: array | None = None  # see s_count: None while every row counts 1
        #: see s_period: None while every row's period is _period
        self._s_period: array | None = None
        self._period = 0
        self.s_pid = array("i")
        self.s_tid = array("i")
        self.s_cpu = array("i")
        self.s_time = array("d")  # seconds; NaN when unknown
        self.s_event = array("i")
        self.s_comm = array("i")

    # ---- the count column ------------------------------------------------------------
    @property
    def s_count(self) -> array:
        """Samples each row stands for (array 'q'). Raw samples (perf.data, perf script)
        all count 1, and then no column is kept until something asks for it: it was 8 of
        the 48 bytes a sample, 32 MiB of a 4M-sample text. The engine's passes ask
        unit_rows() first and do not touch it; a reader that does (an export, the
        saved profile's writer) gets the ones made once and kept."""
        if self._s_count is None:
            self._s_count = array("q", [1]) * len(self.s_stack)
        return self._s_count

    @s_count.setter
    def s_count(self, column: array | None) -> None:
        """A column (as long as s_stack), or None: every row counts 1."""
        self._s_count = column

    def counts(self):
        """s_count to read row by row, without making the column when every row counts
        1 (then a sequence of ones as long as the rows)."""
        return self._s_count if self._s_count is not None else _Same(len(self.s_stack), 1)

    def has_count_column(self) -> bool:
        """Whether s_count is held (False: every row counts 1 and none is kept)."""
        return self._s_count is not None

    # ---- the period column -----------------------------------------------------------
    @property
    def s_period(self) -> array:
        """Each row's event count (array 'Q': the period, u64 in perf.data; 0 when
        unknown). A clock event's samples all have one period (cpu-clock at 4000 Hz:
        250,000 ns each), and then no column is kept until something asks for it (8 of
        the 40 bytes a sample); periods() and period_value() read it without one."""
        if self._s_period is None:
            self._s_period = array("Q", [self._period]) * len(self.s_stack)
        return self._s_period

    @s_period.setter
    def s_period(self, column: array) -> None:
        """A column as long as s_stack; one of one value is kept as that value."""
        self._s_period = column
        if column and _all_equal(column, column[0]):
            self._s_period, self._period = None, column[0]

    def periods(self):
        """s_period to read row by row, without making the column."""
        return self._s_period if self._s_period is not None else \
            _Same(len(self.s_stack), self._period)

    def period_value(self) -> int | None:
        """The period every row has, when no column is kept; None when one is."""
        return self._period if self._s_period is None else None

    def has_period_column(self) -> bool:
        return self._s_period is not None

    def set_period_value(self, value: int) -> None:
        """Every row's period is `value`: no column kept (a view of such rows)."""
        self._s_period, self._period = None, value

    def period_appender(self):
        """What a compiled reader appends its rows' periods to with frombytes (after
        their s_stack): the column when one is kept, else extend_periods."""
        return self._s_period if self._s_period is not None else _PeriodSink(self)

    def extend_periods(self, data: bytes) -> None:
        """The periods of the rows just added to s_stack (native u64 bytes), as
        add_sample would add them one by one."""
        if self._s_period is not None:
            self._s_period.frombytes(data)
            return
        batch = array("Q")
        batch.frombytes(data)
        before = len(self.s_stack) - len(batch)
        if not batch:
            return
        if not before:
            self._period = batch[0]
        if not _all_equal(batch, self._period):
            self._s_period = array("Q", [self._period]) * before
            self._s_period.extend(batch)

    # ---- interning -------------------------------------------------------------------
    def mapping(self, path: str, kind: str | None = None, build_id: str = "") -> int:
        """The mapping of `path`, made on first use; a build-id learnt later is kept."""
        ix = self._mapping_ix.get(path)
        if ix is not None:
            if build_id and not self.mappings[ix].build_id:
                self.mappings[ix].build_id = build_id
            return ix
        deleted = path.endswith(" (deleted)")
        clean = path[:-len(" (deleted)")] if deleted else path
        ix = len(self.mappings)
        self.mappings.append(Mapping(ix, clean, kind or classify_dso(clean), build_id,
                                     deleted=deleted))
        self._mapping_ix[path] = ix
        return ix

    def function_index(self) -> dict[tuple[str, int, bool], int]:
        """(name, mapping id, resolved) -> id, the first function of that key; a loaded
        profile builds it on first use (analysis.profile_io)."""
        if self._function_ix is None:
            ix: dict[tuple[str, int, bool], int] = {}
            for f in self.functions:
                ix.setdefault((f.name, f.mapping_id, f.resolved), f.id)
            self._function_ix = ix
        return self._function_ix

    def function(self, name: str, mapping_id: int, resolved: bool = True,
                 system_name: str | None = None) -> int:
        key = (name, mapping_id, resolved)
        ix = self.function_index().get(key)
        if ix is None:
            ix = len(self.functions)
            self.functions.append(Function(ix, name, name if system_name is None else system_name,
                                           mapping_id, resolved))
            self._function_ix[key] = ix
        return ix

    def add_location(self, mapping_id: int, address: int, functions: tuple[int, ...],
                     dso_offset: int | None = None, symbol_offset: int | None = None,
                     is_return: bool = False) -> int:
        """Locations are not deduplicated here: importers keep their own cheaper key."""
        ix = len(self.locations)
        self.locations.append(Location(ix, mapping_id, address, functions, dso_offset,
                                       symbol_offset, is_return))
        return ix

    def add_unnamed_location(self, mapping_id: int, address: int, dso_offset: int | None,
                             is_return: bool = False) -> int:
        """A location no symbol names yet, under the name unresolved_name gives it (what
        the symbolization pass will look up)."""
        fid = self.function(unresolved_name(self, mapping_id, address, dso_offset),
                            mapping_id, resolved=False, system_name="[unknown]")
        return self.add_location(mapping_id, address, (fid,), dso_offset=dso_offset,
                                 is_return=is_return)

    def drop_indexes(self) -> None:
        """Forget the stack and function interning indexes, rebuilt from the tables on
        first use: once an import has ended nothing may need them (a report interns
        nothing), and on the 4M-sample text of bench-size they held 23 MiB through the
        report, a tenth of the worker's peak above the profile's own tables."""
        self._function_ix = self._stack_ix = None

    def compact_stacks(self) -> None:
        """The stacks as columns (analysis.stack_table), once the importer's passes add
        no more: a tuple and an int object per frame less for the report and the files
        written after it (the import makes them as tuples, interned through a dict)."""
        self.stacks = StackTable.of(self.stacks)
        self._stack_ix = None
        self._cache.pop("stack_table", None)

    def stack_index(self) -> dict[tuple[int, ...], int]:
        """stack -> id; a loaded profile builds it on first use (analysis.profile_io)."""
        if self._stack_ix is None:
            self._stack_ix = {s: ix for ix, s in enumerate(self.stacks)}
        return self._stack_ix

    def stack(self, location_ids: tuple[int, ...]) -> int:
        ix = self.stack_index().get(location_ids)
        if ix is None:
            ix = len(self.stacks)
            self.stacks.append(location_ids)
            self._stack_ix[location_ids] = ix
        return ix

    def event(self, name: str) -> int:
        ix = self._event_ix.get(name)
        if ix is None:
            ix = len(self.events)
            self.events.append(Event(name))
            self._event_ix[name] = ix
        return ix

    def string(self, s: str) -> int:
        ix = self._string_ix.get(s)
        if ix is None:
            ix = len(self.strings)
            self.strings.append(s)
            self._string_ix[s] = ix
        return ix

    def add_sample(self, stack_id: int, *, count: int = 1, period: int = 0,
                   pid: int = NO_ID, tid: int = NO_ID, cpu: int = NO_ID,
                   time: float = math.nan, event_id: int = 0, comm_id: int = NO_ID) -> None:
        if self._s_count is not None or count != 1:
            self.s_count.append(count)  # (the ones so far made first, when this is the first)
        if self._s_period is not None:
            self._s_period.append(period)
        elif not self.s_stack:
            self._period = period
        elif period != self._period:
            self.s_period.append(period)  # (the one period so far made first)
        self.s_stack.append(stack_id)
        self.s_pid.append(pid)
        self.s_tid.append(tid)
        self.s_cpu.append(cpu)
        self.s_time.append(time)
        self.s_event.append(event_id)
        self.s_comm.append(comm_id)

    # ---- reading ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.s_stack)

    def sample_count(self, event_id: int | None = None) -> int:
        if event_id is None:
            return sum(self._s_count) if self._s_count is not None else len(self.s_stack)
        return self.event_counts()[event_id] if event_id < len(self.events) else 0

    def memo(self, key, compute):
        """`compute()` once per key while the profile does not grow: samples are only
        ever appended, so the row and event counts tell whether a value is stale."""
        stamp = (len(self), len(self.events))
        cached = self._cache.get(key)
        if cached is None or cached[0] != stamp:
            cached = self._cache[key] = (stamp, compute())
        return cached[1]

    def event_counts(self) -> list[int]:
        """Samples per event (one pass; C-speed when every row is one sample)."""
        def count() -> list[int]:
            counts = [0] * len(self.events)
            if self.unit_rows():
                if compiled_column(self.s_event, "i"):
                    try:
                        return column_ops.value_counts(self.s_event, len(self.events))
                    except IndexError:  # (an event id no event has: as Counter does)
                        pass
                for e, n in Counter(self.s_event).items():
                    counts[e] = n
            else:
                for e, c in zip(self.s_event, self.s_count):
                    counts[e] += c
            return counts
        return self.memo("event_counts", count)

    def unit_rows(self) -> bool:
        """Every row is one sample (true for perf.data and perf script input)."""
        def compute() -> bool:
            if self._s_count is None or not self._s_count:
                return True
            if compiled_column(self.s_count, "q"):
                return column_ops.int_max(self.s_count) == 1
            return max(self.s_count) == 1
        return self.memo("unit_rows", compute)

    def single_event(self) -> bool:
        return sum(1 for c in self.event_counts() if c) <= 1

    def only_event(self, event_id: int | None) -> bool:
        """Every sample is of this event (so a pass need not look at events)."""
        counts = self.event_counts()
        if event_id is None or event_id >= len(counts):
            return not len(self)
        return counts[event_id] == sum(counts)

    def comm(self, row: int) -> str:
        cid = self.s_comm[row]
        return self.strings[cid] if cid >= 0 else ""

    def first_comms(self) -> dict[int, str]:
        """tid -> the name its first sample gave it (one pass per profile)."""
        def compute() -> dict[int, str]:
            out: dict[int, str] = {}
            for row, tid in enumerate(self.s_tid):
                if tid not in out:
                    out[tid] = self.comm(row)
            return out
        return self.memo("first_comms", compute)


    def default_event(self) -> int | None:
        """The event a view shows unless the user picks another: the first with samples
        (samples without an event name only when no named event has any)."""
        counts = self.event_counts()
        for i, c in enumerate(counts):  # a sampling event before a tracepoint
            if c and self.events[i].name and not is_tracepoint(self.events[i].name):
                return i
        # the scheduler's tracepoints are off-CPU data: with a sampling event beside
        # them that took no sample, the capture used no CPU (an idle pool)
        if any(is_scheduler_event(e.name) for e in self.events):
            for i, e in enumerate(self.events):
                if e.name and not is_tracepoint(e.name):
                    return i
        for i, c in enumerate(counts):
            if c and self.events[i].name:
                return i
        for i, c in enumerate(counts):
            if c:
                return i
        return 0 if self.events else None


_MODIFIERS = re.compile(r"^[ukhpPGHISDWeb]+$")


def is_tracepoint(event: str) -> bool:
    """`sched:sched_switch`, `syscalls:sys_enter_write`: subsystem:name, which counts
    occurrences, not time; `cpu-clock:pppH` is an event with modifiers."""
    head, sep, tail = event.partition(":")
    return bool(sep) and "/" not in head and not _MODIFIERS.match(tail)


def is_scheduler_event(event: str) -> bool:
    """sched:sched_switch, sched:sched_stat_runtime, ...: what `perf sched record` and
    off-CPU recordings add; they count switches, not time on a CPU."""
    return event.startswith("sched:")


#: x86-64 kernel addresses start here (the top half of the address space)
KERNEL_ADDR = 0xffff800000000000
#: perf prints unresolved user frames of some DSOs relative to the DSO (perf 6.1), of
#: others as the absolute address; below this a value can only be DSO-relative (shared
#: objects and PIE executables load far above it)
RELATIVE_LIMIT = 0x10000000
NO_SAMPLES_NOTE = ("the capture holds no samples: the process did not run on a CPU while "
                   "perf recorded (idle, 0% CPU)")


def _all_equal(column: array, value: int) -> bool:
    """Every item of a column of 8-byte ints is `value` (on the buffer for 'q' and 'Q')."""
    if compiled_column(column, "q") or compiled_column(column, "Q"):
        return column_ops.all_equal(column, value)
    return all(v == value for v in column)


def compiled_column(column, typecode: str) -> bool:
    """The column is the array of that type the compiled reductions read (a transform
    may have made a list of one)."""
    return type(column) is array and column.typecode == typecode


def unresolved_name(profile: Profile, mapping_id: int, address: int,
                    dso_offset: int | None) -> str:
    """How a frame without a symbol reads: `libfoo.so+0x2458` when its offset in a user
    DSO is known (what symbolization will look up), otherwise the raw address."""
    m = profile.mappings[mapping_id]
    if m.kind == UNKNOWN:
        return "[unknown]" if address == 0 else f"0x{address:x}"
    if dso_offset is not None and m.kind != KERNEL:
        return f"{m.basename}+0x{dso_offset:x}"
    return f"0x{address:x}"


def classify_dso(path: str) -> str:
    """Kernel, JIT, vDSO, unknown or ordinary user DSO, from the name perf prints."""
    if path == "[unknown]" or not path:
        return UNKNOWN
    if path in ("[vdso]", "[vsyscall]", "[vvar]"):
        return VDSO
    if path.startswith("["):
        # [kernel.kallsyms], [kernel.vmlinux], [guest.kernel.kallsyms], [nf_conntrack]
        return KERNEL
    base = path.rsplit("/", 1)[-1]
    if base.startswith("vmlinux") or base.endswith(".ko") or base.endswith(".ko.xz") \
            or base.endswith(".ko.zst"):
        return KERNEL
    if (base.startswith("perf-") and base.endswith(".map")) or \
            (base.startswith("jitted-") and base.endswith(".so")):
        return JIT
    return USER
