"""About how many bytes a loaded profile holds, so a cache of profiles can be bounded by
memory: one capture's profile is a few hundred kilobytes, another's hundreds of
megabytes, and a cache counted in profiles holds either.

The estimate walks the tables once (no object graph traversal): per-sample columns are
raw arrays; every stack entry costs a pointer (a loaded profile's stacks share one int
object per location id: analysis.profile_io); every location, function and stack costs
its object and a tuple, and locations and functions an entry in an interning dict (a
loaded profile builds no stack index until a transform needs one). The constants were measured with
tracemalloc on CPython 3.11 (tests/test_profile_size.py keeps them honest).
"""
from __future__ import annotations

from .profile import Profile
from .tree_index import held_bytes

_COLUMNS = ("s_stack", "s_count", "s_period", "s_pid", "s_tid", "s_cpu", "s_time",
            "s_event", "s_comm")
_SLOT = 8  # a stack entry: a tuple slot
_PER_STACK = 56 + 100  # tuple header, memoised weights
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
    frames = sum(len(s) for s in profile.stacks)
    names = sum(len(f.name) + len(f.system_name) for f in profile.functions)
    return (columns + frames * _SLOT + len(profile.stacks) * _PER_STACK
            + len(profile.locations) * _PER_LOCATION
            + len(profile.functions) * _PER_FUNCTION + names
            + len(profile.mappings) * _PER_MAPPING
            + sum(len(s) + 60 for s in profile.strings)
            + held_bytes(profile))  # the flame graph's prepared trees


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
    made = sum(56 + _SLOT * len(s) for sid, s in enumerate(derived.stacks)
               if sid >= len(old) or s is not old[sid])
    slots = _LIST_SLOT * (len(derived.stacks) + len(derived.locations)
                          + len(derived.functions) + len(derived.mappings)
                          + len(derived.events) + len(derived.strings))
    return (columns + made + slots + 100 * len(derived.stacks)
            + max(0, len(derived.locations) - len(origin.locations)) * _PER_LOCATION
            + max(0, len(derived.functions) - len(origin.functions)) * _PER_FUNCTION)
