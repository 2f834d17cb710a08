"""Facts every rule needs, computed once per capture: weights per stack, the categories of
each function, per-thread totals, CPU use, and helpers to gather evidence."""
from __future__ import annotations

from collections import Counter, defaultdict
from itertools import chain
from dataclasses import dataclass, field

from .. import cpu
from ..aggregate import _weigh
from ..aggregate.functions import StackFunctions
from ..aggregate.selection import Selection, stack_thread_weights, stack_weights
from ..profile import JIT, KERNEL, NO_ID, USER, Profile, is_scheduler_event
from . import knowledge, software
from .stack_threads import StackThreads


#: the threads of a stack no sample has (shared, never changed)
NO_THREADS: Counter = Counter()


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
    funcs: dict[int, list[int]] = field(default_factory=dict)  # stack -> function ids
    cats: dict[int, frozenset[str]] = field(default_factory=dict)  # function -> categories
    app: dict[int, bool] = field(default_factory=dict)  # function -> application code?
    thread_of: StackThreads = field(default_factory=lambda: StackThreads((), {}))
    comm_of: dict[int, str] = field(default_factory=dict)  # tid -> its thread name
    mask: dict[int, int] = field(default_factory=dict)  # stack -> bits of its categories
    leaf_mask: dict[int, int] = field(default_factory=dict)  # stack -> bits of its leaf
    idle: set[int] = field(default_factory=set)  # stacks of the idle task
    kernel_leaf_stacks: set[int] = field(default_factory=set)
    _bits: dict[str, int] = field(default_factory=dict)  # category -> its bit
    stack_funcs: StackFunctions | None = None  # funcs, and each stack's distinct ones
    _memo: dict = field(default_factory=dict)
    _passes: dict[int, bool] = field(default_factory=dict)
    _library: dict = field(default_factory=dict)  # function -> software.Library | None
    _file_library: dict = field(default_factory=dict)  # mapping -> software.Library | None

    @classmethod
    def build(cls, profile: Profile, event_id: int | None = None, label: str = "") -> Context:
        if event_id is None:
            event_id = profile.default_event()
        ctx = cls(profile, event_id, label.lower())
        ctx.stack_funcs = StackFunctions(profile)
        ctx.funcs = ctx.stack_funcs.funcs
        if event_id is not None and is_scheduler_event(profile.events[event_id].name):
            # the scheduler's tracepoints sample switches, not CPU time: the on-CPU
            # rules have nothing to read (blocked_rules read the switches)
            ctx.cpus_busy = cpu.cpus_busy(profile, event_id)
            ctx.cpus_online = profile.meta.cpus_online
            return ctx
        ctx.weights = stack_weights(profile, Selection(event_id=event_id))
        ctx.total = sum(ctx.weights.values())
        ctx.cpus_busy = cpu.cpus_busy(profile, event_id) if event_id is not None else None
        ctx.cpus_online = profile.meta.cpus_online
        ctx._index_stacks()
        ctx.thread_of = _thread_weights(profile, event_id, ctx.weights)
        ctx.comm_of = _thread_names(profile, event_id)
        idle_bit = ctx.bit("idle")
        for sid in ctx.weights:
            if ctx.thread_of.only_on(sid, 0) or ctx.leaf_mask[sid] & idle_bit:
                ctx.idle.add(sid)
        return ctx

    def _index_stacks(self) -> None:
        """funcs, cats, app, mask, leaf_mask and kernel_leaf_stacks, in one pass over the
        stacks; a function's categories are looked up once (by its DSO alone when it has
        no name: a stripped binary has one unnamed function per sampled address)."""
        profile = self.profile
        locs, functions, mappings = profile.locations, profile.functions, profile.mappings
        cats, app, bit_of_cats = self.cats, self.app, {}
        app_bit = self.bit(APP)
        unnamed: dict[int, frozenset[str]] = {}  # mapping -> categories by DSO
        self.stack_funcs.fill(self.weights)
        funcs = self.funcs
        fmask: dict[int, int] = {}  # function -> its bits
        # (each function once, in id order)
        for f in sorted(set(chain.from_iterable(map(funcs.__getitem__, self.weights)))):
            fn = functions[f]
            mp = mappings[fn.mapping_id]
            if fn.resolved:
                c = knowledge.categories(fn.name, mp.path, True)
                # JIT-compiled code (perf-PID.map) is the program's own: its
                # JavaScript or Java methods
                a = (mp.kind in (USER, JIT) and not c
                     and not knowledge.is_system_dso(mp.path)
                     and not knowledge.is_language_runtime(fn.name)
                     and software.library_of_code("", fn.name) is None)
            else:
                c = unnamed.get(fn.mapping_id)
                if c is None:
                    c = unnamed[fn.mapping_id] = knowledge.categories(fn.name, mp.path, False)
                a = False
            cats[f], app[f] = c, a
            b = bit_of_cats.get(c)
            if b is None:
                b = bit_of_cats[c] = self.bits(c)
            fmask[f] = b | app_bit if a else b
        self.mask = _weigh.or_masks(self.weights, funcs, fmask)
        stacks = profile.stacks
        for sid in self.weights:
            fids = funcs[sid]
            self.leaf_mask[sid] = fmask[fids[0]] if fids else 0
            stack = stacks[sid]
            if stack and mappings[locs[stack[0]].mapping_id].kind == KERNEL:
                self.kernel_leaf_stacks.add(sid)

    # ---- questions rules ask ------------------------------------------------------------
    def bit(self, category: str) -> int:
        """The bit of a category in `mask` (given on first use: rules may ask of
        categories no function has)."""
        b = self._bits.get(category)
        if b is None:
            if len(self._bits) == 64:  # (_weigh.select reads masks as 64-bit ints)
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
        return _weigh.select(self.weights, self.mask, self.leaf_mask, self.bits(any_of),
                             self.bits(all_of), self.bits(none_of), self.bits(leaf_any),
                             self.idle if busy else None)

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

    def samples(self, stacks: dict[int, int]) -> int:
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

    def top_functions(self, stacks: dict[int, int], pred, n: int = 5) -> list[dict]:
        """Functions satisfying `pred(fid)` in these stacks, by samples (once per stack;
        `pred` once per function)."""
        self.stack_funcs.fill(stacks)
        acc = _weigh.totals(stacks, self.stack_funcs.distincts)
        kept = Counter({f: c for f, c in acc.items() if pred(f)})
        return [self.function_row(f, c) for f, c in kept.most_common(n)]

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
        self.stack_funcs.fill(stacks)
        distinct = self.stack_funcs.distincts
        present = {f for sid in stacks for f in distinct[sid]}
        return [r for r in rows if r["id"] in present]

    def app_functions(self, stacks: dict[int, int], n: int = 3) -> list[dict]:
        return self.top_functions(stacks, lambda f: self.app.get(f, False), n)

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
        whoever called it, which rules blame on the frame above."""
        p = self._passes.get(fid)
        if p is None:
            p = self._passes[fid] = self.profile.mappings[
                self.profile.functions[fid].mapping_id].kind == KERNEL \
                or knowledge.is_c_library(self.dso(fid))
        return p

    def library(self, fid: int) -> software.Library | None:
        """The well-known library a function belongs to, by its file or its name."""
        if fid in self._library:
            return self._library[fid]
        fn = self.profile.functions[fid]
        lib = self._library[fid] = software.library_of_code(
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
            out: dict[int, tuple[str, software.Library]] = {}
            for sid in self.weights:
                fs = self.funcs[sid]
                lib = self.file_library(fs[0]) if fs else None
                if lib is not None and lib.interpreter:
                    out[sid] = (self.dso(fs[0]), lib)
            return out
        return self.memo("interpreter_leaves", compute)

    def kernel_leaf(self, sid: int) -> bool:
        return sid in self.kernel_leaf_stacks

    def leaf(self, sid: int) -> int | None:
        f = self.funcs[sid]
        return f[0] if f else None

    def busy_stacks(self) -> dict[int, int]:
        """Every stack but the idle task's (once; callers must not modify the dict)."""
        return self.memo("busy", lambda: self.select(busy=True))

    def callers_above(self, stacks: dict[int, int], pred, n: int = 3) -> list[dict]:
        """The application functions nearest above (towards the root of) the first frame
        satisfying `pred(fid)` in each stack: who called into that library or wait,
        by samples. Stacks whose callers are not in the chain (no frame pointers) add
        nothing."""
        acc: Counter = Counter()
        for sid, w in stacks.items():
            fids = self.funcs[sid]
            start = next((i for i, f in enumerate(fids) if pred(f)), None)
            if start is None:
                continue
            caller = next((f for f in fids[start + 1:]
                           if self.app.get(f, False) and not pred(f)), None)
            if caller is not None:
                acc[caller] += w
        return [self.function_row(f, c) for f, c in acc.most_common(n)]

    def thread_use(self, tids=None, min_share: float = 0.02) -> tuple[float | None, int,
                                                                     list[tuple[int, int]]]:
        """(CPUs used, CPUs they could use, [(tid, samples)]) of the threads with at least
        `min_share` of the samples (of all threads, or of `tids`): they could use one
        CPU each, or all the CPUs perf saw when there are fewer."""
        totals = self.thread_totals()
        active = [(tid, n) for tid, n in totals.most_common()
                  if tid not in (0, NO_ID) and n >= min_share * self.total
                  and (tids is None or tid in tids)]
        used = self.cpus(sum(n for _, n in active))
        n = len(active)
        capacity = n if self.cpus_online is None else min(n, self.cpus_online)
        return used, capacity, active

    def thread_names(self, tids) -> list[str]:
        """The distinct names of these threads, most common first."""
        c = Counter(self.comm_of.get(t, "") for t in tids)
        return [name for name, _ in c.most_common() if name]


def _thread_weights(profile: Profile, event_id: int | None,
                    weights: dict[int, int]) -> StackThreads:
    """stack -> {tid: samples}, threads in first-seen order."""
    return StackThreads(stack_thread_weights(profile, event_id).items(), weights)


def _thread_names(profile: Profile, event_id: int | None) -> dict[int, str]:
    """Each thread's most frequent comm (a thread renamed during the capture keeps one)."""
    s_tid, s_comm, s_event = profile.s_tid, profile.s_comm, profile.s_event
    # (tid, comm) rows counted in one pass of Counter's loop, then per thread: the same
    # counts in the same first-seen order as counting row by row, in a third of the time
    if event_id is None or profile.only_event(event_id):
        pairs = Counter(zip(s_tid, s_comm))
    else:
        pairs = Counter(tc for tc, e in zip(zip(s_tid, s_comm), s_event) if e == event_id)
    counts: defaultdict[int, Counter] = defaultdict(Counter)
    for (tid, comm), n in pairs.items():
        counts[tid][comm] += n
    strings = profile.strings

    def name(ix: int) -> str:
        return strings[ix] if 0 <= ix < len(strings) else ""
    return {tid: name(c.most_common(1)[0][0]) for tid, c in counts.items()}
