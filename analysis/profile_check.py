"""The profile model's invariants, checked at once (pprof's Profile.CheckValid): every id
a table or a sample column holds points into its table, every sample column has a row
per sample. An importer or a transform that breaks one would make every pass after it
read the wrong frame or fail far from the cause; the test suite runs this after each of
them (PERFWEB_CHECK_PROFILES=1, set by tests/conftest.py), production does not pay it.

The tables are lists of objects today (issue 35 moves them to columns); the checks read
them once into arrays and compare ranges there, so a 100,000-location capture costs one
pass per table, not a check per frame."""
from __future__ import annotations

import os
from array import array
from itertools import chain

import numpy as np

from .location_table import LocationTable
from .profile import NO_ID, Profile
from .stack_table import StackTable

#: whether importers and transforms check what they return (the test suite's setting)
ENABLED = os.environ.get("PERFWEB_CHECK_PROFILES") == "1"


class InvalidProfile(Exception):
    """A profile that breaks the model's invariants: a bug in the code that built it
    (not an AnalysisError: no upload may cause it, so it is never said as the user's)."""


def checked(profile: Profile, where: str) -> Profile:
    """`profile`, after checking it when the test suite asks (ENABLED)."""
    if ENABLED:
        check_valid(profile, where)
    return profile


def check_valid(p: Profile, where: str = "profile") -> None:
    """Raise InvalidProfile naming the first broken invariant."""
    def fail(what: str) -> None:
        raise InvalidProfile(f"{where}: {what}")

    nm, nf, nl, ns = len(p.mappings), len(p.functions), len(p.locations), len(p.stacks)
    # (a LocationTable's ids are its rows: nothing to check)
    tables = (("mapping", p.mappings), ("function", p.functions)) + \
        ((("location", p.locations),) if type(p.locations) is not LocationTable else ())
    for name, table in tables:
        ids = np.fromiter((x.id for x in table), dtype=np.int64, count=len(table))
        bad = np.flatnonzero(ids != np.arange(len(table)))
        if len(bad):
            fail(f"{name} {bad[0]} has id {ids[bad[0]]}")
    f_map = np.fromiter((f.mapping_id for f in p.functions), dtype=np.int64, count=nf)
    _in_range(f_map, nm, "a function's mapping", fail)
    if type(p.locations) is LocationTable:  # (its columns)
        l_map, l_funcs, n_funcs, n_lines = p.locations.shape()
    else:
        l_map = np.fromiter((loc.mapping_id for loc in p.locations), dtype=np.int64,
                            count=nl)
        n_funcs = np.fromiter((len(loc.functions) for loc in p.locations),
                              dtype=np.int64, count=nl)
        l_funcs = np.fromiter(chain.from_iterable(loc.functions for loc in p.locations),
                              dtype=np.int64, count=int(n_funcs.sum()))
        n_lines = np.fromiter((len(loc.lines) for loc in p.locations), dtype=np.int64,
                              count=nl)
    _in_range(l_map, nm, "a location's mapping", fail)
    _in_range(l_funcs, nf, "a location's function", fail)
    bad = np.flatnonzero((n_lines != 0) & (n_lines != n_funcs))
    if len(bad):
        fail(f"location {bad[0]} has {n_lines[bad[0]]} lines for "
             f"{n_funcs[bad[0]]} functions")
    if type(p.stacks) is StackTable:  # (its columns, with what a transform changed)
        frames = np.frombuffer(p.stacks.columns()[1], dtype=np.int32)
    else:
        n_frames = sum(map(len, p.stacks))
        frames = np.fromiter(chain.from_iterable(p.stacks), dtype=np.int64,
                             count=n_frames)
    _in_range(frames, nl, "a stack's location", fail)

    rows = len(p.s_stack)
    columns = {"s_pid": p.s_pid, "s_tid": p.s_tid, "s_cpu": p.s_cpu, "s_time": p.s_time,
               "s_event": p.s_event, "s_comm": p.s_comm}
    if p.has_count_column():
        columns["s_count"] = p.s_count
    if p.has_period_column():
        columns["s_period"] = p.s_period
    for name, column in columns.items():
        if len(column) != rows:
            fail(f"{name} has {len(column)} rows for {rows} samples")
    _in_range(_column(p.s_stack), ns, "a sample's stack", fail)
    _in_range(_column(p.s_event), len(p.events), "a sample's event", fail)
    comm = _column(p.s_comm)
    _in_range(comm[comm != NO_ID], len(p.strings), "a sample's command name", fail)
    if p.has_count_column():
        counts = _column(p.s_count)
        if len(counts) and counts.min() < 0:
            fail(f"a sample counts {counts.min()}")


def _column(column) -> np.ndarray:
    """A sample column as an array: its buffer when it is an array.array (no copy)."""
    if isinstance(column, array):
        return np.frombuffer(column, dtype=column.typecode) if len(column) else \
            np.zeros(0, dtype=np.int64)
    return np.fromiter(column, dtype=np.int64, count=len(column))


def _in_range(ids: np.ndarray, n: int, what: str, fail) -> None:
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        i = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
        fail(f"{what} is {ids[i]}, outside 0..{n - 1}")
