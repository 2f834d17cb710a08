"""Stacks deeper than perf can record, in the text importers, the views and a comparison.

perf copies at most kernel.perf_event_max_stack frames per sample, and that sysctl stops
at 655,360; text can claim any depth. A 5,000-frame stack broke every tree view
(RecursionError), a 5.2-million-frame one took gigabytes.
"""
import gzip
import io
import json
import subprocess
import sys

import pytest

from analysis import compare, explore
from analysis.aggregate.tree import MAX_DEPTH
from analysis.importers import load, perf_script
from analysis.importers.deep_stacks import MAX_FRAMES
from conftest import ROOT


def _folded(path, frames, deep_first=False):
    deep = "main;" + "recurse;" * frames + "leaf 1\n"
    path.write_text(deep + "main;work 2\n" if deep_first else "main;work 2\n" + deep)
    return path


def _script_text(frames, blank_at_end=True):
    """2 samples through main;work, then 1 through leaf, `frames` x recurse, main."""
    shallow = "\t401600 work+0x10 (/usr/bin/deep)\n\t401500 main+0x5 (/usr/bin/deep)\n\n"
    head = "deep 100/100 [000] 1.{:06d}: 1 cycles:\n"
    deep = ("\t401000 leaf+0x10 (/usr/bin/deep)\n"
            + "\t401136 recurse+0x16 (/usr/bin/deep)\n" * frames
            + "\t401500 main+0x5 (/usr/bin/deep)\n" + ("\n" if blank_at_end else ""))
    return head.format(0) + shallow + head.format(1) + shallow + head.format(2) + deep


def _names(p, stack):
    return [p.functions[p.locations[loc].functions[0]].name for loc in stack]


def _deep_stack(p):
    (deep,) = [s for s in p.stacks if len(s) > 2]
    return deep


@pytest.mark.parametrize("fmt", ["folded", "perf-script"])
@pytest.mark.parametrize("frames", [5000, 2_000_000])
def test_the_leaf_side_is_kept_and_the_cut_named(tmp_path, fmt, frames):
    if fmt == "folded":
        p = load(_folded(tmp_path / "deep.folded", frames))
    else:
        path = tmp_path / "deep.txt.gz"
        path.write_bytes(gzip.compress(_script_text(frames).encode(), 1))
        p = load(path)
    assert p.sample_count() == 3
    names = _names(p, _deep_stack(p))  # leaf first
    depth = frames + 2  # leaf, recursion, main
    if depth <= MAX_FRAMES:
        assert names == ["leaf"] + ["recurse"] * frames + ["main"]
        assert not any("deeper than perf can record" in n for n in p.notes)
    else:
        assert len(names) == MAX_FRAMES + 1
        assert names[:2] == ["leaf", "recurse"] and set(names[1:-1]) == {"recurse"}
        assert names[-1] == f"[truncated: {depth - MAX_FRAMES} frames]"
        (note,) = [n for n in p.notes if "deeper than perf can record" in n]
        assert "655,360" in note and f"{depth - MAX_FRAMES:,}" in note
    # every view answers, with the samples where they belong
    flame = explore.flame(p, explore.Query())
    assert flame["total"] == flame["tree"]["nodes"][0]["t"] == 3
    assert json.loads(json.dumps(flame)) == flame  # the JSON encoder meets no nesting limit
    inverted = explore.flame(p, explore.Query(invert=True))["tree"]["nodes"]
    assert {n["n"]: n["t"] for n in inverted if n["p"] == 0} == {"leaf": 1, "work": 2}
    diff = compare.diff_tree(p, p)
    assert (diff["a"], diff["b"]) == (3, 3) and len(diff["nodes"]) <= MAX_DEPTH + 5
    json.dumps(diff)


def test_a_folded_file_may_start_with_a_line_longer_than_the_head(tmp_path):
    """Format detection reads the first 64 KiB: a deep first line was 'not a profile'."""
    p = load(_folded(tmp_path / "deep.folded", 100_000, deep_first=True))
    assert p.meta.format == "folded" and p.sample_count() == 3
    assert len(_deep_stack(p)) == 100_002


@pytest.mark.parametrize("blank_at_end", [True, False])
def test_a_long_perf_script_block_streams_to_the_same_samples(blank_at_end):
    """A block past 4 MiB is fed to the line parser in pieces as it streams; the result
    is what the line parser makes of the whole text at once."""
    text = _script_text(150_000, blank_at_end)  # 5.4 MB in one block
    assert len(text) > perf_script._LONG_BLOCK
    streamed = perf_script.parse(io.BytesIO(text.encode()))
    whole = perf_script.parse_lines(text.splitlines())
    assert streamed.stacks == whole.stacks and len(streamed.locations) == \
        len(whole.locations)
    assert list(streamed.s_stack) == list(whole.s_stack) and list(streamed.s_time) == \
        list(whole.s_time)
    assert streamed.truncated_tail == whole.truncated_tail == (not blank_at_end)


#: VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking process
_MEASURE = """
import sys
sys.path.insert(0, sys.argv[1])
from analysis import compare, explore
from analysis.importers import load
p = load(sys.argv[2])
for q in (explore.Query(), explore.Query(invert=True)):
    explore.flame(p, q)
compare.diff_tree(p, p)
hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(int(hwm.split()[1]) // 1024)
"""


@pytest.mark.parametrize("fmt", ["folded", "perf-script"])
def test_two_million_frames_cost_tens_of_megabytes(tmp_path, fmt):
    """Peak resident memory of a process importing a 2,000,000-frame stack and drawing
    every view of it (it was 844 MiB for the folded file before the cut)."""
    if fmt == "folded":
        path = _folded(tmp_path / "deep.folded", 2_000_000)
    else:
        path = tmp_path / "deep.txt"
        path.write_text(_script_text(2_000_000))  # 72 MB of text
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(ROOT), str(path)],
                         capture_output=True, text=True, check=True)
    assert int(out.stdout) < 150, out.stdout
