"""The locations as columns (analysis.location_table) through the pipeline: an import
ends with them, symbolization names the frames in place and ends with them again, a
saved profile loads them as they are, and every view and transform of a profile holding
them answers what the same profile holding Location objects answers."""
import io

import pytest

from analysis import explore, profile_io, transforms
from analysis.importers import load
from analysis.location_table import LocationTable, compact_locations, expand_locations
from analysis.symbols import symbolize
from conftest import SPINPOOL

SYMBOLS = [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "kernel-symbols.zip",
           SPINPOOL / "1.0.0-busy.perf.data.tar.bz2"]


@pytest.fixture(scope="module")
def busy():
    p = load(SPINPOOL / "1.0.0-busy.perf.data")
    assert type(p.locations) is LocationTable  # (the import ends with columns)
    symbolize(p, SYMBOLS)
    return p


def test_symbolization_names_the_frames_and_leaves_columns(busy):
    """The names symbolization gives are in the table it leaves (it took the locations
    as objects to name them): the spinning pool's mutex under its loop, inline frames
    with their source lines."""
    assert type(busy.locations) is LocationTable and busy.locations.is_plain()
    names = {busy.functions[f].name for loc in busy.locations for f in loc.functions}
    assert {"qualla::ThreadPool::loop", "pthread_mutex_lock@@GLIBC_2.2.5"} <= names
    inlined = [loc for loc in busy.locations if len(loc.functions) > 1]
    assert inlined and all(len(loc.lines) == len(loc.functions) for loc in inlined)


def test_a_saved_profile_loads_the_same_table(busy):
    out = io.BytesIO()
    profile_io.dump(busy, out)
    again = profile_io.load(io.BytesIO(out.getvalue()))
    assert type(again.locations) is LocationTable
    assert list(again.locations) == list(busy.locations)


def _listed(p):
    """The same profile with its locations as Location objects."""
    out = io.BytesIO()
    profile_io.dump(p, out)
    q = profile_io.load(io.BytesIO(out.getvalue()))
    expand_locations(q)
    assert type(q.locations) is list
    return q


@pytest.mark.parametrize("verb", ["mf", "df", "cr", "rec"])
def test_transforms_of_a_table_are_those_of_the_objects(busy, verb):
    """Each transform (which may append locations: a merged inline frame's remainder, a
    collapsed library's one frame) gives the same functions, tree and lines from a
    table as from the objects, and leaves the table it was given unchanged."""
    listed = _listed(busy)
    lock = next(f.id for f in busy.functions if f.name == "std::mutex::lock")
    loop = next(f.id for f in busy.functions if f.name == "qualla::ThreadPool::loop")
    before, appended = len(busy.locations), 0
    for fid in (lock, loop):
        tf = transforms.parse(f"{verb}-{fid}")
        a = transforms.apply(busy, tf)
        b = transforms.apply(listed, tf)
        q = explore.Query()
        assert explore.functions(a, q) == explore.functions(b, q)
        assert explore.flame(a, q) == explore.flame(b, q)
        assert list(a.locations) == list(b.locations)
        appended += len(a.locations) - before
    assert len(busy.locations) == before and busy.locations.is_plain()
    assert appended == {"mf": 9, "df": 0, "cr": 2, "rec": 0}[verb]


def test_hot_lines_and_sources_read_the_columns(busy):
    """The hot lines of an inlined function and each function's source file, from a
    table and from objects."""
    from analysis.aggregate import stack_weights
    from analysis.aggregate.lines import hot_lines, source_files
    listed = _listed(busy)
    inner = next(loc.functions[0] for loc in busy.locations if len(loc.functions) > 1)
    rows = hot_lines(busy, stack_weights(busy), inner)
    assert rows and rows == hot_lines(listed, stack_weights(listed), inner)
    assert source_files(busy) == source_files(listed) != {}


def test_locations_a_column_cannot_hold_stay_a_list():
    """A negative address (text can spell anything) keeps the list: nothing is lost."""
    from analysis.profile import Profile
    p = Profile()
    m = p.mapping("/usr/bin/a")
    p.add_location(m, -3, (p.function("f", m),))
    compact_locations(p)
    assert type(p.locations) is list and p.locations[0].address == -3


def _random_profile(rng):
    """Locations of 0-3 functions (none: a frame nothing names), some with lines."""
    from analysis.profile import Profile
    p = Profile()
    m = p.mapping("/a")
    fs = [p.function(f"f{i}", m) for i in range(5)]
    for j in range(rng.randint(0, 30)):
        k = rng.randint(0, 3)
        lid = p.add_location(m, j, tuple(rng.choice(fs) for _ in range(k)),
                             dso_offset=j * 3 if rng.random() < 0.5 else None)
        if k and rng.random() < 0.7:
            p.locations[lid].lines = tuple((rng.choice("xyz"), 1) for _ in range(k))
    return p


def test_the_array_passes_over_the_columns_answer_what_the_objects_do():
    """source_files (the most frequent file of each function, the first met on a tie,
    in the order first met), with_function and file_offsets on random tables, against
    their definitions over the objects."""
    import random
    from collections import Counter

    import numpy as np

    from analysis.aggregate.lines import source_files
    from analysis.location_table import file_offsets, with_function
    rng = random.Random(35)
    for _ in range(300):
        p = _random_profile(rng)
        objects = list(p.locations)
        counts = {}
        for loc in objects:
            for fid, (file, _) in zip(loc.functions, loc.lines):
                counts.setdefault(fid, Counter())[file] += 1
        want = {fid: c.most_common(1)[0][0] for fid, c in counts.items()}
        compact_locations(p)
        assert type(p.locations) is LocationTable
        got = source_files(p)
        assert got == want and list(got) == list(want)
        for fid in range(5):
            assert with_function(p.locations, fid) == \
                {loc.id for loc in objects if fid in loc.functions}
        lids = np.array([rng.randrange(len(objects)) for _ in range(9)] if objects else [],
                        dtype=np.int64)
        assert file_offsets(p.locations, lids).tolist() == \
            [objects[i].address if objects[i].dso_offset is None else
             objects[i].dso_offset for i in lids.tolist()]


def test_the_invariants_are_checked_on_the_columns_and_on_appended_locations():
    """check_valid reads a table's columns, and the objects appended after them: a
    location appended with a function or mapping no table holds is named."""
    from analysis.profile import Location
    from analysis.profile_check import InvalidProfile, check_valid
    p = load(SPINPOOL / "1.0.0-busy.perf.data")
    check_valid(p)
    for bad, message in ((Location(len(p.locations), 0, 1, (len(p.functions),)),
                          "a location's function is"),
                         (Location(len(p.locations), len(p.mappings), 1, (0,)),
                          "a location's mapping is"),
                         (Location(len(p.locations), 0, 1, (0,), lines=(("a", 1),) * 2),
                          "has 2 lines for 1 functions")):
        q = load(SPINPOOL / "1.0.0-busy.perf.data")
        q.locations.append(bad)
        with pytest.raises(InvalidProfile, match=message):
            check_valid(q)
