"""What a profile keeps of the call-tree transforms asked of it (analysis.transforms):
the final profile of each of the last few stacks of transforms, not the profiles
between (a share link asking 12 drops of a 2M-sample capture pinned 12 copies of its
columns), within a byte cap, and a stack extending a kept one starts from it.

On with-callchain.perf.data (perf_data_converter's test data: 48,399 samples, one
cpu-clock event), six drops of kernel leaves (each function only ever the leaf of its
samples, so a drop removes its self count) between six merges.
"""
import gc
import tracemalloc
import types

import pytest

from analysis import explore, transforms
from analysis.aggregate.selection import stack_weights
from analysis.importers import load
from analysis.profile import Profile
from analysis.profile_size import approx_bytes, derived_bytes
from conftest import PUBLIC

CAPTURE = PUBLIC / "google__perf_data_converter/src/testdata/with-callchain.perf.data"
T = transforms.Transform
#: df of leaves with 6062, 3967, 2178, 1855, 1564 and 1268 samples; mf of callers
TWELVE = (T("df", 5), T("mf", 6), T("df", 27), T("mf", 4), T("df", 54), T("mf", 3),
          T("df", 66), T("mf", 2), T("df", 23), T("mf", 9), T("df", 55), T("mf", 34))
LEFT = 48399 - (6062 + 3967 + 2178 + 1855 + 1564 + 1268)  # 31,505


@pytest.fixture
def fresh():
    return load(CAPTURE)


def _profiles_kept(profile):
    """Profile objects reachable from the profile's kept transforms (types and modules
    not followed: every object reaches those)."""
    root = profile._cache[("transforms",)][1]
    seen, found, todo = {id(root)}, [], [root]
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if id(ref) in seen or isinstance(ref, (type, types.ModuleType)):
                continue
            seen.add(id(ref))
            if isinstance(ref, Profile):
                found.append(ref)
            todo.append(ref)
    return found


def _retained(make):
    """Bytes still allocated after `make()`, with what it returned held (the rest freed)."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        kept = make()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del kept  # (held while measured)
    return after - before


def test_twelve_transforms_keep_only_the_last_profile(fresh):
    assert explore.flame(fresh, explore.Query())["total"] == 48399
    # one drop's profile, kept: the sample columns it keeps (48 bytes a sample) and lists
    one = _retained(lambda: transforms._one(fresh, TWELVE[0]))
    held = _retained(lambda: transforms.chain(fresh, TWELVE))
    assert 0 < held < 2 * one, (held, one)  # 12 steps held 12 profiles: 7.2 x one
    assert len(_profiles_kept(fresh)) == 1
    applied = transforms.chain(fresh, TWELVE)
    assert _profiles_kept(fresh) == [applied.profile]
    assert explore.flame(fresh, explore.Query(transforms=TWELVE))["total"] == LEFT
    chips = explore.flame(fresh, explore.Query(transforms=TWELVE))["transforms"]
    assert [c["n"] for c in chips] == [fresh.functions[t.function].name for t in TWELVE]
    assert chips[1] == {"t": "mf-6", "kind": "mf", "verb": "merge",
                        "n": "libc-2.19.so+0xdbe50"}


def test_one_at_a_time_each_extends_the_last(fresh, monkeypatch):
    """As the page asks them: each stack one transform longer than the one before."""
    made = []
    one = transforms._one
    monkeypatch.setattr(transforms, "_one", lambda p, t: made.append(t) or one(p, t))
    for n in range(1, len(TWELVE) + 1):
        transforms.chain(fresh, TWELVE[:n])
        assert made == list(TWELVE[:n])  # one transform applied per request
    kept = fresh._cache[("transforms",)][1]
    assert list(kept) == [TWELVE[:n] for n in range(9, 13)]  # the last KEEP stacks
    assert len(_profiles_kept(fresh)) == transforms.KEEP
    assert transforms.kept_bytes(fresh) <= max(approx_bytes(fresh),
                                               transforms.KEEP_BYTES_MIN)
    # Back to 11 transforms: kept, nothing applied; a different 12th extends the 11
    back = transforms.chain(fresh, TWELVE[:11])
    assert back is kept[TWELVE[:11]] and len(made) == 12
    other = TWELVE[:11] + (T("df", 64),)
    assert explore.flame(fresh, explore.Query(transforms=other))["total"] == \
        LEFT - 1251
    assert made[12:] == [T("df", 64)]


def test_the_byte_cap_evicts_and_forget_frees(fresh, monkeypatch):
    """A cap of about two drops' profiles keeps two of them; forget lets go of all."""
    drops = [(T("df", f),) for f in (5, 27, 54, 66)]
    size = transforms.chain(fresh, drops[0]).size
    fresh._cache[("transforms",)][1].limit = int(2.5 * size)
    for d in drops[1:]:
        transforms.chain(fresh, d)
    assert list(fresh._cache[("transforms",)][1]) == drops[2:]
    assert 0 < transforms.kept_bytes(fresh) <= 2.5 * size
    assert transforms.forget(fresh) == pytest.approx(2 * size, rel=0.1)
    assert transforms.kept_bytes(fresh) == 0 and _profiles_kept(fresh) == []


@pytest.mark.parametrize("t", [T("df", 5), T("mf", 6), T("cr", 6), T("rec", 6)], ids=str)
def test_the_size_estimate_is_within_a_factor_of_two(fresh, t):
    """profile_size.derived_bytes, which the cap and the web cache's budget count,
    against tracemalloc: the profile one transform makes, with its first view's weights."""
    def make():
        derived = transforms._one(fresh, t)
        stack_weights(derived)
        return derived
    held = _retained(make)
    estimate = derived_bytes(fresh, make())
    assert 0.7 * held < estimate < 2 * held, (held, estimate)
