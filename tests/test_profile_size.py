"""The size estimate that bounds the web process's cache of profiles, against the bytes
tracemalloc counts for the same profiles loaded from their saved form."""
import gc
import io
import tracemalloc

import pytest

from analysis import profile_io
from analysis.aggregate.selection import stack_weights
from analysis.importers import load
from analysis.profile_size import approx_bytes
from conftest import PUBLIC, SPINPOOL

CAPTURES = [
    SPINPOOL / "1.0.0-idle.perf.data",
    SPINPOOL / "1.0.0-busy.truth-script.txt",
    PUBLIC / "jrfonseca__gprof2dot/tests/perf/xwax.perf",
    PUBLIC / "google__perf_data_converter/src/testdata/with-callchain.perf.data",
    PUBLIC / "google__perf_data_converter/src/testdata/multi-event-single-process.perf.data",
]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_the_estimate_is_within_a_factor_of_two(path):
    buf = io.BytesIO()
    profile_io.dump(load(path), buf)
    buf.seek(0)
    gc.collect()
    tracemalloc.start()
    try:
        p = profile_io.load(buf)
        stack_weights(p)  # what the first view adds to a cached profile
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert 0.7 * held < approx_bytes(p) < 2 * held, (held, approx_bytes(p))


def test_a_deep_stack_costs_four_bytes_a_frame(tmp_path):
    """655,361 entries of 4 location ids, in the stack columns the import leaves
    (analysis.stack_table): 4 bytes each (a tuple held them at 8, the CPython slot)."""
    f = tmp_path / "deep.folded"
    f.write_text("main;" + "recurse;" * 2_000_000 + "leaf 1\n")
    p = load(f)
    assert sum(map(len, p.stacks)) == 655_361
    assert 2.6e6 < approx_bytes(p) < 2.7e6
