"""The fuzz targets of the compiled code (analysis/**/*.c): each runs a compiled loop and
its Python twin on the same input and requires the same result or the same error, then
takes the profile through what the worker and the capture page compute from it, where
the other compiled kernels run. tests/fuzz/native runs them with the C built under
AddressSanitizer and UndefinedBehaviorSanitizer; test_fuzz.py under hypothesis."""
from __future__ import annotations

import io
from array import array

from analysis import profile_io
from analysis.errors import AnalysisError
from analysis.export.folded import FoldOptions, fold
from analysis.importers import perf_data, perf_script
from analysis.report import build_report


def _compiled_alike(data: bytes) -> None:
    """The compiled perf script loop and fold against the Python ones: the same profile
    (or the same error) and the same folded lines; a difference fails as an assertion.
    Then the profile through the worker's and the pages' kernels (_after_import)."""
    from profile_snapshot import snapshot  # tests/, on the path under pytest
    outcomes, profile = [], None
    for compiled in (True, False):
        try:
            p = perf_script.parse(io.BytesIO(data), compiled=compiled)
        except AnalysisError as e:
            outcomes.append(repr(e))
            continue
        outcomes.append((snapshot(p), [list(fold(p, FoldOptions.from_flag(flag, weight=w),
                                                 compiled=compiled).items())
                                       for flag, w in ((None, "period"), ("all", "samples"))]))
        profile = profile or p
    assert outcomes[0] == outcomes[1]
    if profile is not None:
        profile.drop_indexes()  # (as load leaves it)
        _after_import(profile)


def _perf_data(data: bytes, compiled: bool):
    """perf_data's reader on the bytes in a buffer of exactly their size (a read past
    the end meets ASan's red zone, where a bytes object's NUL or an mmap's page would
    hide it): with the compiled record loop and the replay on columns, or with neither
    (the Python record walk, the replay sample by sample)."""
    buf = memoryview(array("B", data))
    reader = perf_data._Reader(buf, len(buf))
    if not compiled:
        reader._scan = lambda b, pos, end: pos
    packed = []  # the replay's packed chains, which it lets go of at its end
    pack = reader._pack_chains

    def keep_packed():
        pack()
        packed.append((reader.chain_blob, reader.chain_ends, reader.chain_rest,
                       reader.chain_ips, reader.chain_modes))
    reader._pack_chains = keep_packed
    saved, perf_data.REPLAY_ON_COLUMNS = perf_data.REPLAY_ON_COLUMNS, compiled
    try:
        profile = reader.read()
    finally:
        perf_data.REPLAY_ON_COLUMNS = saved
    profile.drop_indexes()
    if compiled and packed:
        (reader.chain_blob, reader.chain_ends, reader.chain_rest, reader.chain_ips,
         reader.chain_modes) = packed[0]
        reader.chains = None  # (packed, as during the replay)
        _same_chain_frames(reader)
    return profile


def _same_chain_frames(reader) -> None:
    """Every call chain's frames decoded on columns (replay.chain_frames: the markers'
    modes carried forward, a deferred user stack's cookie, an empty chain's ip) and one
    by one (_Reader.chain_frames): the same (mode, address) pairs."""
    import numpy as np
    from analysis.perfdata.replay import chain_frames
    n = len(reader.chain_ends) - 1
    first, mode, addr = chain_frames(reader, np.arange(n, dtype=np.int64))
    got = [tuple(zip(mode[a:b].tolist(), addr[a:b].tolist()))
           for a, b in zip(first[:-1].tolist(), first[1:].tolist())]
    assert got == [reader.chain_frames(cid) for cid in range(n)]


def _tracepoint_rows(snap: dict) -> dict:
    """A snapshot with only the switch rows the Python reader also makes: it decodes the
    sched_switch tracepoint, and leaves PERF_RECORD_SWITCH records to the compiled loop."""
    from analysis.offcpu.switches import RECORD, SwitchLog
    source = array("b", snap["switches"]["source"])
    keep = [i for i, s in enumerate(source) if s != RECORD]
    out = dict(snap)
    out["switches"] = {}
    for name in SwitchLog.COLUMNS:
        col = array(getattr(SwitchLog(), name).typecode, snap["switches"][name])
        out["switches"][name] = bytes(array(col.typecode, (col[i] for i in keep)))
    return out


def _perf_data_alike(data: bytes) -> None:
    """perf.data through the compiled record loop (_scan.c) and through the Python
    reader: the same profile, switch records aside (only the loop reads them), or the
    same error; then the profile through the kernels (_after_import)."""
    from profile_snapshot import snapshot
    outcomes, profile = [], None
    for compiled in (True, False):
        try:
            p = _perf_data(data, compiled)
        except AnalysisError as e:
            outcomes.append(repr(e))
            continue
        outcomes.append(_tracepoint_rows(snapshot(p)))
        profile = profile or p
    assert outcomes[0] == outcomes[1]
    if profile is not None:
        profile.drop_indexes()
        _after_import(profile)


#: _after_import runs on every n-th profile the targets import (the native run's driver
#: sets 4: it is most of an input's time, and the importers' compiled loops are what
#: most inputs are for); every one under pytest and when crashes are replayed
AFTER_IMPORT_EVERY = 1
_imported = [0]


def _this_one() -> bool:
    """Whether this imported profile is one of the AFTER_IMPORT_EVERY-th."""
    _imported[0] += 1
    return _imported[0] % AFTER_IMPORT_EVERY == 0


def _after_import(profile) -> None:
    """What the worker and the capture page compute from an imported profile, the
    compiled kernels against their Python twins where they have one: the off-CPU
    intervals (_intervals.c; its twin analysis/offcpu/intervals_python.py), the per-function and per-DSO
    sums (numpy; tests/test_stack_columns.py's loops), the report and the diagnosis,
    the folded export, and the pages of the profile saved and read back."""
    if not _this_one():
        return
    from test_offcpu_compiled import _same as same_off_cpu
    from test_stack_columns import _check as same_sums
    from analysis.aggregate.selection import stack_weights
    from analysis.offcpu.threads import off_cpu
    if off_cpu(profile) is not None:
        same_off_cpu(profile)
    same_sums(profile, stack_weights(profile))
    _worker(profile)  # then the saved profile's pages
    saved = io.BytesIO()
    profile_io.dump(profile, saved)
    _pages(profile_io.load(io.BytesIO(saved.getvalue())))


def _worker(profile) -> None:
    """The worker's steps after the import: the symbols' coverage (what symbolization
    reports when symbol files came with the capture), the report (and its diagnosis)
    and the folded export."""
    from analysis.symbols.symbolize import coverage
    coverage(profile, None)
    build_report(profile)
    fold(profile, FoldOptions(weight="samples"))


def _pages(profile) -> None:
    """What the capture page computes from a saved profile: the flame graphs (on-CPU,
    inverted, off-CPU), the functions table, the stack chart, the threads, the timeline
    and the thread states."""
    from analysis import explore
    from analysis.offcpu.views import OFF_CPU
    queries = [explore.Query(), explore.Query(invert=True)]
    if profile.switches.recorded:
        queries.append(explore.Query(view=OFF_CPU))
    for q in queries:
        explore.flame(profile, q)
        explore.functions(profile, q)
    explore.stacks(profile, explore.Query())
    explore.threads(profile, explore.Query())
    explore.timeline(profile)
    explore.thread_states(profile)


def _saved_profile_alike(data: bytes) -> None:
    """A saved profile (analysis/profile_io.py) read, then the report, the fold and the
    pages run for what the compiled kernels left (the off-CPU intervals) do with it: the
    file is our own, written by the worker, but kept in storage others may reach, so its
    bytes are untrusted as an upload's. profile_io checks its magic and the stack
    columns' bounds, nothing more (a damaged file raises whatever Python raises), so any error counts as an outcome; a
    sanitizer sees what the compiled code reads."""
    try:
        profile = profile_io.load(io.BytesIO(data))
    except Exception:  # noqa: BLE001 - see the docstring
        return
    if _this_one():
        try:
            _worker(profile)
            _pages(profile)
        except Exception:  # noqa: BLE001,S110 - see the docstring
            pass


#: target name (as in targets.TARGETS) -> function of the input's bytes
TWINS = {
    "perf-script-compiled": _compiled_alike,
    "perf-data-alike": _perf_data_alike,
    "saved-profile": _saved_profile_alike,
}
