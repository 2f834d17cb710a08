"""The transformed profiles the explorer keeps with a cached profile (analysis.transforms)
count against the web process's byte budget for profiles (services/profiles.py), and go
before any profile does, least recently used first. No database: the results are
stand-ins offering what result_profile reads (a primary key and a stored file)."""
import io
from collections import OrderedDict
from pathlib import Path

import pytest

from analysis import explore, profile_io, transforms
from analysis.importers import load
from analysis.profile_size import approx_bytes
from perfweb.captures.services import profiles

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PUBLIC = ROOT.parent / "shared" / "corpus" / "public"
SPINPOOL = ROOT.parent / "shared" / "corpus" / "cases" / "spinpool"

T = transforms.Transform


class _Stored:
    def __init__(self, path, name):
        buf = io.BytesIO()
        profile_io.dump(load(path), buf)
        self.data, self.name = buf.getvalue(), name

    def open(self, mode):
        return io.BytesIO(self.data)


class _Result:
    def __init__(self, pk, path):
        self.pk, self.profile = pk, _Stored(path, f"p{pk}")


@pytest.fixture
def cache(monkeypatch, settings):
    monkeypatch.setattr(profiles, "_CACHE", OrderedDict())
    monkeypatch.setattr(profiles, "_held", 0)
    settings.PERFWEB_PROFILE_CACHE_BYTES = 1 << 30
    return settings


def test_kept_transforms_count_and_go_first(cache):
    conv = _Result(1, PUBLIC / "google__perf_data_converter/src/testdata/"
                          "with-callchain.perf.data")
    busy = _Result(2, SPINPOOL / "1.0.0-busy.perf.data")
    a, b = profiles.result_profile(conv), profiles.result_profile(busy)
    bases = approx_bytes(a) + approx_bytes(b)
    assert profiles.cached_bytes() == bases
    # drops of 6,062 and 3,967 of its 48,399 samples: the columns of the rest copied
    drop = (T("df", 5), T("df", 27))
    assert explore.flame(a, explore.Query(transforms=drop))["total"] == 48399 - 6062 - 3967
    made = transforms.chain(a, drop)
    assert made.size > 38370 * 32  # the sample columns kept (none of counts or one period)
    assert profiles.result_profile(conv) is a  # counted on the next request
    assert profiles.cached_bytes() == bases + explore.derived_bytes(a)
    assert explore.derived_bytes(a) > made.size  # and the flame graph's tree index
    explore.flame(b, explore.Query(transforms=(T("mf", 0),)))
    assert profiles.result_profile(busy) is b
    assert profiles.cached_bytes() == bases + explore.derived_bytes(a) + \
        explore.derived_bytes(b)
    # a budget with room for the profiles and b's transforms: a's go (used least lately)
    cache.PERFWEB_PROFILE_CACHE_BYTES = bases + explore.derived_bytes(b) + 1000
    assert profiles.result_profile(busy) is b
    assert transforms.kept_bytes(a) == 0 and explore.derived_bytes(b) > 0
    assert profiles.cached_bytes() == bases + explore.derived_bytes(b)
    # with room for the profiles only, b's go too; both profiles stay
    cache.PERFWEB_PROFILE_CACHE_BYTES = bases
    assert profiles.result_profile(conv) is a and profiles.result_profile(busy) is b
    assert explore.derived_bytes(b) == 0 and profiles.cached_bytes() == bases


def test_a_views_transforms_count(cache):
    """The wall-clock view is a profile of its own, which keeps its transforms."""
    idle = _Result(3, FIXTURES / "offcpu" / "idle-pool" / "memcached-idle.perf.data")
    p = profiles.result_profile(idle)
    size = approx_bytes(p)
    q = explore.Query(view="wall", transforms=(T("mf", 0),))
    assert explore.flame(p, q)["unit"] == "µs"
    assert explore.derived_bytes(p) > 0 and transforms.kept_bytes(p) == 0
    assert profiles.result_profile(idle) is p
    assert profiles.cached_bytes() == size + explore.derived_bytes(p)
    cache.PERFWEB_PROFILE_CACHE_BYTES = size
    assert profiles.result_profile(idle) is p and explore.derived_bytes(p) == 0
