"""Facts every rule needs, computed once per capture: weights per stack, the categories of
each function, per-thread totals, CPU use, and helpers to gather evidence."""
from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import compress
from typing import NamedTuple

import numpy as np

from .. import column_ops, cpu
from ..errors import AnalysisError
from ..aggregate import stack_walks
from ..aggregate.functions import StackFunctions, first_seen_sort, ranked_arrays
from ..aggregate.selection import Selection, stack_weights
from ..aggregate.threads import count_rows
from ..profile_columns import WeightColumns, kept_columns, weights_by_stack
from ..profile import JIT, KERNEL, NO_ID, USER, Profile, is_scheduler_event

from . import knowledge, software
from .stack_threads import StackThreads


#: the threads of a stack no sample has (shared, never changed)
NO_THREADS: Counter = Counter()


#: CPUs busy above a whole number by less than this are that number of CPUs
#: (fewest_cpus): the sample span is a little shorter than the recording
CPU_COUNT_SLACK = 0.05


class Capacity(NamedTuple):
    """The CPUs some threads could have used: `fewest` and `most` differ only when the
    capture does not say how many CPUs the host had."""
    fewest: int
    most: int

    @property
    def known(self) -> bool:
        return self.fewest == self.most


#: the bit of Context.mask saying a stack has an application function (categories are
#: names of knowledge.py and never start with "@")
APP = "@app"


@dataclass
class Context:
    """Per stack, the facts rules ask of every stack are computed once, in one pass, as
    bits of an int: `mask` (the categories of any of its functions, and APP), `leaf_mask`
    (of its leaf function), `idle` and `kernel_leaf_stacks`. A rule's question over all
    stacks is then an AND per stack (`select`), not a Python predicate walking frames:
    a diverse capture has 100,000 stacks and twenty rules."""
    profile: Profile
    event_id: int | None
    label: str = ""
    weights: dict[int, int] = field(default_factory=dict)
    total: int = 0
    cpus_busy: float | None = None
    cpus_online: int | None = None
    # Per stack and per function, arrays indexed by id, not dicts: a 2M-sample
    # capture has 500,000 stacks and 690,000 functions (its dicts held 250 MiB)
    funcs: object = None  # stack -> its function ids (a new list each time)
    cats: FunctionCats = field(default_factory=lambda: FunctionCats(0))  # -> categories
    app: AppCode = field(default_factory=lambda: AppCode(bytearray()))  # application code?
    thread_of: StackThreads = field(default_factory=lambda: StackThreads((), {}))
    comm_of: dict[int, str] = field(default_factory=dict)  # tid -> its thread name
    mask: array = field(default_factory=lambda: array("Q"))  # stack -> its categories' bits
    leaf_mask: array = field(default_factory=lambda: array("Q"))  # stack -> its leaf's
    idle: StackFlags = field(default_factory=lambda: StackFlags())  # stacks of the idle task
    kernel_leaf_stacks: StackFlags = field(default_factory=lambda: StackFlags())
    _bits: dict[str, int] = field(default_factory=dict)  # category -> its bit
    stack_funcs: StackFunctions | None = None  # funcs, and each stack's distinct ones
    _memo: dict = field(default_factory=dict)
    _passes: dict[int, bool] = field(default_factory=dict)  # mapping -> passes_through
    #: function -> software.Library | None; -1 - mapping id for its unnamed functions
    _library: dict = field(default_factory=dict)
    _file_library: dict = field(default_factory=dict)  # mapping -> software.Library | None
    #: the functions of the weighted stacks, in id order: named, and unnamed per mapping
    named: array = field(default_factory=lambda: array("i"))
    unnamed: dict[int, array] = field(default_factory=dict)

    @classmethod
    def build(cls, profile: Profile, event_id: int | None = None, label: str = "") -> Context:
        if event_id is None:
            event_id = profile.default_event()
        ctx = cls(profile, event_id, label.lower())
        ctx.stack_funcs = StackFunctions(profile)
        ctx.funcs = ctx.stack_funcs.funcs
        ns = len(profile.stacks)
        ctx.mask, ctx.leaf_mask = array("Q", [0]) * ns, array("Q", [0]) * ns
        ctx.idle, ctx.kernel_leaf_stacks = StackFlags(ns), StackFlags(ns)
        if event_id is not None and is_scheduler_event(profile.events[event_id].name):
            # the scheduler's tracepoints sample switches, not CPU time: the on-CPU
            # rules have nothing to read (blocked_rules read the switches)
            ctx.cpus_busy = cpu.cpus_busy(profile, event_id)
            ctx.cpus_online = profile.meta.cpus_online
            return ctx
        ctx.weights = stack_weights(profile, Selection(event_id=event_id))
        ctx.total = ctx.samples(ctx.weights)
        ctx.cpus_busy = cpu.cpus_busy(profile, event_id) if event_id is not None else None
        ctx.cpus_online = profile.meta.cpus_online
        ctx._index_stacks()
        ctx.thread_of = _thread_weights(profile, event_id, ctx.weights)
        ctx.comm_of = _thread_names(profile, event_id)
        # idle: the idle task's stacks (all samples on tid 0), and those whose leaf is the
        # kernel's idle loop
        idle = StackFlags(len(profile.stacks))
        ctx.thread_of.mark_only_on(ctx.weights, 0, idle)
        for sid in ctx.select(leaf_any=("idle",)):
            idle[sid] = 1
        ctx.idle = idle
        return ctx

    def _index_stacks(self) -> None:
        """funcs, cats, app, mask, leaf_mask and kernel_leaf_stacks, in one pass over the
        stacks; a function's categories are looked up once, an unnamed function's by its
        DSO alone, once per DSO (a stripped binary has one unnamed function per sampled
        address: their tables are filled by array operations). Every function's bits are known before
        the pass, which also finds the functions of the weighted stacks (`used`, nearly
        all of them but for captures of several events): cats and app keep only those."""
        profile = self.profile
        functions, mappings = profile.functions, profile.mappings
        bit_of_cats: dict[frozenset, int] = {}
        app_bit = self.bit(APP)
        nf = len(functions)
        named, unnamed = self.split_functions(bytearray(b"\x01") * nf)
        cats = FunctionCats(nf)
        app_flags = bytearray(nf)  # 0: not in the stacks, 1: not application code, 2: is
        fmask = array("Q", [0]) * nf  # function -> its bits
        for f in named:
            fn = functions[f]
            mp = mappings[fn.mapping_id]
            c = knowledge.categories(fn.name, mp.path, True)
            # JIT-compiled code (perf-PID.map) is the program's own: its JavaScript or
            # Java methods
            a = (mp.kind in (USER, JIT) and not c
                 and not knowledge.is_system_dso(mp.path)
                 and not knowledge.is_distribution_library(mp.path)
                 and not knowledge.is_language_runtime(fn.name)
                 and software.library_of_code("", fn.name) is None)
            cats.set(f, c)
            app_flags[f] = 2 if a else 1
            b = bit_of_cats.get(c)
            if b is None:
                b = bit_of_cats[c] = self.bits(c)
            fmask[f] = b | app_bit if a else b
        for mid, fids in unnamed.items():  # (never application code: no name)
            c = knowledge.categories(functions[fids[0]].name, mappings[mid].path, False)
            cats.set_all(fids, c)
            column_ops.fill(app_flags, fids, 1)
            b = bit_of_cats.get(c)
            if b is None:
                b = bit_of_cats[c] = self.bits(c)
            column_ops.fill(fmask, fids, b)
        ns = len(profile.stacks)
        self.mask, self.leaf_mask = array("Q", [0]) * ns, array("Q", [0]) * ns
        self.kernel_leaf_stacks = StackFlags(ns)
        loc_kernel = column_ops.lookup_bytes(bytes(m.kind == KERNEL for m in mappings),
                                         self.location_mappings())
        used = bytearray(nf)
        stack_walks.stack_masks(self.stack_funcs.sets, self.weights, fmask, loc_kernel,
                                self.mask, self.leaf_mask, self.kernel_leaf_stacks, used)
        cats.keep_only(used)
        column_ops.keep_where(app_flags, used, 0)
        self.named, self.unnamed = self.split_functions(used)
        self.cats, self.app = cats, AppCode(app_flags)

    # ---- questions rules ask ------------------------------------------------------------
    def bit(self, category: str) -> int:
        """The bit of a category in `mask` (given on first use: rules may ask of
        categories no function has)."""
        b = self._bits.get(category)
        if b is None:
            if len(self._bits) == 64:  # (select reads masks as 64-bit ints)
                raise ValueError(f"more than 64 categories: {category!r}")
            b = self._bits[category] = 1 << len(self._bits)
        return b

    def bits(self, categories) -> int:
        out = 0
        for c in categories:
            out |= self.bit(c)
        return out

    def select(self, any_of=(), all_of=(), none_of=(), leaf_any=(),
               busy: bool = False) -> dict[int, int]:
        """The stacks (with their weights, in the weights' order) that have a function of
        one of `any_of`, of each of `all_of` and of none of `none_of`, whose leaf is of
        one of `leaf_any`, and, with busy, that are not the idle task's."""
        return stack_walks.select(self.weight_columns(), self.mask, self.leaf_mask,
                                  self.bits(any_of), self.bits(all_of), self.bits(none_of),
                                  self.bits(leaf_any), self.idle if busy else None)

    def weight_columns(self) -> WeightColumns:
        """The weights as columns, once (the passes over all the stacks read them)."""
        return self.memo("weight_columns", lambda: WeightColumns(
            self.weights, len(self.profile.stacks)))

    def name(self, fid: int) -> str:
        return self.profile.functions[fid].name

    def dso(self, fid: int) -> str:
        return self.profile.mappings[self.profile.functions[fid].mapping_id].path

    def has(self, sid: int, category: str) -> bool:
        return bool(self.mask[sid] & self.bit(category))

    def memo(self, key, compute):
        """`compute()` once per key for this context (several rules ask the same)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def leaf_has(self, sid: int, category: str) -> bool:
        return bool(self.leaf_mask[sid] & self.bit(category))

    def share(self, samples: int) -> float:
        return samples / self.total if self.total else 0.0

    def cpus(self, samples: int) -> float | None:
        return None if self.cpus_busy is None else self.cpus_busy * self.share(samples)

    def is_idle_task(self, sid: int) -> bool:
        """Samples of the idle task (swapper, tid 0) or in the kernel's idle loop."""
        return sid in self.idle

    def having(self, category: str) -> dict[int, int]:
        """The stacks with a function of `category`, with their weights (once per
        category; callers must not modify the dict)."""
        return self.memo(("having", category), lambda: self.select(any_of=(category,)))

    def weights_of(self, sids) -> list[int]:
        """The weights of these stack ids (each one of the weights'), read from the
        weights' columns by stack id: the weights' dict is not filled for a few
        thousand lookups (WeightDict)."""
        by_stack = self.memo("weights_by_stack", lambda: weights_by_stack(
            self.weights, len(self.profile.stacks))[0])
        ids = np.fromiter(sids, dtype=np.int64, count=len(sids))
        return by_stack[ids].tolist() if len(ids) else []

    def samples(self, stacks: dict[int, int]) -> int:
        kept = kept_columns(stacks)
        if kept is not None:
            return int(kept[1].sum())  # (not filling a WeightDict's dict to sum it)
        return sum(stacks.values())

    def threads(self, stacks: dict[int, int]) -> Counter:
        out: dict[int, int] = {}
        self.thread_of.sum_into(out, stacks)
        return Counter(out)

    def same_threads(self, stacks: dict[int, int]) -> dict[int, int]:
        """All samples of the threads that appear in `stacks`."""
        return self.of_threads(set(self.threads(stacks)))

    def of_threads(self, tids: set[int]) -> dict[int, int]:
        """The stacks of these threads, with their weights."""
        on_any = self.thread_of.on_any
        return {sid: w for sid, w in self.weights.items() if on_any(sid, tids)}

    def thread_totals(self) -> Counter:
        """Samples per thread (once; callers must not modify the Counter)."""
        return self.memo("thread_totals", lambda: self.threads(self.weights))

    # ---- evidence -------------------------------------------------------------------------
    def function_row(self, fid: int, samples: int) -> dict:
        """A function as evidence: id, name, DSO, samples and share of the capture."""
        return {"id": fid, "name": self.name(fid), "dso": self.dso(fid), "samples": samples,
                "share": round(self.share(samples), 4)}

    def top_functions(self, stacks: dict[int, int], pred, n: int = 5,
                      only: bytearray | None = None) -> list[dict]:
        """Functions satisfying `pred(fid)` in these stacks, by samples (once per stack;
        `pred` once per function); equal counts in the order the stacks first have them,
        as Counter.most_common keeps them. `only` (a flag by stack id): the flagged
        stacks of these, a subset too large to be worth a dict of its own."""
        ranked = self.ranked_arrays() if stacks is self.weights and only is None else None
        return [self.function_row(f, c)
                for f, c in self._top_ranked(stacks, pred, n, ranked, only)]

    def _top_ranked(self, stacks: dict[int, int], pred, n: int,
                    ranked: tuple | None = None,
                    only: bytearray | None = None) -> list[tuple[int, int]]:
        """heapq.nlargest(n) of the functions satisfying `pred` by total, in the order the
        stacks first have them (a stack's new functions in the order the set of its
        functions iterates in), without a set per stack: the functions come ranked by
        total and first stack from one pass over the columns (`ranked`: ranked_arrays of these
        stacks, when known), and only functions tied in both are put in their set's
        order."""
        ids, _, total, first = ranked or ranked_arrays(self.profile, stacks, self.stack_funcs,
                                                       only)
        rows: list[int] = []
        cut = None
        for f in ids:  # (pred once per function, until the n-th total is passed)
            if cut is not None and total[f] < cut:
                break
            if pred(f):
                rows.append(f)
                if len(rows) == n:
                    cut = total[f]
        rows = first_seen_sort(rows, lambda f: -total[f], int, first, stacks,
                               lambda sid: self.stack_funcs.of(sid))
        return [(f, total[f]) for f in rows[:n]]

    def ranked_arrays(self) -> tuple[array, array, array, array]:
        """aggregate.functions.ranked_arrays of all the weighted stacks, once: the
        report's function table and the CPU headline's top functions read the same sums
        (callers must not modify the arrays)."""
        return self.memo("ranked_arrays", lambda: ranked_arrays(
            self.profile, self.weights, self.stack_funcs))

    def heaviest_stacks(self, stacks: dict[int, int], n: int = 3) -> list[dict]:
        out = []
        for sid, w in sorted(stacks.items(), key=lambda kv: -kv[1])[:n]:
            out.append({"frames": [self.name(f) for f in reversed(self.funcs[sid])],
                        "samples": w, "share": round(self.share(w), 4)})
        return out

    def on_stacks(self, rows: list[dict], stacks: dict[int, int]) -> list[dict]:
        """The function rows that are frames of these stacks: what a flame graph focused
        on one of them shows holds some of these samples (a thread's busiest function
        elsewhere does not)."""
        present = bytearray(len(self.profile.functions))
        stack_walks.used_functions(self.stack_funcs.sets, stacks, present)
        return [r for r in rows if present[r["id"]]]

    def app_functions(self, stacks: dict[int, int], n: int = 3) -> list[dict]:
        return self.top_functions(stacks, lambda f: self.app.get(f, False), n)

    def has_threads(self) -> bool:
        """Whether the samples say which thread ran them (perf report text does not)."""
        return any(tid not in (0, NO_ID) for tid in self.thread_totals())

    def named_threads(self) -> int:
        """The fewest threads samples without thread ids ran on: one per thread name
        (perf report's Command column), one when none is given."""
        return max(1, len(set(self.profile.s_comm) - {NO_ID}))

    def busy_threads(self, min_cpus: float = 0.1) -> list[tuple[int, int]]:
        """(tid, samples) of threads using at least `min_cpus` CPUs, idle task excluded."""
        out = []
        for tid, c in self.thread_totals().most_common():
            if tid in (0, NO_ID):
                continue
            used = self.cpus(c)
            if used is None or used >= min_cpus:
                out.append((tid, c))
        return out

    def passes_through(self, fid: int) -> bool:
        """The kernel or the C runtime (libc, libstdc++, the loader): work done for
        whoever called it, which rules blame on the frame above. (Its file decides:
        cached per mapping, not per function.)"""
        mid = self.profile.functions[fid].mapping_id
        p = self._passes.get(mid)
        if p is None:
            p = self._passes[mid] = self.profile.mappings[mid].kind == KERNEL \
                or knowledge.is_c_library(self.dso(fid))
        return p

    def library(self, fid: int) -> software.Library | None:
        """The well-known library a function belongs to, by its file or its name (a
        function without a name by its file alone: cached per mapping, since a stripped
        binary has a function per sampled address)."""
        fn = self.profile.functions[fid]
        key = fid if fn.resolved else -1 - fn.mapping_id
        if key in self._library:
            return self._library[key]
        lib = self._library[key] = software.library_of_code(
            self.dso(fid), fn.name if fn.resolved else "")
        return lib

    def file_library(self, fid: int) -> software.Library | None:
        """The well-known library of the file a function is in (software.library_of)."""
        mid = self.profile.functions[fid].mapping_id
        if mid in self._file_library:
            return self._file_library[mid]
        lib = self._file_library[mid] = software.library_of(self.profile.mappings[mid].path)
        return lib

    def interpreter_leaves(self) -> dict[int, tuple[str, software.Library]]:
        """stack -> (DSO, library) of the stacks whose leaf is in the file of a language
        interpreter (software.library_of(...).interpreter: libpython), in the weights'
        order (once; callers must not modify the dict)."""
        def compute():
            # per mapping, once: (DSO, library) when it is an interpreter's file; then
            # one pass over the columns reads each stack's leaf function's mapping
            by_mapping = []
            for mid, m in enumerate(self.profile.mappings):
                lib = self._file_library.get(mid, False)
                if lib is False:
                    lib = self._file_library[mid] = software.library_of(m.path)
                by_mapping.append((m.path, lib) if lib is not None and lib.interpreter
                                  else None)
            return stack_walks.leaf_values(self.stack_funcs.sets, self.weights,
                                           self.function_columns()[1], by_mapping)
        return self.memo("interpreter_leaves", compute)

    def kernel_leaf(self, sid: int) -> bool:
        return sid in self.kernel_leaf_stacks

    def leaf(self, sid: int) -> int | None:
        f = self.funcs[sid]
        return f[0] if f else None

    def location_mappings(self) -> array:
        """The mapping id of every location, by id (once; not to be modified)."""
        return self.memo("location_mappings", lambda: array(
            "i", self.stack_funcs.sets.locations.mapping.tobytes()))

    def function_columns(self) -> tuple[bytes, array]:
        """(resolved, mapping id) of every function, by id (once; not to be modified)."""
        def compute():
            functions = self.profile.functions
            resolved = bytes(f.resolved for f in functions)
            mapping = array("i", [f.mapping_id for f in functions])
            # a damaged saved profile's function may name a mapping it does not have
            # (an id of 2^31 - 1 sized split_functions' per-mapping table at 48 GiB:
            # make fuzz-native, saved-profile target)
            ids = np.frombuffer(mapping, dtype=np.int32)
            if len(ids) and (ids.min() < 0 or ids.max() >= len(self.profile.mappings)):
                raise AnalysisError(
                    f"The profile is damaged: a function names mapping {int(ids.max())} of "
                    f"{len(self.profile.mappings)}.")
            return resolved, mapping
        return self.memo("function_columns", compute)

    def split_functions(self, used: bytearray) -> tuple[array, dict[int, array]]:
        """The functions flagged in `used`, in id order: the named ones, and the unnamed
        ones per mapping (what rules decide of an unnamed function they decide of its
        DSO, once)."""
        named, unnamed = stack_walks.split_functions(used, *self.function_columns())
        return array("i", named.tobytes()), {m: array("i", f.tobytes())
                                             for m, f in unnamed.items()}

    def busy_stacks(self) -> dict[int, int]:
        """Every stack but the idle task's (once; callers must not modify the dict)."""
        return self.memo("busy", lambda: self.select(busy=True))

    def callers_above(self, stacks: dict[int, int], pred, n: int = 3) -> list[dict]:
        """The application functions nearest above (towards the root of) the first frame
        satisfying `pred(fid)` in each stack: who called into that library or wait,
        by samples. Stacks whose callers are not in the chain (no frame pointers) add
        nothing."""
        stacks = stacks if type(stacks) is dict else dict(stacks)
        functions = self.profile.functions
        used = bytearray(len(functions))
        stack_walks.used_functions(self.stack_funcs.sets, stacks, used)
        # pred and app asked once per function of these stacks, not once per frame: 1
        # the library or wait, 2 application code outside it (the walk's marks)
        marks = bytearray(len(functions))
        app = self.app
        for f in compress(range(len(used)), used):
            if pred(f):
                marks[f] = 1
            elif app.get(f, False):
                marks[f] = 2
        acc = Counter(stack_walks.callers_above(self.stack_funcs.sets, stacks, marks))
        return [self.function_row(f, c) for f, c in acc.most_common(n)]

    def thread_use(self, tids=None, min_share: float = 0.02) -> tuple[float | None, Capacity,
                                                                     list[tuple[int, int]]]:
        """(CPUs used, CPUs they could use, [(tid, samples)]) of the threads with at least
        `min_share` of the samples (of all threads, or of `tids`): they could use one
        CPU each, or all the CPUs perf saw when there are fewer."""
        totals = self.thread_totals()
        active = [(tid, n) for tid, n in totals.most_common()
                  if tid not in (0, NO_ID) and n >= min_share * self.total
                  and (tids is None or tid in tids)]
        used = self.cpus(sum(n for _, n in active))
        return used, self.capacity(len(active)), active

    def fewest_cpus(self) -> int | None:
        """The host's CPUs, or when the capture does not say (perf script text without
        `--header`), the fewest it can have had (cpu.fewest_cpus), and at least as many
        as the process kept busy on average. None when nothing says."""
        if self.cpus_online is not None:
            return self.cpus_online
        return self.memo("fewest_cpus", self._fewest_cpus)

    def _fewest_cpus(self) -> int | None:
        proven = cpu.fewest_cpus(self.profile, self.event_id) or 0
        if self.cpus_busy is None:
            return proven or None
        # (a duration taken from the first and last sample is a little short: 2.03
        # CPUs busy is 2 CPUs)
        return max(1, proven, math.ceil(self.cpus_busy - CPU_COUNT_SLACK))

    def oversubscribed(self, threads: int, saturated: float) -> bool | None:
        """More busy threads than CPUs, the CPUs `saturated` in use or more: None when
        the capture does not say how many CPUs the host had and the fewest it can have
        had would make it so (perf script text of 8 threads at 1.9 CPUs: 2 CPUs or 16)."""
        if self.cpus_busy is None:
            return False
        # (the fewest CPUs are at least the average busy, and no more CPUs make it so:
        # asked of the samples only when that average would)
        n = max(1, math.ceil(self.cpus_busy - CPU_COUNT_SLACK))
        if threads <= n or self.cpus_busy < saturated * n:
            return False
        n = self.fewest_cpus() or 1
        over = threads > n and self.cpus_busy >= saturated * n
        return over if self.cpus_online is not None or not over else None

    def capacity(self, threads: int) -> Capacity:
        """The CPUs `threads` threads could use: one each, or all the host's when it had
        fewer. Without the host's CPU count, a range: as few as fewest_cpus, as many as
        the threads."""
        if self.cpus_online is not None:
            return Capacity(min(threads, self.cpus_online), min(threads, self.cpus_online))
        return Capacity(min(threads, self.fewest_cpus() or 1), threads)

    def thread_names(self, tids) -> list[str]:
        """The distinct names of these threads, most common first."""
        c = Counter(self.comm_of.get(t, "") for t in tids)
        return [name for name, _ in c.most_common() if name]


def _thread_weights(profile: Profile, event_id: int | None,
                    weights: dict[int, int]) -> StackThreads:
    """stack -> {tid: samples}, threads in first-seen order."""
    return StackThreads.of_samples(profile, event_id, weights)


class StackFlags(bytearray):
    """A set of stack ids as one byte per stack (`sid in flags`; flags[sid] is 0 or 1)."""

    def __init__(self, size: int = 0) -> None:
        super().__init__(size)

    def __contains__(self, sid) -> bool:
        return 0 <= sid < len(self) and self[sid] != 0


class FunctionCats:
    """function id -> its categories (a frozenset), for the functions of the weighted
    stacks (iterated in id order), as one small int per function."""

    __slots__ = ("_ix", "_kinds", "_kind_ix", "fids")

    def __init__(self, size: int) -> None:
        self._ix = array("i", [-1]) * size
        self._kinds: list[frozenset[str]] = []
        self._kind_ix: dict[frozenset[str], int] = {}
        self.fids = array("i")

    def set(self, fid: int, cats: frozenset[str]) -> None:
        k = self._kind_ix.get(cats)
        if k is None:
            k = self._kind_ix[cats] = len(self._kinds)
            self._kinds.append(cats)
        self._ix[fid] = k

    def kind_column(self) -> tuple[np.ndarray, list[frozenset[str]]]:
        """(each function's index into the list of category sets, -1 for one not of the
        weighted stacks; that list): a test of the categories made once per set."""
        return np.frombuffer(self._ix, dtype=np.int32), list(self._kinds)

    def keep_only(self, used: bytearray) -> None:
        """Forget the functions not flagged in `used`; iterate over those that are."""
        column_ops.keep_where(self._ix, used, -1)
        self.fids = array("i", compress(range(len(used)), used))

    def set_all(self, fids: array, cats: frozenset[str]) -> None:
        """set(f, cats) for each of these function ids (an array('i'))."""
        k = self._kind_ix.get(cats)
        if k is None:
            k = self._kind_ix[cats] = len(self._kinds)
            self._kinds.append(cats)
        column_ops.fill(self._ix, fids, k)

    def __getitem__(self, fid: int) -> frozenset[str]:
        k = self._ix[fid] if 0 <= fid < len(self._ix) else -1
        if k < 0:
            raise KeyError(fid)
        return self._kinds[k]

    def get(self, fid: int, default=None):
        k = self._ix[fid] if 0 <= fid < len(self._ix) else -1
        return default if k < 0 else self._kinds[k]

    def __contains__(self, fid) -> bool:
        return 0 <= fid < len(self._ix) and self._ix[fid] >= 0

    def __iter__(self):
        return iter(self.fids)

    def __len__(self) -> int:
        return len(self.fids)


class AppCode:
    """function id -> is it application code (for the functions of the weighted stacks;
    get's default for the others), read like the dict it replaces. `flags[fid]` is 0 for
    those others, 1 for no, 2 for yes."""

    __slots__ = ("flags",)

    def __init__(self, flags: bytearray) -> None:
        self.flags = flags

    def get(self, fid: int, default=None):
        v = self.flags[fid] if 0 <= fid < len(self.flags) else 0
        return default if not v else v == 2

    def __getitem__(self, fid: int) -> bool:
        v = self.flags[fid] if 0 <= fid < len(self.flags) else 0
        if not v:
            raise KeyError(fid)
        return v == 2

    def __contains__(self, fid) -> bool:
        return 0 <= fid < len(self.flags) and self.flags[fid] != 0

    def any(self) -> bool:
        """Is any function of the weighted stacks application code?"""
        return 2 in self.flags

    def marks(self) -> bytes:
        """1 by function id for application code, 0 for the rest: what stack_walks.first_marked
        stops at, to find a stack's application frame nearest to the leaf."""
        return self.flags.translate(_APP_ONLY)


_APP_ONLY = bytes([0, 0, 1]) + bytes(253)  # AppCode.flags -> 1 for application code


def _thread_names(profile: Profile, event_id: int | None) -> dict[int, str]:
    """Each thread's most frequent comm (a thread renamed during the capture keeps one)."""
    s_tid, s_comm, s_event = profile.s_tid, profile.s_comm, profile.s_event
    # (tid, comm) rows counted in one pass of Counter's loop, then per thread: the same
    # counts in the same first-seen order as counting row by row, in a third of the time
    if event_id is None or profile.only_event(event_id):
        pairs = count_rows(s_tid, s_comm)
    else:
        pairs = Counter(tc for tc, e in zip(zip(s_tid, s_comm), s_event) if e == event_id)
    counts: defaultdict[int, Counter] = defaultdict(Counter)
    for (tid, comm), n in pairs.items():
        counts[tid][comm] += n
    strings = profile.strings

    def name(ix: int) -> str:
        return strings[ix] if 0 <= ix < len(strings) else ""
    return {tid: name(c.most_common(1)[0][0]) for tid, c in counts.items()}
