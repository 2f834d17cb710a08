"""Stacks deeper than perf can record are cut at import, on the root side.

The kernel copies at most `kernel.perf_event_max_stack` frames per sample (127 by
default), and the sysctl refuses values above 640 * 1024 (kernel/sysctl.c,
`six_hundred_forty_kb`), so no recorded call chain is deeper than 655,360 frames. Text
inputs can claim anything: a folded line of 5 million frames is 40 MB of text and would
cost gigabytes as a tree. Like perf, which drops the outermost frames past its limit, we
keep the leaf side, where the samples' own time is, and put one frame in place of the
rest that says how many were cut; a note on the profile says it too.
"""
from __future__ import annotations

from ..profile import Profile

#: the deepest call chain perf can record (kernel.perf_event_max_stack at its maximum)
MAX_FRAMES = 640 * 1024


class Cuts:
    """The frames that stand for cut stacks' outermost frames, one per count, and the
    note that says so."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._frames: dict[int, int] = {}

    def frame(self, dropped: int) -> int:
        """The location of a `[truncated: N frames]` frame for `dropped` frames."""
        loc = self._frames.get(dropped)
        if loc is None:
            p = self.profile
            mapping = p.mapping("[unknown]")
            loc = self._frames[dropped] = p.add_location(
                mapping, 0, (p.function(f"[truncated: {dropped} frames]", mapping),))
        return loc

    def note(self) -> None:
        if self._frames:
            self.profile.notes.append(
                f"stacks deeper than perf can record ({MAX_FRAMES:,} frames, the maximum "
                f"of kernel.perf_event_max_stack) were cut on the root side: their "
                f"outermost frames are one \"[truncated: N frames]\" frame (at most "
                f"{max(self._frames):,} frames cut from one stack); the frames nearest "
                f"the leaf are kept")
