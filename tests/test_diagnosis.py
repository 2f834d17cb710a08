"""Findings on real captures: each rule where its pattern is present, and silence where it
is absent. Every expectation says why it holds."""
import json
import subprocess
import sys

import pytest

from analysis.diagnosis import RULES, diagnose, runtimes
from analysis.importers import load
from analysis.location_table import expand_locations
from analysis.symbols import symbolize
from conftest import FIXTURES, PUBLIC, ROOT, SPINPOOL

DIAG = FIXTURES / "diagnosis"
ALL_RULES = {r.id for r in RULES} - {"cpu-use"}


def _spinpool(case, symbols=True):
    p = load(SPINPOOL / f"{case}.perf.data")
    if symbols:
        version = case.split("-")[0]
        symbolize(p, [SPINPOOL / f"symbols-{version}.zip",
                      SPINPOOL / f"{case}.perf.data.tar.bz2"])
    return p


def _fired(findings):
    """The rules that found something (where the time goes, said at info, is not)."""
    return {f.rule for f in findings
            if f.rule not in ("cpu-use", "nothing-notable") and f.severity != "info"}


def test_spinpool_idle_1_0_0_is_a_spinning_thread_pool():
    findings = diagnose(_spinpool("1.0.0-idle"), label="idle")
    by = {f.rule: f for f in findings}
    # headline: labelled idle, 975 samples x 10.1 ms over 4.99 s
    assert findings[0].rule == "cpu-use" and findings[0].severity == "high"
    assert findings[0].title == "Idle, yet 1.97 CPUs busy"
    spin = by["spin-wait"]
    assert spin.severity == "high"
    # both workers; everything but the loop's own code is lock traffic. perf's report
    # (no inline frames) gives the loop 52 samples of its own; the bundle's DWARF shows 10
    # of them in std::mutex::lock and ::unlock inlined into it: 923 + 10
    assert spin.samples == 933 and round(spin.cpus, 1) == 1.9
    assert "qualla::ThreadPool::loop" in spin.title
    assert spin.evidence["functions"][0]["name"] == "qualla::ThreadPool::loop"
    assert "condition variable" in spin.fix and "wake the workers" in spin.fix
    assert spin.focus["functions"][0]["name"] == "qualla::ThreadPool::loop"
    assert len(spin.focus["threads"]) == 2
    # the two threads fight over one mutex: futex wait/wake in 64% of samples
    assert by["lock-contention"].samples == 624
    # futex syscalls: __x64_sys_futex's total (386) is 39.6% of the samples
    syscalls = {s["name"]: s["samples"] for s in by["kernel-heavy"].evidence["syscalls"]}
    assert syscalls["futex"] == 386
    # nothing else: no allocation, copying, I/O, interpreters; symbols are complete. The
    # stacks are cut (glibc's lock functions have no frame pointer, so perf -g loses
    # their caller, the loop): a low note says to record with --call-graph dwarf
    assert _fired(findings) == {"spin-wait", "lock-contention", "kernel-heavy",
                                "broken-stacks"}
    assert by["broken-stacks"].severity == "low"
    assert "--call-graph dwarf" in by["broken-stacks"].fix


def test_spinpool_busy_1_0_0_still_spins():
    """The same bug under load: the workers spin between jobs."""
    findings = diagnose(_spinpool("1.0.0-busy"), label="busy")
    assert findings[0].severity == "info"  # busy, and it is called busy: not a finding
    assert _fired(findings) == {"spin-wait", "lock-contention", "kernel-heavy",
                                "broken-stacks"}


def test_spinpool_1_1_0_is_clean():
    """The fix waits on a condition variable: busy time is the jobs, idle is asleep."""
    busy = diagnose(_spinpool("1.1.0-busy"), label="busy")
    assert _fired(busy) == set()
    assert busy[-1].rule == "nothing-notable"
    idle = diagnose(load(SPINPOOL / "1.1.0-idle.perf.data"), label="idle")
    assert [f.rule for f in idle] == ["cpu-use"] and idle[0].cpus == 0.0


def test_missing_symbols_names_what_to_upload():
    """Without the bundles every user frame is an address: the finding names the DSOs
    (with the build-ids perf recorded) and the kernel."""
    findings = diagnose(_spinpool("1.0.0-idle", symbols=False))
    missing = {f.rule: f for f in findings}["missing-symbols"]
    dsos = {d["dso"]: d for d in missing.evidence["dsos"]}
    assert dsos["/usr/lib/x86_64-linux-gnu/libc.so.6"]["build_id"] == \
        "93ac61ec5a8eb1396f9fbd350e3169a558528a40"
    assert "kallsyms" in dsos["[kernel.kallsyms]"]["upload"]
    # libc and the kernel; libqualla's 52 samples (5.3%) are under the 10% threshold
    assert missing.samples == 918 and "/opt/qualla-1.0.0/bin/libqualla.so" not in dsos


@pytest.mark.parametrize("name,expected,why", [
    ("alloc", {"allocator-churn", "broken-stacks"},
     "malloc/free of 64..4000 bytes per iteration: 95% of samples in the allocator"),
    ("copy", {"memory-copy"}, "1 MiB memcpy per iteration: all samples in __memmove_*"),
    ("log", {"sync-io", "kernel-heavy", "broken-stacks"},
     "fprintf + fflush per request: stdio, write(2) and ext4 on the calling thread"),
    ("oversubscribe", {"scheduling-pressure"}, "8 busy threads on the 2 CPUs perf saw"),
    ("python", {"interpreter-bound", "broken-stacks"},
     "a Python loop: _PyEval_EvalFrameDefault on top (libpython has no frame pointers)"),
])
def test_each_pattern_fires_its_rule_and_only_it(name, expected, why):
    findings = diagnose(load(DIAG / f"{name}.script.txt"))
    assert _fired(findings) == expected, why
    first = findings[1]
    assert first.rule in expected, why
    assert any(first.evidence.get(k) for k in ("functions", "threads")), why


def test_oversubscription_counts_threads_and_cpus():
    f = {x.rule: x for x in diagnose(load(DIAG / "oversubscribe.script.txt"))}
    sched = f["scheduling-pressure"]
    assert sched.summary == "8 busy threads compete for 2 CPUs."
    assert len(sched.focus["threads"]) == 8


@pytest.mark.parametrize("rel,expected,why", [
    ("brendangregg__FlameGraph/test/perf-vertx-stacks-01.txt", {"kernel-heavy"},
     "JIT-compiled Java (netty, Rhino) that the perf map names, above a bottom frame the "
     "map calls Interpreter: perf sees the program's methods, so no interpreter-bound "
     "(it was, counting that frame inclusively); socket writes make a third of the "
     "samples kernel time, the server's work (low)"),
    ("brendangregg__FlameGraph/test/perf-dd-stacks-01.txt", {"kernel-heavy",
                                                             "broken-stacks"},
     "dd copies through read/write system calls: the work is in the kernel; /dev/null "
     "writes are not file-system I/O"),
    ("tidesdb__tidesdb/perf_report.txt", {"hot-spot"},
     "a CPU-bound benchmark in its own code (random, bloom filter hashing): glibc's "
     "__random, 29.9% with its callers lost, said at low as where the time goes"),
    ("jrfonseca__gprof2dot/tests/perf/glxgears.perf", {"broken-stacks", "hot-spot"},
     "Mesa's software rasterizer doing its job in JIT code and libraries; 99.7% of its "
     "stacks end after two frames or at addresses like 0x900000001 (libGL doing 88.7% "
     "of the work is said, low, as where the time goes: hot-spot)"),
])
def test_public_captures(rel, expected, why):
    findings = diagnose(load(PUBLIC / rel))
    assert _fired(findings) == expected, why
    # where the time goes is named, never as a fault, where nothing describes the work
    assert all(f.severity in ("info", "low") for f in findings if f.rule == "hot-spot")


def test_kernel_time_tells_call_overhead_from_data_work():
    """dd's 512-byte reads and writes of /dev/zero and /dev/null: every kernel sample is
    in entry code, descriptor lookups and permission checks, the price of the calls;
    vert.x writing HTTP responses to sockets: the kernel is doing the network work."""
    dd = {f.rule: f for f in diagnose(load(PUBLIC / "brendangregg__FlameGraph/test/"
                                               "perf-dd-stacks-01.txt"))}["kernel-heavy"]
    assert dd.title == "System-call overhead: many small calls (write 54.5%)"
    assert dd.evidence["overhead_share"] == 0.8182 and "fewer, larger" in dd.fix
    vertx = {f.rule: f for f in diagnose(load(PUBLIC / "brendangregg__FlameGraph/test/"
                                                  "perf-vertx-stacks-01.txt"))}["kernel-heavy"]
    # the kernel writing a server's responses is its work, said as where the time goes
    assert vertx.title == ("The kernel moving data and waiting for the program "
                           "(write 28.7%)") and vertx.severity == "low"
    assert vertx.evidence["kinds"][0]["kind"] == "file and socket data"
    assert vertx.evidence["overhead_share"] == 0.0315


def test_rules_are_one_explicit_list_with_thresholds():
    ids = [r.id for r in RULES]
    assert ids[0] == "cpu-use" and len(ids) == len(set(ids)) == 31
    assert all(r.thresholds for r in RULES)
    assert ALL_RULES == {"spin-wait", "lock-contention", "kernel-heavy", "commit-io",
                         "sync-io", "allocator-churn", "memory-copy", "lock-wait",
                         "interpreter-lock", "blocked-time", "waiting-for-cpu",
                         "off-cpu", "scheduling-pressure",
                         "interpreter-bound", "hot-code", "costly-work",
                         "missing-symbols", "broken-stacks", "runtime-overhead",
                         "hot-spot", "page-faults", "process-churn", "round-trips",
                         "sleeping-workers", "thread-churn", "setup-repeated",
                         "unoptimized-build", "linear-search", "linear-walk",
                         "direct-reads"}


def test_cli_prints_and_returns_findings():
    args = [sys.executable, "-m", "analysis", "report", SPINPOOL / "1.0.0-idle.perf.data",
            "--symbols", SPINPOOL / "symbols-1.0.0.zip",
            "--symbols", SPINPOOL / "1.0.0-idle.perf.data.tar.bz2", "--label", "idle"]
    text = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "[high] Threads spin instead of waiting: qualla::ThreadPool::loop" in text.stdout
    doc = json.loads(subprocess.run(args + ["--format", "json"], cwd=ROOT,
                                    capture_output=True, text=True, timeout=120).stdout)
    spin = next(f for f in doc["findings"] if f["rule"] == "spin-wait")
    assert set(spin) >= {"rule", "title", "severity", "share", "functions"}
    assert spin["functions"][0] == "qualla::ThreadPool::loop"
    assert spin["severity"] == "high" and spin["share"] == 0.9569  # 933 of 975


@pytest.mark.parametrize("name", ["1.0.0-idle", "1.0.0-busy"])
def test_missing_symbols_by_leaf_location_is_the_per_stack_count(name):
    """missing_symbols sums the weights per leaf location; a profile with a location that
    has no functions goes back to asking each stack its first function: the same finding
    both ways (read on the unsymbolized spinpool captures)."""
    from analysis.diagnosis import rules
    from analysis.diagnosis.context import Context

    ctx = Context.build(_spinpool(name, symbols=False))
    t = next(r.thresholds for r in RULES if r.id == "missing-symbols")
    fast, slow = rules.missing_symbols(ctx, t), rules._missing_symbols_by_stack(ctx, t)
    assert fast is not None and fast.samples > 0
    assert (fast.samples, fast.evidence) == (slow.samples, slow.evidence)
    # a location without functions: its stacks' leaf is the next frame's function
    sid = max(ctx.weights, key=lambda s: (len(ctx.profile.stacks[s]) > 1, ctx.weights[s]))
    profile = _spinpool(name, symbols=False)
    expand_locations(profile)  # (objects to change: a LocationTable's are copies)
    profile.locations[profile.stacks[sid][0]].functions = ()
    ctx = Context.build(profile)
    assert () in ctx.stack_funcs.loc_functions
    again = rules.missing_symbols(ctx, t)
    want = rules._missing_symbols_by_stack(ctx, t)
    assert (again.samples, again.evidence) == (want.samples, want.evidence)


@pytest.mark.parametrize("name,loads", [
    ("JS:*loadTemplates /srv/app/templates/server.js:36:23", True),
    ("load_config", True), ("readSettings", True), ("main.loadConfig", True),
    ("github.com/acme/svc/config.Load", True), ("X509_load_cert_crl_file_ex", True),
    ("java.util.Map com.acme.ConfigLoader.load(java.lang.String)", True),
    ("TemplateParser::parseNode(Node*)", True), ("InitCatalogCachePhase2", True),
    # the verb or the noun alone, a noun in a path or in template arguments, the kernel's
    ("loadUser", False), ("RequestParser.parseHeaders", False), ("load_balance", False),
    ("JS:*readFileSync node:fs:441:22", False), ("JS:* /srv/templates/server.js:9:1", False),
    ("std::vector<Config>::push_back", False), ("ConfigurationManager.get", False),
])
def test_a_loading_function_is_known_by_its_own_name(name, loads):
    """A verb of loading and a noun of what programs load once, both in the function's own
    name (its class and method), never in its arguments or its source file's path."""
    assert runtimes.loads_by_name(name) is loads
    rt, sub = runtimes.subsystem_of(name, "/srv/app/bin/app")
    assert (sub is not None and sub.kind == "loading") is loads
    assert runtimes.subsystem_of(name, "[kernel.kallsyms]")[1] is None


@pytest.mark.parametrize("name,runtime", [
    ("<core::str::iter::Chars as core::iter::traits::iterator::Iterator>::advance_by", True),
    ("core::slice::memchr::memchr_aligned", True), ("alloc::raw_vec::finish_grow", True),
    ("<std::io::stdio::StdoutLock as std::io::Write>::write_all", True),
    ("std::vector<int>::push_back", True),
    ("<reviewtok::Vocab as core::fmt::Display>::fmt", False), ("reviewtok::tokenize_nth", False),
    ("coredump_handler", False),
])
def test_a_languages_standard_library_is_not_the_programs_code(name, runtime):
    """C++'s std:: and Rust's core::, alloc::, std:: are compiled into the program but not
    its code; a trait implemented for the program's own type is the program's."""
    from analysis.diagnosis.knowledge import is_language_runtime
    assert is_language_runtime(name) is runtime


def test_threads_seen_in_chunks_equal_one_pass_over_the_rows(monkeypatch):
    """thread_churn reads the rows a chunk at a time (its per-row temporaries were the
    peak of a 4M-sample report); per thread the first and last time, the samples and
    the last row's process are those of one pass over every row, whatever the chunk."""
    import math
    import random

    from analysis.diagnosis import thread_churn
    from analysis.profile import Profile
    rng = random.Random(35)
    for _ in range(60):
        p = Profile()
        p.event("cpu-clock")
        p.event("sched:sched_switch")
        s = p.stack(())
        rows = []
        for _ in range(rng.randint(0, 40)):
            tid = rng.choice([-1, 0, 5, 6, 7, 1000])
            row = (tid, rng.choice([5, 6, 99]), rng.choice([math.nan, rng.random() * 9]),
                   rng.choice([0, 0, 1]))
            rows.append(row)
            p.add_sample(s, tid=row[0], pid=row[1], time=row[2], event_id=row[3])
        kept = [r for r in rows if r[0] not in (-1, 0) and not math.isnan(r[2])
                and r[3] == 0]
        for chunk in (1, 3, 1 << 20):
            monkeypatch.setattr(thread_churn, "CHUNK", chunk)
            got = thread_churn._threads_seen(p, 0)
            if len(kept) < 2:
                assert got is None
                continue
            u, first, last, n, pid_of, t0, t1 = got
            tids = sorted({r[0] for r in kept})
            assert u.tolist() == tids
            assert first.tolist() == [min(r[2] for r in kept if r[0] == t) for t in tids]
            assert last.tolist() == [max(r[2] for r in kept if r[0] == t) for t in tids]
            assert n.tolist() == [sum(r[0] == t for r in kept) for t in tids]
            assert pid_of.tolist() == [[r[1] for r in kept if r[0] == t][-1] for t in tids]
            assert (t0, t1) == (min(r[2] for r in kept), max(r[2] for r in kept))
