"""Off-CPU time from context switches, on captures recorded here with the command perfweb
tells users to type (tests/fixtures/offcpu/*/record.sh):

    perf record -g --switch-events -e cpu-clock/freq=499/ -e sched:sched_switch -p PID

Ground truth: `switchtruth.txt`, made on the recording host by common/switchtruth.py from
`perf script --show-switch-events` (per thread: on-CPU from SWITCH IN to OUT, off-CPU by
the state the tracepoint gave, the window's edges apart), and `procsnap.txt`, the
kernel's own schedstat counters over the same seconds. (`perf sched timehist` counts the
time other processes ran as the thread's for -p captures: its README says why it is not
the truth here.)"""
import re
from functools import lru_cache

import pytest

from analysis.compare import Rate, compare_reports
from analysis.importers import load
from analysis.offcpu import off_cpu
from analysis.offcpu.switches import DEAD, EXIT, FORK, OUT
from analysis.offcpu.views import OFF_CPU, WALL, view
from analysis.report import build_report
from conftest import FIXTURES

HERE = FIXTURES / "offcpu"
CAPTURES = ["cpp-server-mutex/1.0", "cpp-server-mutex/1.1", "redis-fsync-switch/bad",
            "redis-fsync-switch/fixed"]


@lru_cache(maxsize=None)
def _profile(name: str, form: str = "perf.data"):
    """The perf.data (no symbols given: numbers) or perf's own text of it (names)."""
    path = HERE / f"{name}.perf.data" if form == "perf.data" else \
        HERE / f"{name}.perf.data.script.txt.gz"
    return load(path)


def _truth(name: str) -> dict[int, dict]:
    rows = {}
    for line in (HERE / f"{name}.perf.data.switchtruth.txt").read_text().splitlines():
        m = re.match(r"^\s+(\d+) (\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                     r"([\d.]+)\s+(\d+)\s+(\d+)$", line)
        if m:
            rows[int(m.group(1))] = dict(
                comm=m.group(2), on=float(m.group(3)), s=float(m.group(4)),
                d=float(m.group(5)), r=float(m.group(6)), edge=float(m.group(7)),
                outs=int(m.group(8)), preempt=int(m.group(9)))
    assert rows, name
    return rows


def _procsnap(name: str) -> dict[int, float]:
    out = {}
    for line in (HERE / f"{name}.perf.data.procsnap.txt").read_text().splitlines():
        f = line.split()
        if len(f) == 9 and f[0].isdigit():
            out[int(f[0])] = float(f[3])  # on_cpu seconds
    return out


@pytest.mark.parametrize("name", CAPTURES)
def test_per_thread_times_equal_perfs_switch_records(name):
    oc = off_cpu(_profile(name))
    truth = _truth(name)
    # the threads perf watched that never switched (procsnap: asleep the whole window)
    # are off-CPU all along; switchtruth lists only threads with switch records
    snap = _procsnap(name)
    idle = set(oc.threads) - set(truth)
    assert set(truth) <= set(oc.threads) and all(snap[tid] == 0.0 for tid in idle)
    for tid in idle:
        assert oc.threads[tid].off_cpu_s == pytest.approx(oc.window[1] - oc.window[0])
    for tid, t in truth.items():
        mine = oc.threads[tid]
        assert mine.switches == t["outs"], tid
        assert mine.on_cpu_s == pytest.approx(t["on"], abs=1e-4), tid
        off = t["s"] + t["d"] + t["r"] + t["edge"]
        assert mine.off_cpu_s == pytest.approx(off, abs=3e-4), tid
        # the window's edges go to the state the thread left in; the truth keeps them
        # apart, and counts a switch-out only the record saw (no tracepoint, not
        # preempted) as R where perfweb says "blocked, state unknown"
        assert abs(mine.preempted_s + mine.blocked_unknown_s - t["r"]) <= \
            t["edge"] + 2e-4, tid
        assert abs(mine.disk_s - t["d"]) <= t["edge"] + 2e-4, tid


@pytest.mark.parametrize("name", CAPTURES)
def test_on_cpu_seconds_agree_with_the_kernels_counters(name):
    """procsnap's window is a few ms off perf's: within 2%."""
    oc = off_cpu(_profile(name))
    snap = _procsnap(name)
    for tid, t in oc.threads.items():
        if t.on_cpu_s > 0.05:
            assert t.on_cpu_s == pytest.approx(snap[tid], rel=0.02), tid


@pytest.mark.parametrize("name", CAPTURES)
def test_perf_script_text_gives_the_same_times(name):
    a, b = off_cpu(_profile(name)), off_cpu(_profile(name, "text"))
    # the text has no THREAD_MAP: the threads that never switched are only in perf.data
    assert set(b.threads) == {t for t, x in a.threads.items() if x.switches}
    for tid in b.threads:
        x, y = a.threads[tid], b.threads[tid]
        assert x.switches == y.switches
        # perf script prints microseconds
        for field in ("on_cpu_s", "off_cpu_s", "preempted_s", "sleeping_s", "disk_s"):
            assert getattr(x, field) == pytest.approx(getattr(y, field), abs=2e-6 * len(a)), \
                (tid, field)


def test_the_sampling_event_is_the_default_not_the_tracepoint():
    """perf lists sched:sched_switch first in this capture; the report is of cpu-clock."""
    p = _profile("cpp-server-mutex/1.1")
    assert [e.name for e in p.events] == ["sched:sched_switch", "cpu-clock/freq=499/"]
    r = build_report(p)
    assert r["event"] == "cpu-clock/freq=499/" and r["samples"] == 2384
    assert r["cpus_busy"] == pytest.approx(0.95, abs=0.01)


def test_report_threads_and_off_cpu_block():
    r = build_report(_profile("cpp-server-mutex/1.1", "text"), label="load")
    rows = {t["tid"]: t for t in r["threads"]}
    truth = _truth("cpp-server-mutex/1.1")
    for tid, t in truth.items():
        assert rows[tid]["on_cpu_s"] == pytest.approx(t["on"], abs=1e-4)
        assert rows[tid]["switches"] == t["outs"]
        assert rows[tid]["blocked_s"] + rows[tid]["preempted_s"] == \
            pytest.approx(rows[tid]["off_cpu_s"], abs=1e-5)
    oc = r["off_cpu"]
    assert oc["timed"] and oc["totals"]["threads"] == 3 and oc["totals"]["switches"] == 8442
    top = oc["top_blocking"][0]
    # switchtruth: 5.0987 s in 4242 waits, __lll_lock_wait under Worker::on_readable;
    # plus gw-worker-1's last wait, which lasts to the end of the window (its edge,
    # 0.0098 s, that switchtruth keeps apart)
    assert (top["syscall"], top["caller"]) == ("futex", "gateway::Worker::on_readable")
    assert top["frames"][-10] == "__GI___lll_lock_wait"
    assert top["seconds"] == pytest.approx(5.0987 + 0.0098, abs=5e-4)
    assert top["count"] == 4243
    lock = next(k for k in oc["by_kind"] if k["kind"] == "lock")
    assert lock["under"][0]["name"] == "gateway::Worker::on_readable"


def test_the_mutex_build_gets_a_lock_finding_naming_the_function():
    f = {x["rule"]: x for x in build_report(_profile("cpp-server-mutex/1.1", "text"),
                                            label="load")["findings"]}
    lock = f["blocked-time"]
    assert lock["title"].startswith("Threads wait for a lock under "
                                    "gateway::Worker::on_readable: 3")
    assert lock["severity"] == "high" and lock["evidence"]["kind"] == "lock"
    assert "off-cpu" not in f  # the switches say where the time goes: no recording hint
    # 1.0 blocks only in epoll_wait between requests: waiting for work is no finding
    f10 = {x["rule"]: x for x in build_report(_profile("cpp-server-mutex/1.0", "text"),
                                              label="load")["findings"]}
    assert "blocked-time" not in f10
    # 9.66 s runnable of 15 s: perf.data says the host had 2 CPUs, which the process's
    # threads wanted more of; perf script's text does not say, so it claims nothing
    data = {x["rule"]: x for x in build_report(_profile("cpp-server-mutex/1.0"),
                                               label="load")["findings"]}
    assert data["waiting-for-cpu"]["severity"] == "high"
    assert "more than the 2 it has" in data["waiting-for-cpu"]["summary"]
    assert f10["waiting-for-cpu"]["severity"] == "low"
    assert "does not say how many" in f10["waiting-for-cpu"]["summary"]


def test_fsync_per_write_is_a_disk_wait():
    f = {x["rule"]: x for x in build_report(_profile("redis-fsync-switch/bad", "text"),
                                            label="load")["findings"]}
    disk = f["blocked-time"]
    assert disk["evidence"]["kind"] == "disk"
    # switchtruth: D 2.0950 s of the main thread's 5.0074 s
    assert disk["evidence"]["seconds"] == pytest.approx(2.0950, abs=0.002)
    assert disk["title"] == "Threads wait for the disk: 41.8% of their time"
    fixed = {x["rule"] for x in build_report(_profile("redis-fsync-switch/fixed", "text"),
                                             label="load")["findings"]}
    # everysec: the bio thread waits for jobs in a condition variable, the main thread in
    # epoll_wait: both waiting for work
    assert "blocked-time" not in fixed


def test_the_comparison_explains_the_qps_drop_by_the_lock():
    """wrk: 1,803.44 req/s for 1.0, 1,563.45 for 1.1; CPU use fell (0.99 -> 0.95)."""
    a = build_report(_profile("cpp-server-mutex/1.0", "text"), label="load")
    b = build_report(_profile("cpp-server-mutex/1.1", "text"), label="load")
    c = compare_reports(a, b, Rate(1803.44, "req/s"), Rate(1563.45, "req/s"))
    assert c["verdict"] == "regression"
    assert c["cpus_change"] < 0
    assert "blocked: lock waits under gateway::Worker::on_readable 0.0% -> 33.9%" in \
        c["reason"]
    lock = next(r for r in c["blocked"] if r["kind"] == "lock")
    assert lock["per_unit_after"] == pytest.approx(lock["per_second_after"] / 1563.45)
    back = compare_reports(b, a, Rate(1563.45, "req/s"), Rate(1803.44, "req/s"))
    assert back["verdict"] == "improvement" and "lock waits" in back["reason"]
    # without rates the blocked time alone decides
    assert compare_reports(a, b)["verdict"] == "regression"


def test_off_cpu_and_wall_views_weigh_by_microseconds():
    p = _profile("cpp-server-mutex/1.1")
    oc = off_cpu(p)
    off = view(p, OFF_CPU)
    assert sum(off.s_count) == pytest.approx(sum(oc.i_dur) * 1e6, abs=len(oc))
    wall = view(p, WALL)
    on_us = sum(p.s_period[i] for i in range(len(p)) if p.s_event[i] == 1) / 1e3
    assert sum(wall.s_count) == pytest.approx(sum(off.s_count) + on_us, rel=1e-4)
    r = build_report(_profile("cpp-server-mutex/1.1", "text"), view_name=OFF_CPU)
    top = {f["name"]: f for f in r["functions"]}
    assert r["view"] == "off-cpu" and r["view_unit"] == "µs"
    assert top["__GI___lll_lock_wait"]["total"] == pytest.approx(5.1085e6, rel=0.001)


def test_perf_sched_record_times_threads_by_their_runtime():
    """`perf sched record -p` sees the threads' switch-outs but few switch-ins: the
    sched_stat_runtime events say how long each ran before it left, which places the
    switch-in. Against the kernel's schedstat over the same window (procsnap): on-CPU
    within 0.5%, off-CPU within 1%."""
    name = "sched-record/1.1-sched"
    snap = _procsnap(name)
    wall = {}
    for line in (HERE / f"{name}.perf.data.procsnap.txt").read_text().splitlines():
        f = line.split()
        if len(f) == 9 and f[0].isdigit():
            wall[int(f[0])] = float(f[2]) - float(f[3])  # off-CPU = wall - on_cpu
    for form in ("perf.data", "text"):
        oc = off_cpu(_profile(name, form))
        busy = {t for t, x in oc.threads.items() if x.switches}
        assert oc.timed and busy == {31804, 31805}
        for tid in busy:
            t = oc.threads[tid]
            assert t.on_cpu_s == pytest.approx(snap[tid], rel=0.005), (form, tid)
            assert t.off_cpu_s == pytest.approx(wall[tid] + (t.on_cpu_s + t.off_cpu_s
                                                             - 5.0066), rel=0.01)
    r = build_report(_profile(name, "text"), label="load")
    assert r["event"] == "sched:sched_stat_runtime"
    assert r["cpus_busy"] == pytest.approx((2.324 + 2.2883) / 5.0161, abs=0.002)
    f = {x["rule"]: x for x in r["findings"]}
    assert f["cpu-use"]["summary"].startswith("0.92 CPUs busy on average, from the "
                                              "context switches")
    assert f["blocked-time"]["evidence"]["kind"] == "lock"
    assert "gateway::Worker::on_readable" in f["blocked-time"]["title"]
    # no on-CPU rule reads scheduler tracepoints as CPU samples
    assert not {"lock-contention", "kernel-heavy", "scheduling-pressure"} & set(f)


@pytest.mark.parametrize("form", ["perf.data", "text"])
def test_an_idle_pool_waiting_for_work_gets_no_problem(form):
    """memcached -t 4 with no clients: its threads sleep in epoll_wait and
    clock_nanosleep; perf took no cpu-clock sample. The 13 sched_switch samples are no
    CPU profile: nothing may read them as kernel time or spinning."""
    r = build_report(_profile("idle-pool/memcached-idle", form), label="idle")
    assert r["cpus_busy"] == pytest.approx(0.0, abs=0.001)
    rules = {x["rule"]: x["severity"] for x in r["findings"]}
    # without symbols (the perf.data alone) what they wait on is unknown: a low note
    assert rules == ({"cpu-use": "info"} if form == "text" else
                     {"cpu-use": "info", "blocked-time": "low"}), rules
    kinds = {k["kind"]: k for k in r["off_cpu"]["by_kind"]}
    if form == "text":  # names need perf's symbols
        assert kinds["sleep"]["benign"] and kinds["event wait"]["benign"]
        assert kinds["sleep"]["seconds"] == pytest.approx(4.6685, abs=0.001)


def test_a_pool_blocked_all_window_is_asleep_not_a_problem():
    """gateway-1.0 with no requests: its 9 threads (threads.txt: all in state S, the
    main thread in futex, the workers in epoll_wait) never switched in the 5 s window, so
    perf wrote no sample and no switch, only their list (THREAD_MAP): each is off-CPU
    the whole window, what it waits on unknown, and no finding says it is a problem."""
    r = build_report(_profile("idle-pool/gateway-1.0-idle"), label="idle")
    assert r["samples"] == 0
    t = r["off_cpu"]["totals"]
    assert (t["threads"], t["threads_active"], t["switches"]) == (9, 0, 0)
    assert t["off_cpu_s"] == pytest.approx(45.0) and t["on_cpu_s"] == 0.0
    assert [x["rule"] for x in r["findings"]] == ["cpu-use"]


def test_cli_views(capsys):
    """report --view off-cpu --format folded: stacks weighted by blocked µs, summing to
    the off-CPU seconds; compare --view off-cpu: movers of blocked time."""
    from analysis.cli import main
    text = str(HERE / "cpp-server-mutex" / "1.1.perf.data.script.txt.gz")
    assert main(["report", text, "--view", "off-cpu", "--format", "folded"]) == 0
    folded = capsys.readouterr().out.splitlines()
    total = sum(int(line.rsplit(" ", 1)[1]) for line in folded)
    oc = off_cpu(_profile("cpp-server-mutex/1.1", "text"))
    assert total == pytest.approx(sum(oc.i_dur) * 1e6, abs=len(oc))
    lock = [line for line in folded if "__GI___lll_lock_wait" in line]
    assert lock and all(line.startswith("gw-worker-") for line in lock)
    assert main(["report", text, "--view", "off-cpu"]) == 0
    out = capsys.readouterr().out
    assert "blocked 5.109 s in 4243 waits (mean 1.2 ms): futex in " \
           "gateway::Worker::on_readable" in out
    assert "view:       off-cpu, weighted by microseconds (10.314 s in all)" in out
    before = str(HERE / "cpp-server-mutex" / "1.0.perf.data.script.txt.gz")
    assert main(["compare", before, text, "--view", "off-cpu"]) == 0
    out = capsys.readouterr().out
    assert "blocked:    lock: 0.0% -> 33.9% of the threads' time (+33.9)" in out
    row = next(line for line in out.splitlines() if "__GI___lll_lock_wait" in line)
    assert row.split()[:3] == ["0.00%", "49.54%", "+49.54"]
    # a capture without switches: the view is refused with how to record them
    assert main(["report", str(FIXTURES / "realworld" / "redis-fsync" / "bad.script.txt.gz"),
                 "--view", "off-cpu"]) == 2
    assert "--switch-events" in capsys.readouterr().err


@pytest.mark.parametrize("form", ["perf.data", "text"])
def test_wakeups_say_who_ended_the_waits(form):
    """1.1 recorded with -e sched:sched_wakeup too: the lock waits are ended by the other
    workers releasing the mutex in Worker::on_readable (futex_wake)."""
    p = _profile("cpp-server-mutex/1.1-wakeup", form)
    oc = off_cpu(p)
    woken = [k for k in range(len(oc)) if oc.i_waker[k] >= 0]
    assert woken and all(oc.i_waker[k] in oc.threads for k in woken)
    if form == "text":
        top = build_report(p)["off_cpu"]["top_blocking"][0]
        assert top["caller"] == "gateway::Worker::on_readable"
        assert {w["caller"] for w in top["woken_by"]} == {"gateway::Worker::on_readable"}
        assert {w["comm"] for w in top["woken_by"]} <= {f"gw-worker-{i}" for i in range(4)}
    a = off_cpu(_profile("cpp-server-mutex/1.1-wakeup", "perf.data"))
    b = off_cpu(_profile("cpp-server-mutex/1.1-wakeup", "text"))
    assert sum(1 for w in a.i_waker if w >= 0) == sum(1 for w in b.i_waker if w >= 0)


def test_with_a_rate_the_lock_finding_says_the_wait_per_request():
    r = build_report(_profile("cpp-server-mutex/1.1", "text"), label="load",
                     rate=Rate(1563.45, "req/s"))
    f = next(x for x in r["findings"] if x["rule"] == "blocked-time")
    per = f["evidence"]["wait_per_unit"]
    assert per["unit"] == "request"
    assert per["seconds"] == pytest.approx(f["evidence"]["per_second"] / 1563.45)
    assert f["summary"].endswith("Per request: 651 µs of waiting.")  # 1.018 s/s / 1563.45


@pytest.mark.parametrize("form", ["perf.data", "text"])
def test_a_system_wide_capture(form):
    """-a: PERF_RECORD_SWITCH_CPU_WIDE records (402, sys.perf.data.stats.txt) and a
    THREAD_MAP of one entry (-1 as a u64: all threads); the idle tasks (tid 0 on every
    CPU) are no threads. Each thread's on + off time is the window, or the part of it the
    thread lived: from its PERF_RECORD_FORK (perf.data) to its last switch-out for the
    processes that exited in it, the `sh` loop and its ten `sleep`s (prev_state=Z: with
    -a the sched_switch of a dying task is recorded; it never comes back, and before
    issue 38 it was off-CPU from there to the window's end), or to its PERF_RECORD_EXIT
    where no switch-out follows."""
    p = _profile("system-wide/sys", form)
    assert sum(1 for k in p.switches.kind if k in (0, 1)) >= 402
    oc = off_cpu(p)
    assert oc.timed and oc.threads and min(oc.threads) > 0
    log = p.switches
    ended, last, born = set(), {}, {}
    for tid, k, st, t in zip(log.tid, log.kind, log.state, log.time):
        if k == EXIT or (k == OUT and st == DEAD):
            ended.add(tid)
        if k in (OUT, EXIT):
            last[tid] = max(last.get(tid, t), t)
        if k == FORK:
            born[tid] = t
    assert ended == {21526, *range(21528, 21538)}
    assert form == "text" or set(born) == set(range(21527, 21538))  # (perf.data only)
    for tid, t in oc.threads.items():
        end = last[tid] if tid in ended else oc.window[1]
        begin = born.get(tid, oc.window[0])
        assert t.on_cpu_s + t.off_cpu_s == pytest.approx(end - begin, abs=1e-5), tid
    assert not any(tid in ended and start + dur > last[tid] + 1e-9
                   for tid, start, dur in zip(oc.i_tid, oc.i_start, oc.i_dur))
    assert build_report(p)["off_cpu"]["totals"]["threads"] == len(oc.threads)


# ---- threads and processes that begin and end inside the window (issue 38) ---------------
# child-per-request: a Python ThreadingHTTPServer making a thread per connection and running
# /bin/true per request, recorded with -p: 380 threads and processes inherit perf's events,
# are created and exit during the 5 s. perf.data holds their PERF_RECORD_FORK/EXIT; the text
# is `perf script --show-switch-events --show-task-events`.
CHILD = "child-per-request/child-per-request"


def _lives(name: str) -> tuple[dict[int, float], dict[int, float]]:
    """(tid -> PERF_RECORD_FORK time, tid -> PERF_RECORD_EXIT time), from perf's own text."""
    import gzip
    forks, exits = {}, {}
    with gzip.open(HERE / f"{name}.perf.data.script.txt.gz", "rt") as f:
        for line in f:
            m = re.search(r" (\d+\.\d+): PERF_RECORD_(FORK|EXIT)\((\d+):(\d+)\)", line)
            if m and float(m.group(1)) > 0:
                (forks if m.group(2) == "FORK" else exits)[int(m.group(4))] = float(m.group(1))
    return forks, exits


def _timehist_summary(name: str) -> tuple[dict[int, int], set[int]]:
    """perf sched timehist -s: (tid -> sched-in count, the tids under 'Terminated tasks')."""
    counts, terminated, dead = {}, set(), False
    for line in (HERE / f"{name}.perf.data.timehist-summary.txt").read_text().splitlines():
        if line.startswith("Terminated tasks"):
            dead = True
        m = re.match(r"^\s*\S+\[(\d+)(?:/\d+)?\]\s+-?\d+\s+(\d+)\s+[\d.]+", line)
        if m:
            counts[int(m.group(1))] = int(m.group(2))
            if dead:
                terminated.add(int(m.group(1)))
    assert counts and terminated
    return counts, terminated


@pytest.mark.parametrize("form", ["perf.data", "text"])
def test_threads_that_exit_are_counted_only_while_they_live(form):
    """Before: every thread created in the window was 'blocked, no stack' from the window's
    start to its creation and on a CPU from its exit to the end: 785.742 s blocked
    (780.473 s in 304 waits with no stack) and 734.737 s on CPU in a 4.99 s capture.
    Now each thread counts from its PERF_RECORD_FORK (runnable until its first switch-in)
    to its PERF_RECORD_EXIT, as the truth (switchtruth.py on perf's records) does."""
    oc = off_cpu(_profile(CHILD, form))
    truth = _truth(CHILD)
    forks, exits = _lives(CHILD)
    assert len(forks) == len(exits) == 380
    assert set(oc.threads) == set(truth) and len(truth) == 381
    for tid, t in truth.items():
        mine = oc.threads[tid]
        assert mine.switches == t["outs"], tid
        assert mine.on_cpu_s == pytest.approx(t["on"], abs=1e-4), tid
        assert mine.off_cpu_s == pytest.approx(t["s"] + t["d"] + t["r"] + t["edge"],
                                               abs=3e-4), tid
        # (the window's edges go to the state the thread left in, and perfweb's window
        # ends 0.22 ms after switchtruth's last switch record: the server thread, asleep)
        assert mine.sleeping_s + mine.disk_s == pytest.approx(t["s"] + t["d"],
                                                              abs=t["edge"] + 3e-4), tid
        if tid in exits:
            assert t["edge"] == 0.0 and mine.blocked_unknown_s == 0.0, tid
            # a thread is on or off CPU only while it lives
            life = exits[tid] - forks[tid]
            assert mine.on_cpu_s + mine.off_cpu_s == pytest.approx(life, abs=1e-4), tid
    # no wait past a thread's exit, none before its creation
    for tid, start, dur in zip(oc.i_tid, oc.i_start, oc.i_dur):
        if tid in exits:
            assert forks[tid] - 1e-6 <= start and start + dur <= exits[tid] + 1e-6, tid
    span = oc.window[1] - oc.window[0]
    blocked = sum(t.blocked_s for t in oc.threads.values())
    on = sum(t.on_cpu_s for t in oc.threads.values())
    assert blocked <= len(oc.threads) * span
    # switchtruth's totals: on 0.4156 s, S 4.9502 + D 0.3190 s, R 0.4478 s (+ the server
    # thread's 0.1 ms edge); the server's own thread waits in poll (accept) 4.87 s of the 4.99
    assert on == pytest.approx(0.4156, abs=1e-4)
    assert blocked == pytest.approx(4.9502 + 0.3190, abs=5e-4)
    assert sum(t.preempted_s for t in oc.threads.values()) == pytest.approx(0.4478, abs=2e-4)


def test_exited_threads_agree_with_perf_sched_timehist():
    """timehist's run and wait times are wrong for -p captures (cpp-server-mutex/README.md),
    its counts are not: every thread it lists has perfweb's switch-out count, and the
    threads it calls terminated are those whose timeline perfweb ends at their exit."""
    oc = off_cpu(_profile(CHILD))
    counts, terminated = _timehist_summary(CHILD)
    _, exits = _lives(CHILD)
    assert len(counts) == 305 and len(terminated) == 304
    for tid, n in counts.items():
        assert oc.threads[tid].switches == n, tid
    assert terminated <= set(exits) and set(counts) - terminated == {25965}
    # the threads timehist lists no sched-in for never switched out (/bin/true that ran
    # to its exit in one go): no off-CPU time but their wait for a first CPU
    for tid in set(oc.threads) - set(counts):
        t = oc.threads[tid]
        assert t.switches == 0 and t.off_cpu_s == t.preempted_s, tid


def test_the_report_of_a_child_per_request_server():
    r = build_report(_profile(CHILD, "text"), label="load")
    oc = r["off_cpu"]
    assert oc["totals"]["threads"] == 381
    top = oc["top_blocking"][0]
    assert top["frames"][0] == "__poll" and top["count"] == 190
    assert top["seconds"] == pytest.approx(4.327, abs=1e-3)
    assert all(b["frames"] for b in oc["top_blocking"])  # no '(no stack recorded)' row
