"""Folded stacks in and out."""
import io

from analysis.aggregate import stack_weights
from analysis.aggregate.functions import top_functions
from analysis.export.folded import FoldOptions, fold, write_folded
from analysis.importers import detect, load
from conftest import PUBLIC, SPINPOOL

RESULT = PUBLIC / "brendangregg__FlameGraph/test/results/perf-numa-stacks-01-collapsed-all.txt"


def test_published_folded_file_is_detected_and_read():
    assert detect(RESULT) == "folded"
    p = load(RESULT)
    lines = RESULT.read_text().splitlines()
    assert p.sample_count() == sum(int(l.rsplit(" ", 1)[1]) for l in lines)
    # _[k] annotations become kernel frames, the name without the suffix
    kernel = {m.path for m in p.mappings if m.kind == "kernel"}
    assert kernel == {"[kernel.kallsyms]"}
    names = {f.name for f in p.functions}
    assert "native_safe_halt" in names and "native_safe_halt_[k]" not in names


def test_write_then_read_keeps_every_stack(tmp_path):
    p = load(SPINPOOL / "1.0.0-busy.truth-script.txt")
    out = tmp_path / "busy.folded"
    with out.open("w") as f:
        write_folded(p, f, FoldOptions(weight="samples"))
    again = load(out)
    assert again.sample_count() == 973
    buf = io.StringIO()
    write_folded(again, buf, FoldOptions(weight="samples", include_comm=False))
    assert buf.getvalue() == out.read_text()
    a = {f.name: f.self for f in top_functions(p, stack_weights(p))}
    b = {f.name: f.self for f in top_functions(again, stack_weights(again))}
    assert b["qualla::ThreadPool::loop"] == a["qualla::ThreadPool::loop"] == 33


def test_folded_is_root_first_with_process_name():
    p = load(SPINPOOL / "1.0.0-idle.truth-script.txt")
    stacks = fold(p, FoldOptions(weight="samples"))
    key = "api;[libstdc++.so.6.0.30];pthread_mutex_lock@@GLIBC_2.2.5"
    assert stacks[key] == 179
    assert sum(stacks.values()) == 975
