"""Comparing two builds' captures, and exporting a capture to other tools, on the spinpool
case: 1.1.0 (fixed) and 1.0.0 (spinning), symbolized with their bundles."""
import io
import json
import subprocess
import sys

import pytest

from analysis.aggregate import stack_weights
from analysis.aggregate.functions import top_functions
from analysis.compare import Rate, compare, diff_tree
from analysis.export.perf_script_text import write_perf_script
from analysis.export.speedscope import SCHEMA, to_speedscope
from analysis.importers import load
from analysis.symbols import symbolize
from conftest import ROOT, SPINPOOL
from truth import truth_report


def _capture(version, label):
    p = load(SPINPOOL / f"{version}-{label}.perf.data")
    bundle = "1.0.0-busy" if version == "1.0.0" else "1.1.0-busy"
    # inline=False: the shares are compared with perf's report, made without inline frames
    symbolize(p, [SPINPOOL / f"symbols-{version}.zip", SPINPOOL / "kernel-symbols.zip",
                  SPINPOOL / f"{bundle}.perf.data.tar.bz2"], inline=False)
    return p


@pytest.fixture(scope="module")
def busy():
    return _capture("1.1.0", "busy"), _capture("1.0.0", "busy")


def test_what_grew_has_perf_reports_shares(busy):
    fixed, spinning = busy
    c = compare(fixed, spinning, "busy", "busy")
    assert (c["samples_before"], c["samples_after"]) == (154, 973)
    _, truth = truth_report(SPINPOOL / "1.0.0-busy.truth-report.txt")
    movers = {m["name"]: m for m in c["movers"]["functions"]}  # by function identity
    for name, perf_name in (("pthread_mutex_lock", "pthread_mutex_lock@@GLIBC_2.2.5"),
                            ("do_syscall_64", "do_syscall_64"),
                            ("__GI___lll_lock_wait", "__GI___lll_lock_wait"),
                            ("__GI___pthread_mutex_unlock_usercnt",
                             "__GI___pthread_mutex_unlock_usercnt")):
        assert (movers[name]["self_before"], movers[name]["self_after"]) == \
            (0.0, truth[perf_name])
    # no rates: judged by the costs the diagnosis names that appeared (issue 38)
    assert c["verdict"] == "regression"
    assert c["reason"] == (
        "A cost grew: Threads spin instead of waiting: qualla::ThreadPool::loop burns "
        "1.6 CPUs, 0.0% before; Lock contention: threads wait for and wake each other, "
        "0.0% before; no throughput was given, so this is judged by what the captures "
        "show.")
    reg = c["regression"]
    assert reg["rule"] == "regression" and reg["severity"] == "high"
    assert reg["functions"][:3] == ["pthread_mutex_lock", "do_syscall_64",
                                    "__GI___pthread_mutex_unlock_usercnt"]
    assert {f["rule"] for f in c["findings_appeared"]} == \
        {"kernel-heavy", "lock-contention", "spin-wait"}


def test_rates_decide_by_cpu_per_unit_of_work(busy):
    """Both builds served the same 400 jobs/s (40 jobs every 100 ms): the spinning one
    spends 6.2x the CPU per job; the other way round it is the fix."""
    fixed, spinning = busy
    jobs = Rate(400, "jobs/s")
    c = compare(fixed, spinning, "busy", "busy", rate_before=jobs, rate_after=jobs)
    assert c["verdict"] == "regression"
    assert c["cpu_per_unit"]["unit"] == "job"
    assert c["cpu_per_unit"]["change"] == pytest.approx(1.97 / 0.32 - 1, rel=0.02)
    assert c["reason"].startswith("CPU per job +524% (790 µs -> 4.93 ms of CPU per job) "
                                  "at 400 -> 400 jobs/s")
    back = compare(spinning, fixed, "busy", "busy", rate_before=jobs, rate_after=jobs)
    assert back["verdict"] == "improvement" and back["regression"] is None
    # more CPU for more work is no regression: the same CPU per job at 6.3x the rate
    more = compare(fixed, spinning, "busy", "busy", rate_before=jobs,
                   rate_after=Rate(400 * 973 / 154, "jobs/s"))
    assert more["verdict"] == "improvement" and more["regression"] is None
    assert more["reason"].startswith("Throughput +532% (400 -> 2,527 jobs/s) at -1% CPU "
                                     "per job")
    # a service whose throughput fell regressed, even when it burns less CPU per job:
    # the spinning build at 0.7x the rate and 5x the CPU is judged by its throughput
    fewer = compare(spinning, fixed, "busy", "busy", rate_before=jobs,
                    rate_after=Rate(280, "jobs/s"))
    assert fewer["verdict"] == "regression"
    assert fewer["reason"].startswith("Throughput -30% (400 -> 280 jobs/s) at -77% CPU per job")
    other = compare(fixed, spinning, rate_before=jobs, rate_after=Rate(3, "MB/s"))
    assert other["verdict"] == "inconclusive" and "different units" in other["reason"]


def test_the_fix_is_no_regression(busy):
    fixed, spinning = busy
    c = compare(spinning, fixed, "busy", "busy")
    assert c["verdict"] == "improvement" and c["regression"] is None
    assert c["cpus_change"] == pytest.approx(-1.654, abs=0.01)
    assert "spin-wait" in {f["rule"] for f in c["findings_gone"]}


def test_idle_capture_with_no_samples_compares():
    c = compare(_capture("1.0.0", "idle"), _capture("1.1.0", "idle"), "idle", "idle")
    assert (c["cpus_before"], c["cpus_after"]) == (1.972, 0.0)
    assert c["verdict"] == "improvement"
    assert c["reason"] == ("Both captures are idle (no work), so every CPU used is waste: "
                           "CPUs busy 1.97 -> 0.00.")
    assert c["regression"] is None and c["samples_after"] == 0
    assert "spin-wait" in {f["rule"] for f in c["findings_gone"]}


def test_differential_tree_adds_up(busy):
    fixed, spinning = busy
    tree = diff_tree(fixed, spinning, min_share=0)
    assert (tree["a"], tree["b"]) == (154, 973)
    nodes = tree["nodes"]  # flat, parents first
    assert nodes[0]["p"] == -1 and all(0 <= n["p"] < i for i, n in enumerate(nodes) if i)
    for i, node in enumerate(nodes):
        kids = [n for n in nodes if n["p"] == i]
        assert sum(c["a"] for c in kids) <= node["a"]
        assert sum(c["b"] for c in kids) <= node["b"]


def test_speedscope_document(busy):
    _, p = busy
    doc = json.loads(json.dumps(to_speedscope(p)))
    assert doc["$schema"] == SCHEMA
    assert len(doc["profiles"]) == len(set(p.s_tid))
    assert sum(len(prof["samples"]) for prof in doc["profiles"]) == 973
    # cpu-clock's periods, in ns: 973 samples of 10,101,010 ns (99 Hz), perf report's
    # "Event count (approx.)" of this capture
    assert {prof["unit"] for prof in doc["profiles"]} == {"nanoseconds"}
    assert sum(sum(prof["weights"]) for prof in doc["profiles"]) == 973 * 10_101_010
    names = {f["name"] for f in doc["shared"]["frames"]}
    assert "qualla::ThreadPool::loop" in names
    for prof in doc["profiles"]:
        assert prof["endValue"] == sum(prof["weights"])
        assert len(prof["samples"]) == len(prof["weights"])


def test_perf_script_export_reimports_to_the_same_profile(busy):
    _, p = busy
    buf = io.StringIO()
    write_perf_script(p, buf)
    again = load(io.BytesIO(buf.getvalue().encode()))
    assert again.meta.format == "perf-script" and len(again) == 973

    def selfs(profile):
        return {(f.name, f.self) for f in top_functions(profile, stack_weights(profile))}
    assert selfs(again) == selfs(p)


def test_cli_compare_and_exports():
    run = lambda *a: subprocess.run([sys.executable, "-m", "analysis", *map(str, a)],  # noqa
                                    cwd=ROOT, capture_output=True, text=True, timeout=120)
    r = run("compare", SPINPOOL / "1.0.0-idle.truth-script.txt",
            SPINPOOL / "1.1.0-idle.truth-script.txt", "--label", "idle")
    assert r.returncode == 0, r.stderr
    assert "CPUs busy:  1.97 -> 0.00 (-1.97)" in r.stdout
    assert "verdict:    improvement: Both captures are idle" in r.stdout
    assert "samples:    975 -> 0" in r.stdout
    assert "finding went away: [high] Threads spin instead of waiting" in r.stdout
    r = run("compare", SPINPOOL / "1.1.0-busy.truth-script.txt",
            SPINPOOL / "1.0.0-busy.truth-script.txt", "--rate-before", "400",
            "--rate-after", "400", "--rate-unit", "jobs/s")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("verdict:    regression: CPU per job +524%")
    r = run("compare", SPINPOOL / "1.1.0-busy.truth-script.txt",
            SPINPOOL / "1.0.0-busy.truth-script.txt", "--rate-before", "400,410,395",
            "--rate-after", "380 390 385", "--rate-unit", "jobs/s")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("verdict:    regression: CPU per job +551% (787 µs -> "
                               "5.12 ms of CPU per job) at 402 -> 385 jobs/s")
    assert "The throughput's change is -4% ± 4% at 95% (3 and 3 measurements)." in r.stdout
    r = run("compare", SPINPOOL / "1.1.0-busy.truth-script.txt",
            SPINPOOL / "1.0.0-busy.truth-script.txt", "--rate-before", "0")
    assert r.returncode == 2 and "a rate must be a positive number" in r.stderr
    r = run("report", SPINPOOL / "1.0.0-busy.truth-script.txt", "--rate", "400",
            "--rate-unit", "jobs/s", "--format", "json")
    rep = json.loads(r.stdout)
    assert rep["rate"] == {"value": 400.0, "unit": "jobs/s"}
    assert rep["cpu_per_unit"]["unit"] == "job"
    assert rep["cpu_per_unit"]["cpu_seconds"] == pytest.approx(1.971 / 400, rel=0.01)
    r = run("report", SPINPOOL / "1.0.0-idle.truth-script.txt", "--format", "speedscope")
    assert json.loads(r.stdout)["$schema"] == SCHEMA
    r = run("compare", SPINPOOL / "1.0.0-idle.truth-script.txt", ROOT / "missing")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_kernel_time_that_grew_is_named_without_kernel_symbols():
    """Only the application's symbols: libc's locks and the kernel's futex paths have no
    names, yet the kernel time that grew is said, with what to upload to name it."""
    def app_only(version):
        p = load(SPINPOOL / f"{version}-busy.perf.data")
        symbolize(p, [SPINPOOL / f"symbols-{version}.zip"])
        return p
    fixed, spinning = app_only("1.1.0"), app_only("1.0.0")
    c = compare(fixed, spinning, "busy", "busy")
    assert c["verdict"] == "inconclusive"
    assert "the kernel's share of busy time went from 0.0% to 48.6% (upload the recording " \
           "host's kallsyms to name what it did)" in c["reason"]
    jobs = Rate(400, "jobs/s")
    c = compare(fixed, spinning, "busy", "busy", rate_before=jobs, rate_after=jobs)
    assert c["verdict"] == "regression"
    summary = c["regression"]["summary"]
    assert "48.6 points more time in the kernel (0.0% -> 48.6% of busy time); upload the " \
           "recording host's kallsyms and the C library's symbols (libc6-dbg's debug " \
           "file) to name it" in summary
    # never a raw address as a reason: what no symbol names is summed per library
    # (summed over all their addresses: the fixed build has no kernel or libc frames)
    assert "grew: the kernel (no symbols: upload the recording host's kallsyms) 0.0% -> " \
           "48.61%, libc.so (no symbols: upload its symbol file) 0.0% -> 32.27%, " \
           "qualla::ThreadPool::loop 0.0% -> 3.39%" in summary
    assert "0xffff" not in summary
