"""`python -m analysis report` as a user runs it."""
import json
import subprocess
import sys

from conftest import PUBLIC, ROOT, SPINPOOL


def run(*args):
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_json_contract_on_the_idle_capture():
    r = run("report", SPINPOOL / "1.0.0-idle.truth-script.txt", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in ("format", "event", "samples", "duration_s", "cpus_busy", "functions",
                "coverage", "findings"):
        assert key in doc
    assert doc["format"] == "perf-script"
    assert doc["event"] == "cpu-clock:ppp"
    assert doc["samples"] == 975
    assert doc["cpus_busy"] == 1.972  # 975 x 10.10101 ms / 4.994 s
    assert doc["duration_s"] == 4.994
    assert doc["time_range"] == [1282.145105, 1287.138846]
    assert doc["functions"][0]["name"] == "pthread_mutex_lock@@GLIBC_2.2.5"
    assert doc["functions"][0]["self"] == 179
    selfs = [f["self"] for f in doc["functions"]]
    assert selfs == sorted(selfs, reverse=True)


def test_text_report_of_a_raw_perf_report():
    r = run("report", SPINPOOL / "1.0.0-idle.report-raw.txt", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "samples:    975" in r.stdout
    assert "pthread_mutex_lock@@GLIBC_2.2.5" in r.stdout
    assert "approximate" in r.stdout


def test_folded_output_matches_stackcollapse(tmp_path):
    src = PUBLIC / "brendangregg__FlameGraph/test/perf-numa-stacks-01.txt"
    expected = PUBLIC / "brendangregg__FlameGraph/test/results/perf-numa-stacks-01-collapsed-tid.txt"
    r = run("report", src, "--format", "folded", "--tid")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected.read_text()


def test_perf_data_report():
    r = run("report", SPINPOOL / "1.0.0-idle.perf.data", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "perf-data"
    assert doc["samples"] == 975
    assert doc["cpus_busy"] == 1.972  # 975 x 10.10101 ms over 4.9937 s (SAMPLE_TIME)
    assert doc["metadata"]["hostname"] == "vm"


def test_symbols_name_frames_and_fill_coverage(tmp_path):
    r = run("report", SPINPOOL / "1.0.0-idle.script-raw.txt", "--symbols",
            SPINPOOL / "symbols-1.0.0.zip", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    names = {f["name"] for f in doc["functions"]}
    assert "qualla::ThreadPool::loop" in names
    cov = {c["dso"]: c for c in doc["coverage"]}
    assert cov["/opt/qualla-1.0.0/bin/libqualla.so"]["status"] == "resolved"


def test_unreadable_inputs_give_a_message_not_a_traceback(tmp_path):
    cases = {
        SPINPOOL / "symbols-1.0.0.zip": "zip archive",
        SPINPOOL / "1.0.0-idle.perf.data.tar.bz2": "bzip2",
    }
    text = tmp_path / "notes.txt"
    text.write_text("hello world\nthis is not a profile\n")
    cases[text] = "not perf script, perf report or folded"
    for path, words in cases.items():
        r = run("report", path)
        assert r.returncode == 2, path
        assert words in r.stderr
        assert "Traceback" not in r.stderr
    r = run("report", tmp_path / "missing.txt")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run("report", SPINPOOL / "1.0.0-idle.truth-script.txt", "--event", "cycles")
    assert r.returncode == 2 and "no event 'cycles'" in r.stderr


def _binary(*args):
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=ROOT,
                          capture_output=True, timeout=120)


def test_pprof_and_firefox_files_on_stdout():
    """The capture page's exports from the command line: spinpool 1.0.0 busy, 973 samples
    (perf report), 482 and 491 of them on its two threads (perf script)."""
    from analysis.export.firefox import read_firefox
    from analysis.export.pprof import function_totals, read_pprof
    capture = SPINPOOL / "1.0.0-busy.perf.data"
    r = _binary("report", capture, "--format", "pprof")
    assert r.returncode == 0, r.stderr
    msg = read_pprof(r.stdout)
    assert sum(s.value[0] for s in msg.sample) == 973
    flat, _ = function_totals(msg)
    names = {f.id: msg.string_table[f.name] for f in msg.function}
    by_name = {names[fid]: v for fid, v in flat.items()}
    doc = json.loads(run("report", capture, "--format", "json").stdout)
    assert {f["name"]: by_name.get(f["name"], 0) for f in doc["functions"][:5]} == \
        {f["name"]: f["self"] for f in doc["functions"][:5]}
    r = _binary("report", capture, "--format", "firefox")
    assert r.returncode == 0, r.stderr
    gecko = read_firefox(r.stdout)
    assert sorted(len(t["samples"]["data"]) for t in gecko["threads"]) == [482, 491]
    r = _binary("report", capture, "--format", "pprof", "--event", "cycles")
    assert r.returncode == 2 and r.stdout == b""
    assert b"no event 'cycles' in this capture (it has: 'cpu-clock:ppp')" in r.stderr
