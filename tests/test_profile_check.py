"""The model's invariants (analysis/profile_check.py), checked after every importer and
transform in the test suite: here, that the check is on and that it catches each kind
of broken id on real captures."""
import copy

import pytest

from analysis import profile_check, transforms
from analysis.importers import load
from analysis.location_table import expand_locations
from analysis.profile_check import InvalidProfile, check_valid
from conftest import FIXTURES, PUBLIC

CAPTURE = FIXTURES / "realworld-holdout15" / "c-glib-list-append-per-item" / \
    "bad.script.txt.gz"


def test_the_suite_checks_every_importer_and_transform():
    assert profile_check.ENABLED


@pytest.mark.parametrize("path", [
    CAPTURE,
    FIXTURES / "realworld-holdout15" / "c-glib-list-append-per-item" / "bad.perf.data",
    FIXTURES / "realworld-holdout15" / "postgres-offset-pagination" / "bad.truth-report.txt",
])
def test_real_captures_of_each_importer_are_valid(path):
    check_valid(load(path))


def _broken(edit):
    p = copy.deepcopy(load(CAPTURE))
    edit(p)
    return p


def _listed(p):
    """The locations as objects to break (a LocationTable's are copies)."""
    expand_locations(p)
    return p.locations


@pytest.mark.parametrize("edit,message", [
    (lambda p: p.stacks.append((len(p.locations),)), "a stack's location is"),
    (lambda p: setattr(p.functions[3], "mapping_id", len(p.mappings)),
     "a function's mapping is"),
    (lambda p: setattr(_listed(p)[2], "functions", (-1,)), "a location's function is -1"),
    (lambda p: p.s_stack.__setitem__(0, len(p.stacks)), "a sample's stack is"),
    (lambda p: p.s_pid.pop(), "s_pid has"),
    (lambda p: setattr(_listed(p)[5], "id", 6), "location 5 has id 6"),
    (lambda p: p.s_event.__setitem__(1, 7), "a sample's event is 7"),
])
def test_each_broken_invariant_is_named(edit, message):
    with pytest.raises(InvalidProfile, match=message.replace("(", r"\(")):
        check_valid(_broken(edit), "edited")


def test_a_transforms_result_is_checked():
    """Dropping g_list_last's samples (84%) leaves a valid profile of the other 172."""
    p = load(CAPTURE)
    fid = next(f.id for f in p.functions if f.name == "g_list_last")
    out = transforms.apply(p, (transforms.Transform(transforms.DROP, fid),))
    check_valid(out)

    def has(prof, sid):
        return any(fid in prof.locations[loc].functions for loc in prof.stacks[sid])
    assert (len(p), len(out)) == (1139, 172)
    assert len(out) == sum(1 for sid in p.s_stack if not has(p, sid))
    assert not any(has(out, sid) for sid in out.s_stack)
