"""About how many bytes a loaded profile holds, so a cache of profiles can be bounded by
memory: one capture's profile is a few hundred kilobytes, another's hundreds of
megabytes, and a cache counted in profiles holds either.

The estimate walks the tables once (no object graph traversal): per-sample columns are
raw arrays; stacks held as columns (every import's and every load's: analysis.stack_table)
cost 8 bytes a stack and 4 a frame, a list of them a tuple each and a pointer a frame; every
location and function costs its object and a tuple, and an entry in an interning dict (a
loaded profile builds no stack index until a transform needs one). The constants were measured with
tracemalloc on CPython 3.11 (tests/test_profile_size.py keeps them honest).
"""
from __future__ import annotations

from .location_table import LocationTable
from .profile import Profile
from .stack_table import StackTable
from .tree_index import held_bytes

_COLUMNS = ("s_stack", "s_count", "s_period", "s_pid", "s_tid", "s_cpu", "s_time",
            "s_event", "s_comm")
_SLOT = 8  # a stack entry: a tuple slot
_PER_TUPLE = 56  # a stack's tuple header (a list of them)
_PER_STACK_MEMO = 100  # memoised weights
_PER_LOCATION = 250 + 32  # Location object, its functions tuple, its id's int object
_PER_FUNCTION = 180  # Function object, its mapping id, a str header (the index is built lazily)
_PER_MAPPING = 600


def _held_columns(p: Profile) -> list:
    """The sample columns the profile holds (no count column while every row counts 1,
    no period column while every row has one period: asking for them would make them)."""
    return [getattr(p, c) for c in _COLUMNS
            if (c != "s_count" or p.has_count_column()) and
            (c != "s_period" or p.has_period_column())]


def approx_bytes(profile: Profile) -> int:
    columns = sum(len(col) * col.itemsize for col in _held_columns(profile))
    names = sum(len(f.name) + len(f.system_name) for f in profile.functions)
    return (columns + _stack_bytes(profile.stacks)
            + _location_bytes(profile.locations)
            + len(profile.functions) * _PER_FUNCTION + names
            + len(profile.mappings) * _PER_MAPPING
            + sum(len(s) + 60 for s in profile.strings)
            + held_bytes(profile))  # the flame graph's prepared trees


def _location_bytes(locations) -> int:
    """A list's objects, or a LocationTable's columns and the objects appended to it."""
    if type(locations) is LocationTable:
        return locations.nbytes() + locations.appended() * _PER_LOCATION
    return len(locations) * _PER_LOCATION


def _stack_bytes(stacks) -> int:
    """A list's tuples (56 bytes and a slot a frame), or a StackTable's columns and the
    tuples it holds beside them; and the weights memoised per stack."""
    if type(stacks) is StackTable:
        return (stacks.nbytes() + _tuples_bytes(stacks.changed_rows())
                + _PER_STACK_MEMO * len(stacks))
    return _tuples_bytes(stacks) + _PER_STACK_MEMO * len(stacks)


def _tuples_bytes(stacks) -> int:
    return sum(len(s) for s in stacks) * _SLOT + len(stacks) * _PER_TUPLE


_LIST_SLOT = 8  # a list's pointer to an object another list holds too


def derived_bytes(origin: Profile, derived: Profile) -> int:
    """About how many bytes `derived` (a profile analysis.transforms made from `origin`)
    holds that `origin` does not: its sample columns unless shared, its tables' lists
    (copies of pointers: the objects are shared), the stacks, locations and functions it
    made, and the weights its first view memoises. Its tree index comes later: count it
    with held_bytes."""
    held = {id(col) for col in _held_columns(origin)}
    columns = sum(len(col) * col.itemsize for col in _held_columns(derived)
                  if id(col) not in held)
    old = origin.stacks
    if type(derived.stacks) is StackTable:
        made = _tuples_bytes(derived.stacks.own_rows(old))
    else:
        made = sum(56 + _SLOT * len(s) for sid, s in enumerate(derived.stacks)
                   if sid >= len(old) or s is not old[sid])
    slots = _LIST_SLOT * (len(derived.stacks) + len(derived.locations)
                          + len(derived.functions) + len(derived.mappings)
                          + len(derived.events) + len(derived.strings))
    return (columns + made + slots + 100 * len(derived.stacks)
            + max(0, len(derived.locations) - len(origin.locations)) * _PER_LOCATION
            + max(0, len(derived.functions) - len(origin.functions)) * _PER_FUNCTION)
