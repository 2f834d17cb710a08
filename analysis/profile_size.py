"""About how many bytes a loaded profile holds, so a cache of profiles can be bounded by
memory: one capture's profile is a few hundred kilobytes, another's hundreds of
megabytes, and a cache counted in profiles holds either.

The estimate walks the tables once (no object graph traversal): per-sample columns are
raw arrays; every stack entry costs a pointer plus, for ids above 256, an int object of
its own (a loaded profile does not share them); every location, function and stack costs
its object, its entry in an interning dict and a tuple. The constants were measured with
tracemalloc on CPython 3.11 (tests/test_profile_size.py keeps them honest).
"""
from __future__ import annotations

from .profile import Profile
from .tree_index import held_bytes

_COLUMNS = ("s_stack", "s_count", "s_period", "s_pid", "s_tid", "s_cpu", "s_time",
            "s_event", "s_comm")
_SLOT, _INT = 8, 32  # a stack entry: a tuple slot, and an int object above 256
_PER_STACK = 56 + 100 + 100  # tuple header, interning dict entry, memoised weights
_PER_LOCATION = 250  # Location object, its functions tuple
_PER_FUNCTION = 350  # Function object, two str headers, interning key and entry
_PER_MAPPING = 600


def approx_bytes(profile: Profile) -> int:
    columns = sum(len(getattr(profile, c)) * getattr(profile, c).itemsize for c in _COLUMNS)
    frames = sum(len(s) for s in profile.stacks)
    # ids up to 256 are CPython's shared small ints; with more locations, most are not
    per_frame = _SLOT + (_INT if len(profile.locations) > 257 else 0)
    names = sum(len(f.name) + len(f.system_name) for f in profile.functions)
    return (columns + frames * per_frame + len(profile.stacks) * _PER_STACK
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
    columns = sum(len(col) * col.itemsize for c in _COLUMNS
                  if (col := getattr(derived, c)) is not getattr(origin, c))
    old = origin.stacks
    made = sum(56 + _SLOT * len(s) for sid, s in enumerate(derived.stacks)
               if sid >= len(old) or s is not old[sid])
    slots = _LIST_SLOT * (len(derived.stacks) + len(derived.locations)
                          + len(derived.functions) + len(derived.mappings)
                          + len(derived.events) + len(derived.strings))
    return (columns + made + slots + 100 * len(derived.stacks)
            + max(0, len(derived.locations) - len(origin.locations)) * _PER_LOCATION
            + max(0, len(derived.functions) - len(origin.functions)) * _PER_FUNCTION)
