"""Keep large freed blocks from staying resident in the analysing process.

glibc serves a request above its mmap threshold with its own mapping, returned to the
system when freed, and one below it from the heap. The threshold starts at 128 KiB but
rises, up to 32 MiB, each time a mapped block is freed (mallopt(3), M_MMAP_THRESHOLD:
"dynamic mmap threshold"). An import grows its sample columns and tables by reallocation,
so after the first large free the copies it outgrows are carved from the heap, and the
holes they leave below live objects are never given back: on the 2M-sample perf script
text of bench-size the process held ~100 MiB more than its live data (RSS 275 vs 171 MiB
traced after the import). Setting the threshold fixes it (glibc then stops adjusting it):
at 1 MiB the half text's peak fell 327 -> 286 MiB and the half perf.data's 209 -> 178 MiB,
in the same time (at 128 KiB the text import was slower; at 16 MiB the peak was higher).

Process-wide, so the entry points call it (the CLI, the worker's analysis run), not the
engine's functions.
"""
from __future__ import annotations

import ctypes

#: mallopt's parameter number (malloc.h) and the threshold chosen (see above)
M_MMAP_THRESHOLD = -3
THRESHOLD = 1 << 20

_done: bool | None = None


def bound_heap() -> bool:
    """Fix glibc's mmap threshold at THRESHOLD (once per process); False where the C
    library is not glibc or refuses, which changes nothing but memory."""
    global _done
    if _done is None:
        _done = False
        try:  # the process's own symbols: its C library's among them (no ldconfig run,
            # as ctypes.util.find_library does: 15 ms of a report's start)
            mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
        except OSError:
            mallopt = None
        if mallopt is not None:
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            _done = mallopt(M_MMAP_THRESHOLD, THRESHOLD) == 1
    return _done
