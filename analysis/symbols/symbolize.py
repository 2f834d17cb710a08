"""The symbolization pass: one walk over the profile's locations, never over samples.

For each location without a name:
1. place it: a raw absolute address goes through /proc/PID/maps to its DSO and file
   offset; a kernel address to the kernel;
2. find the files for its DSO: by GNU build-id first, then by file name (also the
   `.debug` and debuglink names). A name match whose build-id differs from the
   capture's is a mismatch: reported, never used;
3. file offset -> ELF address through the PT_LOAD segments of the binary that ran (a
   separate debug file's segment offsets are not real), caller frames at address - 1;
4. look the address up in the best symbol table (debug .symtab, else .symtab, else
   .dynsym plus PLT stubs), demangle, and point the location at that function.

Kernel addresses use kallsyms/System.map, relocated by the kernel map's `_text` when
the capture knows it (KASLR). JIT frames use perf-PID.map and jit-PID.dump files, each
matched to its process (jit_sources.py), named as perf prints them (whole: perf neither
demangles nor shortens them). The coverage report says, per DSO, how much got named,
from which file, and what to upload when it did not.
"""
from __future__ import annotations

import hashlib
import re
import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ..aggregate.functions import ranked_mappings
from ..aggregate.selection import stack_weights
from ..aggregate.stack_sums import StackSets, location_weights
from ..errors import AnalysisError
from ..location_table import compact_locations, expand_locations
from ..profile import (JIT, KERNEL, KERNEL_ADDR, UNKNOWN, USER, VDSO, Profile,
                       classify_dso, unresolved_name)
from ..unwind.cfi import CfiTable, image_base, table_for
from ..unwind.unwind_pass import unwind
from . import budget, jit_sources, jitdump, kallsyms, perfmap, procmaps
from .demangle import demangle, short_name
from .elf import ElfInfo, function_symbols, read_info
from .index_cache import cache_key, cached, file_sha256
from .inputs import SymbolFile, collect, read_bytes
from .lines import LineTable, line_table
from .symindex import STB_GLOBAL, SymbolIndex, build_index

if TYPE_CHECKING:
    from .debuginfod import Client


@dataclass
class _KernelSource:
    origin: str
    index: SymbolIndex
    build_id: str
    hidden: bool  # kptr_restrict zeroed every address
    text: int | None  # address of _text in this file, to relocate against the capture


@dataclass
class _DsoPlan:
    """How one DSO of the capture gets its names (decided once per DSO)."""
    status: str
    symbols: ElfInfo | None = None
    runtime: ElfInfo | None = None
    index: SymbolIndex | None = None
    table: str = ""
    note: str = ""
    mismatch: list[ElfInfo] = field(default_factory=list)
    lines: "LineTable | bool | None" = None  # made on first use; False: no debug info
    candidates: list[ElfInfo] = field(default_factory=list)  # files of this DSO


#: symbols that end sections rather than start functions: an address "in" one lies past
#: the kernel's text (kallsyms lists `_etext`, `_end`, `__start_*`/`__stop_*` markers)
_SECTION_MARKER = re.compile(r"^(_etext|_edata|_end|_sinittext|_einittext|__(start|stop|end)_\w+)$")
#: share of a kernel mapping's sampled frames at markers that proves another kernel
KERNEL_MISMATCH_SHARE = 0.02  # the right kallsyms put 0 of 24,645 frames there


class Symbolizer:
    def __init__(self, files: list[SymbolFile], notes: list[str], inline: bool = True,
                 debuginfod: "Client | None" = None) -> None:
        self.notes = list(notes)
        self.inline = inline
        #: asked for the files of a build-id no input has (debuginfod.py); None: never
        self.debuginfod = debuginfod
        self.fetched: dict[int, str] = {}  # id(ElfInfo) -> the server it came from
        self.asked: set[str] = set()  # build-ids asked of the servers
        self.elfs: list[ElfInfo] = []
        self.kernels: list[_KernelSource] = []
        self.maps: list[procmaps.MapEntry] = []
        self.jit_sources: list[jit_sources.JitSource] = []
        self._jit_chosen: dict[int, list[jit_sources.JitSource]] = {}  # by mapping id
        self._jit_addresses: dict[int, set[int]] | None = None  # sampled, by mapping id
        self.hints: dict[int, SymbolFile] = {}
        #: kernel mappings whose kallsyms turned out to be another kernel's:
        #: (addresses past its text, addresses named)
        self.kernel_mismatch: dict[int, tuple[int, int]] = {}
        self._weights: dict[int, int] | None = None
        #: each symbol file's budget (budget.py), by path: spent over all its readings
        self._budgets: dict[str, budget.Budget] = {}
        for sf in files:
            try:
                with self._reading(sf.path, sf.origin, sf.sha256):
                    self._add(sf)
            except budget.OverBudget as e:
                self._note(str(e))
            except (AnalysisError, OSError, ValueError) as e:
                self.notes.append(f"{sf.origin}: unreadable ({e}); skipped")
        self.procmaps = procmaps.ProcMaps(self.maps) if self.maps else None
        self._plans: dict[int, _DsoPlan] = {}

    def _add(self, sf: SymbolFile) -> None:
        if sf.kind == "elf":
            info = read_info(sf.path, sf.origin, sf.sha256)
            info.sha256 = sf.sha256
            if not info.build_id and sf.build_id_hint:
                info.build_id = sf.build_id_hint
            self.notes.extend(f"{sf.origin}: {d}" for d in info.damage)
            self.elfs.append(info)
            self.hints[id(info)] = sf
        elif sf.kind == "kallsyms":
            data = read_bytes(sf)
            key = cache_key("kallsyms", hashlib.sha256(data).hexdigest())
            index = cached(key, lambda: kallsyms.parse(data))
            hidden = len(index) > 0 and index.starts[-1] == 0
            self.kernels.append(_KernelSource(sf.origin, index, sf.build_id_hint, hidden,
                                              kallsyms.text_address(data)))
        elif sf.kind == "maps":
            self.maps.extend(procmaps.parse(read_bytes(sf)).entries)
        elif sf.kind == "perfmap":
            data = read_bytes(sf)
            key = cache_key("perfmap", sf.sha256 or hashlib.sha256(data).hexdigest())
            self.jit_sources.append(jit_sources.JitSource(
                sf.origin, "perf map", jit_sources.pid_in_name(sf.origin),
                cached(key, lambda: perfmap.parse(data))))
        elif sf.kind == "jitdump":
            dump = jitdump.read(sf.path)
            if dump.stopped:
                self.notes.append(f"{sf.origin}: read up to where {dump.stopped}; the "
                                  f"{dump.loads:,} code loads before it are used")
            self.jit_sources.append(jit_sources.JitSource(sf.origin, "jitdump", dump.pid,
                                                          dump.index))

    # ---- budgets of the symbol files -------------------------------------------------
    def _reading(self, path: str, name: str, key: str = ""):
        """The block reads the symbol file at `path`: charged to its budget, kept for all
        of its readings in this analysis (budget.reading)."""
        b = self._budgets.get(path)
        if b is None:
            b = self._budgets[path] = budget.Budget(name, key)
        return budget.reading(name, key, b)

    def _reading_elf(self, e: ElfInfo):
        return self._reading(e.path, e.name, _digest(e))

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _unwind_table(self, e: ElfInfo, arch: str) -> CfiTable | None:
        """The unwind table of `e` (cfi.table_for), read within its budget; None, with a
        note, when it is over."""
        try:
            with self._reading_elf(e):
                return table_for(e.path, _digest(e), arch)
        except budget.OverBudget as err:
            self._note(str(err))
            return None

    # ---- the pass ----------------------------------------------------------------------
    def run(self, p: Profile) -> None:
        # where a caller is looked up: perf names a frame-pointer call chain's (the
        # kernel's, and user space's under -g) at the return address itself
        # (add_callchain_ip), so a call that ends a function names the next one, as perf
        # shows it; libdw's DWARF unwinding hands perf the address before it
        dwarf = p.user_stacks is not None
        if dwarf:  # DWARF-mode stacks: callers first, then names
            unwind(p, lambda mid: self.plan(p, mid, fetch=True), self._unwind_table)
        kernel_named: dict[int, list] = defaultdict(list)  # mapping -> (loc, old, name)
        # whether each function is named, read once (the functions this pass makes name
        # only locations it has passed: a location not reached yet has the old ones)
        named = bytes(f.resolved for f in p.functions)
        for loc in p.locations:
            fs = loc.functions
            if (named[fs[0]] if len(fs) == 1 else any(named[f] for f in fs)):
                continue  # the input already named it
            self._place(p, loc)
            mapping = p.mappings[loc.mapping_id]
            adjust = 1 if loc.is_return and dwarf and mapping.kind != KERNEL else 0
            name = None
            if mapping.kind == KERNEL:
                name = self._kernel_name(mapping, loc.address - adjust)
                if name is not None:
                    kernel_named[loc.mapping_id].append((loc, loc.functions, name))
            elif mapping.kind == JIT or (mapping.kind == UNKNOWN and loc.address):
                name = jit_sources.name(self._jit_for(p, loc.mapping_id),
                                        loc.address - adjust)
                if name is not None:  # (as perf prints them: no C++ reading)
                    loc.functions = (p.function(name, loc.mapping_id, resolved=True,
                                                system_name=name),)
                continue
            elif mapping.kind in (USER, VDSO) and loc.dso_offset is not None:
                name = self._user_name(p, loc.mapping_id, loc.dso_offset, adjust)
            if name is not None:
                fid = p.function(short_name(demangle(name)), loc.mapping_id,
                                 resolved=True, system_name=name)
                loc.functions = (fid,)
                if mapping.kind == USER and self.inline:
                    # a caller's inlined frames and line are those of its call, the
                    # instruction before the return address, when that is in the same
                    # function (the return address's line is often the next statement)
                    site = adjust
                    if loc.is_return and not adjust and self._user_name(
                            p, loc.mapping_id, loc.dso_offset, 1) == name:
                        site = 1
                    self._inline(p, loc, site)
        for mapping_id, named in kernel_named.items():
            self._check_kernel(p, mapping_id, named)

    def _check_kernel(self, p: Profile, mapping_id: int, named: list) -> None:
        """Kernel symbols of another kernel still name every address (each falls after
        some symbol) but many fall past the end of its text: at `_etext` and other
        section markers, which no sampled instruction is in. Then the names are wrong:
        they are taken back and coverage says so."""
        weight = self._frame_weights(p)  # a frame in many samples counts for many
        total = sum(weight.get(loc.id, 0) for loc, _, _ in named)
        past = sum(weight.get(loc.id, 0) for loc, _, name in named
                   if _SECTION_MARKER.match(name))
        if total < 20 or past < KERNEL_MISMATCH_SHARE * total:
            return
        for loc, old, _ in named:
            loc.functions = old
        self.kernel_mismatch[mapping_id] = (past, total)

    def _frame_weights(self, p: Profile) -> dict[int, int]:
        if self._weights is None:  # (each stack once per location in it)
            at = location_weights(p, stack_weights(p), True)
            used = np.flatnonzero(at)
            self._weights = dict(zip(used.tolist(), at[used].tolist()))
        return self._weights

    def _place(self, p: Profile, loc) -> None:
        """Give a raw absolute address its DSO and file offset."""
        mapping = p.mappings[loc.mapping_id]
        if loc.address >= KERNEL_ADDR and mapping.kind in (UNKNOWN, KERNEL):
            if mapping.kind == UNKNOWN:
                loc.mapping_id = p.mapping("[kernel.kallsyms]")
            return
        if loc.dso_offset is not None or self.procmaps is None or not loc.address:
            return
        entry = self.procmaps.find(loc.address)
        if entry is None:
            return
        if mapping.kind != UNKNOWN and mapping.basename != entry.path.rsplit("/", 1)[-1]:
            return  # the maps file is of another process
        loc.mapping_id = p.mapping(entry.path)
        loc.dso_offset = loc.address - entry.start + entry.offset
        if classify_dso(entry.path) != UNKNOWN:  # (run() places unnamed locations only)
            fid = p.function(unresolved_name(p, loc.mapping_id, loc.address, loc.dso_offset),
                             loc.mapping_id, resolved=False, system_name="[unknown]")
            loc.functions = (fid,)

    def _kernel_source(self, mapping) -> _KernelSource | None:
        usable = [k for k in self.kernels if not k.hidden and len(k.index)]
        if mapping.build_id:
            exact = [k for k in usable if k.build_id == mapping.build_id]
            if exact:
                return exact[0]
            usable = [k for k in usable if not k.build_id or k.build_id == mapping.build_id]
        return usable[0] if usable else None

    def _kernel_name(self, mapping, address: int) -> str | None:
        src = self._kernel_source(mapping)
        if src is None:
            return None
        reloc = 0
        if mapping.pgoff and src.text:  # runtime address of _text (perf's kernel map)
            reloc = mapping.pgoff - src.text
        return src.index.lookup(address - reloc)

    def _jit_for(self, p: Profile, mapping_id: int) -> list[jit_sources.JitSource]:
        """The JIT files that name this mapping (chosen once per mapping): by the PID
        the mapping and the files say, else by which names its sampled addresses."""
        chosen = self._jit_chosen.get(mapping_id)
        if chosen is None:
            mapping = p.mappings[mapping_id]
            if mapping.kind != JIT:  # frames nothing placed: any file may know them
                chosen = self.jit_sources
            else:
                if self._jit_addresses is None:  # one pass for every JIT mapping
                    self._jit_addresses = defaultdict(set)
                    for loc in p.locations:
                        if p.mappings[loc.mapping_id].kind == JIT and loc.address:
                            self._jit_addresses[loc.mapping_id].add(loc.address)
                claimed = {pid for m in p.mappings if m.kind == JIT
                           for pid in [jit_sources.mapping_pid(m.path)] if pid is not None}
                chosen = jit_sources.choose(self.jit_sources,
                                            jit_sources.mapping_pid(mapping.path),
                                            sorted(self._jit_addresses[mapping_id]),
                                            claimed)
            self._jit_chosen[mapping_id] = chosen
        return chosen

    def _user_name(self, p: Profile, mapping_id: int, dso_offset: int, adjust: int):
        plan = self.plan(p, mapping_id, fetch=True)
        if plan.index is None:
            return None
        return plan.index.lookup(_vaddr(plan, dso_offset) - adjust)

    def _inline(self, p: Profile, loc, adjust: int) -> None:
        """The functions inlined at a named location, and every frame's file and line,
        when the DSO's symbol file has DWARF debug info. The symbol table's function
        stays the outermost frame, as perf keeps it."""
        plan = self.plan(p, loc.mapping_id)
        if plan.lines is None:  # the first candidate with DWARF: debug files first
            plan.lines = False
            for e in sorted(plan.candidates, key=lambda e: not e.debug_only):
                try:
                    with self._reading_elf(e):
                        table = line_table(e.path, _digest(e))
                except budget.OverBudget as err:
                    self._note(str(err))
                    continue
                if table is not None:
                    plan.lines = table
                    break
        if not plan.lines:
            return
        elf = plan.runtime or plan.symbols
        rel = _vaddr(plan, loc.dso_offset) - adjust - image_base(s.vaddr for s in elf.segments)
        frames = plan.lines.frames(rel)
        if not frames:
            return
        inlined = tuple(p.function(short_name(demangle(f.symbol)), loc.mapping_id,
                                   resolved=True, system_name=f.symbol)
                        for f in frames[:-1] if f.symbol)
        loc.functions = inlined + loc.functions
        loc.lines = tuple((f.file, f.line) for f in frames if f.symbol)

    # ---- choosing files for a DSO ------------------------------------------------------
    def plan(self, p: Profile, mapping_id: int, fetch: bool = False) -> _DsoPlan:
        """`fetch`: a frame of this DSO needs a name (the coverage report only asks, and
        asks no server)."""
        plan = self._plans.get(mapping_id)
        if plan is None:
            mapping = p.mappings[mapping_id]
            if fetch and self.debuginfod is not None and mapping.kind == USER:
                self._fetch(mapping.build_id)
            plan = self._plans[mapping_id] = self._make_plan(mapping)
        return plan

    def _fetch(self, build_id: str) -> None:
        """What the inputs lack for `build_id`, from the debuginfod servers: a file with
        a symbol table (debuginfo) unless one was given, and the binary that ran
        (executable: its segments place file offsets, its PLT names stubs) unless one
        was given. A build-id nobody has is asked once per analysis (and the client
        remembers misses across analyses)."""
        if not build_id or build_id in self.asked:
            return
        self.asked.add(build_id)
        have = [e for e in self.elfs if e.build_id == build_id]
        wants = []
        if not any(e.has_symtab for e in have):
            wants.append("debuginfo")
        if not any(not e.debug_only and e.segments for e in have):
            wants.append("executable")
        for kind in wants:
            try:
                got = self.debuginfod.fetch(build_id, kind)
            except OSError as e:  # the cache folder (full, not writable): no names, no failure
                self.notes.append(f"debuginfod: {build_id}/{kind} not fetched ({e})")
                continue
            if got is None:
                continue
            try:
                with self._reading(got.path, got.url, got.sha256):
                    info = read_info(got.path, got.url, got.sha256)
            except budget.OverBudget as e:
                self._note(str(e))
                continue
            except AnalysisError as e:
                self.notes.append(f"{got.url}: unreadable ({e}); skipped")
                continue
            self.notes.extend(f"{got.url}: {d}" for d in info.damage)
            info.sha256 = got.sha256
            if info.build_id != build_id:  # (the client checked; a cache is a disk)
                continue
            self.elfs.append(info)
            self.fetched[id(info)] = got.server
            if kind == "debuginfo" and info.has_symtab and not info.debug_only and \
                    info.segments:
                break  # an unstripped binary: it is the executable too

    def _make_plan(self, mapping) -> _DsoPlan:
        want = mapping.build_id
        base = mapping.basename
        by_name = [e for e in self.elfs if base and base in _names(e, self.hints.get(id(e)))]
        if want:
            cands = [e for e in self.elfs if e.build_id == want]
            mismatch = [e for e in by_name if e.build_id and e.build_id != want]
            if not cands:
                unchecked = [e for e in by_name if not e.build_id]
                if mismatch:
                    return _DsoPlan("build-id mismatch", mismatch=mismatch)
                if not unchecked:
                    return _DsoPlan("missing")
                cands = unchecked
        else:
            cands = by_name
            mismatch = []
        if not cands:
            return _DsoPlan("missing")
        with_symtab = [e for e in cands if e.has_symtab]
        symbols = (with_symtab or [e for e in cands if e.has_dynsym] or [None])[0]
        runtime = next((e for e in cands if not e.debug_only and e.segments), None)
        if symbols is None:
            return _DsoPlan("stripped", runtime=runtime, table="none", candidates=cands)
        try:
            with self._reading_elf(symbols):
                index, table = _elf_index(symbols)
        except AnalysisError as e:  # damaged, or over its budget
            if isinstance(e, budget.OverBudget):
                self._note(str(e))
            return _DsoPlan("unreadable", note=str(e))
        # PLT stubs are only in the binary that ran; add them when symbols come from a
        # separate debug file
        if runtime is not None and runtime is not symbols:
            try:
                merged = index
                with self._reading_elf(runtime):
                    index = cached(cache_key("elf+plt", _digest(symbols), _digest(runtime)),
                                   lambda: _merge_plt(merged, runtime))
            except budget.OverBudget as e:
                self._note(str(e))
            except AnalysisError:
                pass
        status = "resolved" if table == ".symtab" else "stripped"
        note = "" if want else "matched by file name (the capture has no build-id to check)"
        if runtime is None and symbols.debug_only:
            note = (note + "; " if note else "") + \
                "no copy of the binary that ran: file offsets taken as addresses"
        return _DsoPlan(status, symbols, runtime, index, table, note, mismatch,
                        candidates=cands)


def _vaddr(plan: _DsoPlan, dso_offset: int) -> int:
    """A file offset's ELF address, through the segments of the binary that ran."""
    vaddr = plan.runtime.vaddr_of(dso_offset) if plan.runtime is not None else None
    return dso_offset if vaddr is None else vaddr  # PIE and .so map offsets 1:1


def _names(e: ElfInfo, sf: SymbolFile | None) -> set[str]:
    out = {e.name.rsplit("/", 1)[-1], e.name.rsplit(":", 1)[-1].rsplit("/", 1)[-1]}
    for n in list(out):
        if n.endswith(".debug"):
            out.add(n[:-len(".debug")])
    if e.debuglink:
        out.add(e.debuglink.removesuffix(".debug"))
    if e.soname:
        out.add(e.soname)
    if sf is not None and sf.path_hint:
        out.add(sf.path_hint.rsplit("/", 1)[-1])
    return out


def _elf_index(e: ElfInfo) -> tuple[SymbolIndex, str]:
    """Symbols of one ELF, cached on disk by the digest of its bytes (the table used
    follows from them). Never by its build-id: any file can claim any build-id."""
    table = ".symtab" if e.has_symtab else ".dynsym" if e.has_dynsym else "none"
    return cached(cache_key("elf", _digest(e)),
                  lambda: function_symbols(e.path, e.name, _digest(e))[0]), table


def _digest(e: ElfInfo) -> str:
    """The digest the caller recorded for the file, else one computed here, once."""
    if not e.sha256:
        e.sha256 = file_sha256(e.path)
    return e.sha256


def _merge_plt(index: SymbolIndex, runtime: ElfInfo) -> SymbolIndex:
    plt, _ = _elf_index(runtime)
    names = [bytes(plt.blob[plt.name_offsets[i]:plt.name_offsets[i + 1]])
             for i in range(len(plt))]
    extra = [i for i, n in enumerate(names) if n.endswith(b"@plt")]
    if not extra:
        return index
    starts = list(index.starts) + [plt.starts[i] for i in extra]
    sizes = [index.ends[i] - index.starts[i] for i in range(len(index))] + \
        [plt.ends[i] - plt.starts[i] for i in extra]
    binds = [STB_GLOBAL] * len(starts)
    all_names = [bytes(index.blob[index.name_offsets[i]:index.name_offsets[i + 1]])
                 for i in range(len(index))] + [names[i] for i in extra]
    return build_index(starts, sizes, binds, all_names)


# ---- coverage --------------------------------------------------------------------------
def coverage(p: Profile, sym: Symbolizer | None) -> list[dict]:
    """Per DSO with samples: how much of it got names, from what, and what would help."""
    weights = stack_weights(p)
    # samples per DSO (each stack once per DSO in it; equal counts in the order the
    # DSOs were first met) and, per DSO, its frames' and its named frames' weights, from
    # each location's weight summed over the stacks (not a loop per frame)
    rows, _, total = ranked_mappings(p, weights, StackSets(p), lambda m, s, t: -t[m])
    touched = {m: total[m] for m in rows}
    at = location_weights(p, weights, False).tolist()
    resolved = bytes(f.resolved for f in p.functions)
    frames: dict[int, int] = defaultdict(int)
    named: dict[int, int] = defaultdict(int)
    for loc in p.locations:
        w = at[loc.id]
        if w:
            frames[loc.mapping_id] += w
            if any(resolved[f] for f in loc.functions):
                named[loc.mapping_id] += w
    out = []
    for m, samples in sorted(touched.items(), key=lambda kv: -kv[1]):
        mp = p.mappings[m]
        fraction = named[m] / frames[m] if frames[m] else 0.0
        entry = {"dso": mp.path, "kind": mp.kind, "build_id": mp.build_id or None,
                 "samples": samples, "resolved": round(fraction, 4), "source": None,
                 "status": "", "reason": "", "advice": "", "table": None,
                 # where the names came from: uploaded, debuginfod <server>, kallsyms,
                 # perf map, in the capture (the input named its frames), not found
                 "from": "in the capture" if fraction >= 0.999 else "not found"}
        _explain(p, m, entry, sym, fraction)
        out.append(entry)
    return out


def _explain(p: Profile, m: int, entry: dict, sym: Symbolizer | None, fraction: float):
    mp = p.mappings[m]
    bid = mp.build_id
    if mp.kind == UNKNOWN:
        entry.update(status="unknown", reason="frames outside any known mapping",
                     advice="upload /proc/PID/maps of the process taken during the "
                            "recording, or upload the perf.data itself")
        return
    if sym is None:
        entry.update(status="resolved" if fraction >= 0.999 else "missing",
                     reason="" if fraction >= 0.999 else "no symbol files were given")
        if fraction < 0.999:
            entry["advice"] = _advice(mp, p)
        return
    if mp.kind == KERNEL:
        src = sym._kernel_source(mp)
        if src is not None:
            entry["source"] = src.origin
            entry["from"] = "kallsyms"
        if m in sym.kernel_mismatch:
            past, total = sym.kernel_mismatch[m]
            entry.update(status="mismatch", reason=(
                f"kernel symbols do not match this capture: in {100 * past / total:.0f}% "
                f"of the kernel frames sampled the address falls past the end of their "
                f"text (another kernel or build); no names were taken from them"),
                advice="copy /proc/kallsyms on the recording host, during the boot the "
                       "capture was taken in (or upload the `perf archive` of the capture)")
            return
        if fraction >= 0.999:
            entry["status"] = "resolved"
        elif any(k.hidden for k in sym.kernels) and src is None:
            entry.update(status="unreadable", reason="the kallsyms copy shows only zero "
                         "addresses (kptr_restrict)", advice="copy /proc/kallsyms as root")
        else:
            entry.update(status="missing" if src is None else "partial",
                         reason="no kallsyms or System.map given" if src is None else
                         "some addresses are outside the symbols given",
                         advice=_advice(mp, p))
        return
    if mp.kind == JIT:
        _explain_jit(m, entry, sym, fraction)
        return
    plan = sym.plan(p, m)
    if plan.symbols is not None:
        entry["source"] = plan.symbols.name
        server = sym.fetched.get(id(plan.symbols))
        entry["from"] = f"debuginfod {server}" if server else "uploaded"
    else:
        entry["from"] = "in the capture" if fraction >= 0.999 else "not found"
    entry["status"] = plan.status if fraction < 0.999 or plan.status != "resolved" \
        else "resolved"
    entry["table"] = plan.table or None  # .symtab, .dynsym (stripped), none
    reason = plan.note
    if plan.status == "build-id mismatch":
        got = ", ".join(f"{e.name} has build-id {e.build_id}" for e in plan.mismatch)
        reason = f"{got}, but the capture ran {bid}: those symbols belong to another build"
        entry["advice"] = f"upload the files of the build that ran ({_advice(mp, p)})"
    elif plan.status == "missing":
        reason = "no file for this DSO among the symbols given"
        if not bid:
            reason += ("; the capture has no build-id for it (perf records build-ids only "
                       "of DSOs where samples landed), so a copy will be matched by name")
        elif sym.debuginfod is not None and bid in sym.asked:
            reason += f"; the debuginfod servers ({' '.join(sym.debuginfod.urls)}) have none"
        entry["advice"] = _advice(mp, p)
    elif plan.status == "stripped":
        # what the file given lacks, never a request for that file again
        given = plan.symbols or plan.runtime or (plan.candidates or [None])[0]
        name = given.name if given is not None else "the file given"
        stripped = (f"{name} has no symbols at all (neither .symtab nor .dynsym)"
                    if plan.symbols is None else
                    f"{name} is stripped: only its exported functions (.dynsym) have "
                    f"names, its other functions stay unnamed")
        reason = stripped + ("; " + reason if reason else "")
        entry["advice"] = _debug_advice(mp)
    elif plan.status == "unreadable":
        entry["advice"] = f"upload an intact copy ({_advice(mp, p)})"
    elif fraction < 0.999 and plan.status == "resolved":
        entry["status"] = "partial"
        reason = (reason + "; " if reason else "") + "some addresses fall outside symbols"
    entry["reason"] = reason


def _explain_jit(m: int, entry: dict, sym: Symbolizer, fraction: float) -> None:
    """A JIT mapping, named by the files chosen for it (jit_sources.choose). It never
    asks for a file that was given: it says what that file lacks."""
    chosen = sym._jit_chosen.get(m) or []
    files = ", ".join(s.origin for s in chosen)
    if chosen and fraction > 0:
        entry.update(source=files, **{"from": chosen[0].kind})
    if fraction >= 0.999:
        entry["status"] = "resolved"
        return
    upload = (f"upload {entry['dso']} (or the jit-PID.dump) written by the JIT of this "
              f"process during the recording")
    if chosen and fraction > 0:
        entry.update(status="partial", reason=(
            f"{100 * (1 - fraction):.1f}% of its sampled frames are in code {files} does "
            f"not list: code the JIT freed, moved or made after the file was written"),
            advice="to name those too, write the map when the recording ends, while the "
                   "process still runs (`jcmd PID Compiler.perfmap` for the JVM), or "
                   "record a jit-PID.dump (`perf record -k 1` with the JIT's jitdump "
                   "agent, Node's --perf-prof)")
    elif chosen:
        entry.update(status="missing", advice=upload, reason=(
            f"{files} names none of its sampled addresses (written by another run of "
            f"the process?)"))
    elif sym.jit_sources:
        given = ", ".join(s.origin for s in sym.jit_sources)
        entry.update(status="missing", advice=upload, reason=(
            f"the JIT symbol files given ({given}) are of other processes or name none "
            f"of its sampled addresses"))
    else:
        entry.update(status="missing", advice=upload,
                     reason="no perf-PID.map or jit-PID.dump was given")


def _debug_advice(mp) -> str:
    """For a stripped file that was given: its debug file (perf archive would only copy
    the stripped file again)."""
    bid = mp.build_id
    debug = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" if bid else \
        "its .debug file"
    return (f"upload the debug file of {mp.path}: {debug} (the distribution's debug "
            f"symbols package: -dbgsym, -debuginfo, -dbg), or from a debuginfod server "
            f"(DEBUGINFOD_URLS on the workers, --debuginfod on the command line)")


def _advice(mp, p: Profile) -> str:
    if mp.kind == KERNEL:
        return ("upload a copy of /proc/kallsyms taken on the recording host during the "
                "same boot, or the `perf archive` of the capture")
    bid = mp.build_id
    if not bid and p.meta.format == "perf-data" and mp.kind == USER:
        # perf.data records every build-id: none means the file has none (many Python
        # wheels' libraries), and perf archive, which collects by build-id, leaves it out
        return (f"upload {mp.path} itself (it has no build-id, so `perf archive` cannot "
                f"collect it), from the host or the package it came from")
    debug = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" if bid else \
        "its .debug file"
    what = f"{mp.path}" + (f" (build-id {bid})" if bid else "")
    return f"upload {what} or {debug}, or run `perf archive` on the recording host"


# ---- entry point -------------------------------------------------------------------------
def symbolize(profile: Profile, inputs: list[str | os.PathLike],
              digests: Mapping[str, str] | None = None, inline: bool = True,
              debuginfod: "Client | None" = None) -> list[dict]:
    """Name the profile's frames from `inputs` (files, directories, archives) and store
    the coverage report on the profile. Returns the coverage list. `digests`: recorded
    SHA-256 of input files, see inputs.collect. `inline=False` is perf's --no-inline:
    no inline frames and no source lines from DWARF debug info. `debuginfod`: a client
    asked for the files of build-ids the inputs lack (debuginfod.Client.from_env)."""
    expand_locations(profile)  # (named in place, then columns again)
    try:
        with tempfile.TemporaryDirectory(prefix="perfweb-symbols-") as work:
            collected = collect(inputs, work, digests)
            sym = Symbolizer(collected.files, collected.notes, inline, debuginfod)
            sym.run(profile)
            profile.coverage = coverage(profile, sym)
    finally:
        compact_locations(profile)
    if debuginfod is not None:
        sym.notes.extend(n for n in debuginfod.notes if n not in sym.notes)
        debuginfod.notes.clear()
    profile.notes.extend(sym.notes)
    return profile.coverage

