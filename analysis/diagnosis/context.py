"""Facts every rule needs, computed once per capture: weights per stack, the categories of
each function, per-thread totals, CPU use, and helpers to gather evidence."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .. import cpu
from ..aggregate.functions import stack_functions
from ..aggregate.selection import Selection, stack_thread_weights, stack_weights
from ..profile import JIT, KERNEL, NO_ID, USER, Profile, is_scheduler_event
from . import knowledge, software


#: the threads of a stack no sample has (shared, never changed)
NO_THREADS: Counter = Counter()


@dataclass
class Context:
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
    thread_of: dict[int, Counter] = field(default_factory=dict)  # stack -> Counter(tid)
    comm_of: dict[int, str] = field(default_factory=dict)  # tid -> its thread name
    _stack_cats: dict[int, frozenset[str]] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)
    _idle: dict = field(default_factory=dict)

    @classmethod
    def build(cls, profile: Profile, event_id: int | None = None, label: str = "") -> Context:
        if event_id is None:
            event_id = profile.default_event()
        ctx = cls(profile, event_id, label.lower())
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
        for sid in ctx.weights:
            fids = stack_functions(profile, profile.stacks[sid])
            ctx.funcs[sid] = fids
            for f in fids:
                if f not in ctx.cats:
                    fn = profile.functions[f]
                    m = profile.mappings[fn.mapping_id]
                    ctx.cats[f] = knowledge.categories(fn.name, m.path, fn.resolved)
                    # JIT-compiled code (perf-PID.map) is the program's own: its
                    # JavaScript or Java methods
                    ctx.app[f] = (fn.resolved and m.kind in (USER, JIT) and not ctx.cats[f]
                                  and not knowledge.is_system_dso(m.path)
                                  and not knowledge.is_language_runtime(fn.name)
                                  and software.library_of_code("", fn.name) is None)
        per: defaultdict[int, Counter] = defaultdict(Counter)
        for (sid, tid), w in stack_thread_weights(profile, event_id).items():
            per[sid][tid] = w
        ctx.thread_of = dict(per)
        ctx.comm_of = _thread_names(profile, event_id)
        return ctx

    # ---- questions rules ask ------------------------------------------------------------
    def name(self, fid: int) -> str:
        return self.profile.functions[fid].name

    def dso(self, fid: int) -> str:
        return self.profile.mappings[self.profile.functions[fid].mapping_id].path

    def kind_of_leaf(self, sid: int) -> str:
        stack = self.profile.stacks[sid]
        if not stack:
            return ""
        return self.profile.mappings[self.profile.locations[stack[0]].mapping_id].kind

    def has(self, sid: int, category: str) -> bool:
        return category in self.stack_cats(sid)

    def stack_cats(self, sid: int) -> frozenset[str]:
        """Every category of the stack's functions (computed once per stack)."""
        cats = self._stack_cats.get(sid)
        if cats is None:
            cats = self._stack_cats[sid] = frozenset().union(
                *(self.cats[f] for f in self.funcs[sid]))
        return cats

    def memo(self, key, compute):
        """`compute()` once per key for this context (several rules ask the same)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def leaf_has(self, sid: int, category: str) -> bool:
        f = self.funcs[sid]
        return bool(f) and category in self.cats[f[0]]

    def share(self, samples: int) -> float:
        return samples / self.total if self.total else 0.0

    def cpus(self, samples: int) -> float | None:
        return None if self.cpus_busy is None else self.cpus_busy * self.share(samples)

    def is_idle_task(self, sid: int) -> bool:
        """Samples of the idle task (swapper, tid 0) or in the kernel's idle loop (once
        per stack: every rule asks)."""
        idle = self._idle.get(sid)
        if idle is None:
            tids = self.thread_of.get(sid, NO_THREADS)
            idle = self._idle[sid] = (len(tids) == 1 and 0 in tids) or \
                self.leaf_has(sid, "idle")
        return idle

    def having(self, category: str) -> dict[int, int]:
        """The stacks with a function of `category`, with their weights: one pass over
        the stacks indexes every category, instead of a pass per question."""
        index = self._memo.get("having")
        if index is None:
            index = self._memo["having"] = {}
            for sid, w in self.weights.items():
                for cat in self.stack_cats(sid):
                    index.setdefault(cat, {})[sid] = w
        return index.get(category, {})

    def matching(self, pred) -> dict[int, int]:
        return {sid: w for sid, w in self.weights.items() if pred(sid)}

    def samples(self, stacks: dict[int, int]) -> int:
        return sum(stacks.values())

    def threads(self, stacks: dict[int, int]) -> Counter:
        out: Counter = Counter()
        for sid in stacks:
            out.update(self.thread_of.get(sid, {}))
        return out

    def same_threads(self, stacks: dict[int, int]) -> dict[int, int]:
        """All samples of the threads that appear in `stacks`."""
        tids = set(self.threads(stacks))
        return {sid: w for sid, w in self.weights.items()
                if set(self.thread_of.get(sid, {})) & tids}

    def thread_totals(self) -> Counter:
        return self.threads(self.weights)

    # ---- evidence -------------------------------------------------------------------------
    def function_row(self, fid: int, samples: int) -> dict:
        """A function as evidence: id, name, DSO, samples and share of the capture."""
        return {"id": fid, "name": self.name(fid), "dso": self.dso(fid), "samples": samples,
                "share": round(self.share(samples), 4)}

    def top_functions(self, stacks: dict[int, int], pred, n: int = 5) -> list[dict]:
        """Functions satisfying `pred(fid)` in these stacks, by samples (once per stack)."""
        acc: Counter = Counter()
        for sid, w in stacks.items():
            for f in set(self.funcs[sid]):
                if pred(f):
                    acc[f] += w
        return [self.function_row(f, c) for f, c in acc.most_common(n)]

    def heaviest_stacks(self, stacks: dict[int, int], n: int = 3) -> list[dict]:
        out = []
        for sid, w in sorted(stacks.items(), key=lambda kv: -kv[1])[:n]:
            out.append({"frames": [self.name(f) for f in reversed(self.funcs[sid])],
                        "samples": w, "share": round(self.share(w), 4)})
        return out

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
        return self.profile.mappings[self.profile.functions[fid].mapping_id].kind == KERNEL \
            or knowledge.is_c_library(self.dso(fid))

    def library(self, fid: int) -> software.Library | None:
        """The well-known library a function belongs to, by its file or its name."""
        fn = self.profile.functions[fid]
        return software.library_of_code(self.dso(fid), fn.name if fn.resolved else "")

    def kernel_leaf(self, sid: int) -> bool:
        return self.kind_of_leaf(sid) == KERNEL

    def leaf(self, sid: int) -> int | None:
        f = self.funcs[sid]
        return f[0] if f else None

    def busy_stacks(self) -> dict[int, int]:
        """Every stack but the idle task's."""
        return self.matching(lambda sid: not self.is_idle_task(sid))

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


def _thread_names(profile: Profile, event_id: int | None) -> dict[int, str]:
    """Each thread's most frequent comm (a thread renamed during the capture keeps one)."""
    counts: defaultdict[int, Counter] = defaultdict(Counter)
    s_tid, s_comm, s_event = profile.s_tid, profile.s_comm, profile.s_event
    for i in range(len(s_tid)):
        if event_id is not None and s_event[i] != event_id:
            continue
        counts[s_tid[i]][s_comm[i]] += 1
    strings = profile.strings

    def name(ix: int) -> str:
        return strings[ix] if 0 <= ix < len(strings) else ""
    return {tid: name(c.most_common(1)[0][0]) for tid, c in counts.items()}
