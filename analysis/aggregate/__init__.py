"""Pure functions from a profile (and a selection of its samples) to views of it.

Every view starts from `stack_weights`: samples are summed per interned stack once, so
the work after that is proportional to distinct stacks, not to samples.
"""
from .selection import Selection, stack_weights  # noqa: F401
