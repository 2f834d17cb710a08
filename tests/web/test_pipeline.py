"""Upload -> Redis -> Celery worker process -> PostgreSQL -> capture page, for real."""
import os
import re
import signal
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from perfweb.captures import pipeline, services
from perfweb.captures.models import Build, Capture, Service, Team

from .conftest import ROOT, SPINPOOL, queued, wait_for

FIXTURES = ROOT / "tests" / "fixtures"

pytestmark = pytest.mark.django_db(transaction=True)


def _upload(client, capture, symbols=(), **fields):
    data = {"service": "llm-api", "version": "1.0.0", "label": "idle",
            "symbols_for_build": "on", **fields}
    files = [open(capture, "rb")] + [open(s, "rb") for s in symbols]
    try:
        data["capture"] = files[0]
        data["symbols"] = files[1:]
        return client.post(reverse("upload"), data)
    finally:
        for f in files:
            f.close()


def _status(pk):
    c = Capture.objects.get(pk=pk)
    return c if c.finished else None


def test_upload_is_processed_by_the_worker(client, member, worker_factory):
    worker_factory()
    client.force_login(member)
    r = _upload(client, SPINPOOL / "1.0.0-idle.perf.data",
                [SPINPOOL / "symbols-1.0.0.zip", SPINPOOL / "kernel-symbols.zip",
                 SPINPOOL / "1.0.0-idle.perf.data.tar.bz2"])
    assert r.status_code == 302
    capture = Capture.objects.get()
    assert r["Location"] == capture.get_absolute_url()
    done = wait_for(lambda: _status(capture.pk))
    assert done.status == "done", done.error
    assert done.format == "perf-data" and done.progress == 100
    page = client.get(capture.get_absolute_url())
    html = page.content.decode()
    functions = client.get(reverse("data-functions", args=[capture.pk])).json()
    assert "qualla::ThreadPool::loop" in {f["n"] for f in functions["functions"]}
    busy = float(re.search(r'id="cpus-busy">([^<]*)<', html).group(1))
    assert 1.9 <= busy <= 2.0
    # the diagnosis sits at the top: labelled idle yet busy, and why
    assert html.index('id="findings"') < html.index('id="explorer"')
    assert "Idle, yet 1.97 CPUs busy" in html
    assert "Threads spin instead of waiting: qualla::ThreadPool::loop burns 1.9 CPUs" in html
    assert re.search(r'href="\?focus=\d+&amp;tids=\d+,\d+#explorer"', html)
    home = client.get(reverse("home")).content.decode()
    assert "Idle, yet 1.97 CPUs busy" in home  # the findings column of capture lists
    assert "libstdc++.so.6.0.30" in html  # named as missing in the coverage table
    folded = client.get(reverse("capture-folded", args=[capture.pk]))
    body = b"".join(folded.streaming_content).decode()
    assert "qualla::ThreadPool::loop" in body
    assert sum(int(line.rsplit(" ", 1)[1]) for line in body.splitlines()) == 975


def test_garbage_fails_with_a_readable_reason(client, member, worker_factory, tmp_path):
    """Text of no profile's shape is refused by the form (nothing made); a perf.data
    cut short is a capture whose analysis fails, with perf's reason."""
    worker_factory()
    client.force_login(member)
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\nthis is not a profile\n")
    with open(junk, "rb") as f:
        r = client.post(reverse("upload"), {"service": "llm-api", "version": "1.0.0",
                                            "label": "idle", "capture": f})
    assert r.status_code == 400 and "not perf script, perf report or folded-stack text" \
        in r.content.decode()
    assert not Capture.objects.exists()
    cut = tmp_path / "cut.perf.data"
    cut.write_bytes((SPINPOOL / "1.0.0-idle.perf.data").read_bytes()[:300])
    _upload(client, cut)
    capture = Capture.objects.get()
    done = wait_for(lambda: _status(capture.pk))
    assert done.status == "failed"
    assert "perf.data is cut short" in done.error
    page = client.get(capture.get_absolute_url()).content.decode()
    # the same file fails the same way: no Retry, and a refusal if asked anyway; it can
    # be deleted
    assert "perf.data is cut short" in page and 'id="retry"' not in page
    assert "Delete this capture" in page
    r = client.post(reverse("capture-retry", args=[capture.pk]), follow=True)
    assert "cannot be read as a capture" in r.content.decode()
    assert Capture.objects.get(pk=capture.pk).status == "failed"


def test_jit_symbol_files_name_the_jit_code_through_the_worker(client, member,
                                                                worker_factory):
    """The JDK's `jcmd Compiler.perfmap` output kept as bad.perf-21082.map and a Node
    jit-PID.dump, uploaded with their captures: a real worker reads them under the
    names given (the PID in the name matches), and the capture page says which file
    named the JIT code."""
    worker_factory()
    client.force_login(member)
    jvm = FIXTURES / "realworld-holdout3" / "jvm-exceptions"
    _upload(client, jvm / "bad.perf.data", [jvm / "bad.perf-21082.map"], label="jvm")
    (dump,) = (FIXTURES / "jitdump").glob("jit-*.dump.gz")
    _upload(client, FIXTURES / "jitdump" / "perf.data", [dump], label="node",
            symbols_for_build="")
    for label, source, kind, name in (
            ("jvm", "bad.perf-21082.map", "perf map",
             "int java.lang.Integer.parseInt(java.lang.String, int)"),
            ("node", dump.name, "jitdump", "JS:*fib /tmp/perfweb-jitdump/hot.js:2:13")):
        capture = Capture.objects.get(label=label)
        done = wait_for(lambda: _status(capture.pk))
        assert done.status == "done", done.error
        report = done.latest_result().report
        (jit,) = [c for c in report["coverage"] if c["kind"] == "jit"]
        assert (jit["status"], jit["from"], jit["source"]) == ("resolved", kind, source)
        names = {f["n"] for f in client.get(reverse("data-functions", args=[capture.pk]))
                 .json()["functions"]}
        assert name in names
        assert source in client.get(capture.get_absolute_url()).content.decode()


def test_outsiders_get_404_everywhere(client, member, outsider):
    team = Team.objects.get(name="inference")
    build = Build.objects.create(service=Service.objects.create(team=team, name="llm-api"),
                                 version="1.0.0")
    client.force_login(member)
    _upload(client, SPINPOOL / "1.1.0-busy.perf.data",
            [SPINPOOL / "symbols-1.1.0.zip"], version="1.0.0")
    capture = Capture.objects.get()
    services.run_analysis(capture.pk)
    symbol = build.symbol_files.get()
    urls = [capture.get_absolute_url(), reverse("capture-status", args=[capture.pk]),
            reverse("capture-download", args=[capture.pk]),
            reverse("capture-folded", args=[capture.pk]),
            reverse("capture-result", args=[capture.pk]), build.get_absolute_url(),
            reverse("data-flame", args=[capture.pk]),
            reverse("data-functions", args=[capture.pk]),
            reverse("data-threads", args=[capture.pk]),
            reverse("data-timeline", args=[capture.pk]),
            reverse("symbol-download", args=[symbol.pk])]
    for url in urls:
        assert client.get(url).status_code == 200, url
    client.force_login(outsider)
    for url in urls:
        assert client.get(url).status_code == 404, url
    for url in (reverse("capture-retry", args=[capture.pk]),
                reverse("build-reanalyze", args=[build.pk])):
        assert client.post(url).status_code == 404, url
    assert b"llm-api" not in client.get(reverse("home")).content
    client.logout()
    assert client.get(capture.get_absolute_url()).status_code == 302  # to sign-in


def test_duplicate_upload_is_linked_not_processed_twice(client, member):
    client.force_login(member)
    first = _upload(client, SPINPOOL / "1.1.0-busy.perf.data")
    second = _upload(client, SPINPOOL / "1.1.0-busy.perf.data")
    assert Capture.objects.count() == 1
    assert first["Location"] == second["Location"]
    assert sum(queued()) <= 1


def test_upload_limit_gives_a_message(client, member, settings):
    settings.PERFWEB_MAX_UPLOAD_BYTES = 10000  # 1.1.0-busy.perf.data is 18,836 bytes
    client.force_login(member)
    r = _upload(client, SPINPOOL / "1.1.0-busy.perf.data")
    assert r.status_code == 400
    assert ("1.1.0-busy.perf.data is 18,836 bytes (18.4 KiB); the limit is 10,000 bytes "
            "(9.8 KiB)") in r.content.decode()
    assert Capture.objects.count() == 0
    # far beyond what any upload may be: refused before the body is read
    settings.PERFWEB_MAX_UPLOAD_BYTES = 100
    r = _upload(client, SPINPOOL / "1.1.0-busy.perf.data")
    assert r.status_code == 413 and "may be 100 bytes each" in r.content.decode()
    r = client.post(reverse("upload"), {"service": "x", "version": "1"},
                    HTTP_ACCEPT="application/json")
    assert r.status_code == 400 and "capture" in r.json()["errors"]


def test_sweep_requeues_lost_and_gives_up_on_hopeless(member):
    team = Team.objects.get(name="inference")
    build = Build.objects.create(service=Service.objects.create(team=team, name="s"),
                                 version="1")
    old = timezone.now() - timedelta(hours=2)
    lost = Capture.objects.create(build=build, original_name="a", sha256="a" * 64, size=1,
                                  status="queued")
    stuck = Capture.objects.create(build=build, original_name="b", sha256="b" * 64, size=1,
                                   status="symbolizing", attempts=1)
    hopeless = Capture.objects.create(build=build, original_name="c", sha256="c" * 64,
                                      size=1, status="analyzing", attempts=3)
    Capture.objects.create(build=build, original_name="d", sha256="d" * 64, size=1,
                           status="parsing", attempts=1,
                           heartbeat_at=timezone.now())  # a live worker: left alone
    Capture.objects.create(build=build, original_name="e", sha256="e" * 64, size=1,
                           status="queued")  # queued a moment ago: left alone
    Capture.objects.create(build=build, original_name="f", sha256="f" * 64, size=1,
                           status="queued", unsent=True)  # the broker was down: sent now
    run = redis.Redis.from_url(settings.REDIS_URL).info("server")["run_id"]
    Capture.objects.create(build=build, original_name="g", sha256="1" * 64, size=1,
                           status="queued", sent_run="0" * 40)  # Redis restarted since
    Capture.objects.create(build=build, original_name="h", sha256="2" * 64, size=1,
                           status="queued", sent_run=run)  # in this Redis: left alone
    Capture.objects.filter(pk__in=[lost.pk, stuck.pk, hopeless.pk]).update(
        updated_at=old, heartbeat_at=old)
    assert pipeline.sweep() == {"requeued": 4, "failed": 1}
    assert queued() == [4, 0, 0, 0]  # ahead of new work (priority 0, taken first)
    states = dict(Capture.objects.values_list("original_name", "status"))
    assert states == {"a": "queued", "b": "queued", "c": "failed", "d": "parsing",
                      "e": "queued", "f": "queued", "g": "queued", "h": "queued"}
    assert not Capture.objects.filter(unsent=True).exists()
    # sent under this run now: the next sweep leaves them alone
    assert set(Capture.objects.filter(original_name__in="abfg").values_list(
        "sent_run", flat=True)) == {run}
    assert pipeline.sweep() == {"requeued": 0, "failed": 0}
    assert "giving up" in Capture.objects.get(pk=hopeless.pk).error


def test_outdated_results_are_reanalyzed(member, worker_factory):
    from analysis import ANALYSIS_VERSION
    from perfweb.captures.models import AnalysisResult
    team = Team.objects.get(name="inference")
    build = Build.objects.create(service=Service.objects.create(team=team, name="s"),
                                 version="1")
    with open(SPINPOOL / "1.1.0-busy.perf.data", "rb") as f:
        from django.core.files import File
        capture = Capture(build=build, original_name="x", sha256="e" * 64, size=1)
        capture.file.save("x", File(f), save=False)
        capture.save()
    services.run_analysis(capture.pk)
    AnalysisResult.objects.filter(capture=capture).update(analysis_version="old")
    worker_factory()
    call_command("reanalyze_outdated")
    done = wait_for(lambda: Capture.objects.get(pk=capture.pk).results.filter(
        analysis_version=ANALYSIS_VERSION).first())
    # no symbol files were given: the new engine says so
    assert "missing-symbols" in {f["rule"] for f in done.report["findings"]}


def test_demo_loader(client, capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    password = re.search(r"password: (\S+)", out).group(1)
    r = client.post(reverse("login"), {"username": "demo", "password": password})
    assert r.status_code == 302
    assert Capture.objects.filter(status="done").count() == 4
    idle = Capture.objects.get(build__version="1.0.0", label="idle")
    assert client.get(idle.get_absolute_url()).status_code == 200
    functions = client.get(reverse("data-functions", args=[idle.pk])).json()["functions"]
    assert functions[6]["n"] == "qualla::ThreadPool::loop" and functions[6]["s"] == 52
    call_command("load_demo")  # again: nothing new
    assert Capture.objects.count() == 4


def test_notes_name_the_uploaded_files_not_their_storage_names(member, tmp_path):
    """Stored files are named by a uuid; what the engine says about them must use the
    names the user uploaded."""
    from perfweb.captures.models import SymbolFile
    from perfweb.captures.uploads import store_symbol
    team = Team.objects.get(name="inference")
    build = Build.objects.create(service=Service.objects.create(team=team, name="s"),
                                 version="1")
    odd = tmp_path / "mystery-symbols.bin"
    odd.write_bytes(b"not a symbol file\n")
    with open(SPINPOOL / "1.1.0-busy.perf.data", "rb") as f:
        from django.core.files import File
        capture = Capture(build=build, original_name="busy.perf.data", sha256="f" * 64,
                          size=1)
        capture.file.save("x", File(f), save=False)
        capture.save()
    with open(odd, "rb") as f:
        store_symbol(File(f, name="../../mystery-symbols.bin"), member, build=build)
    stored = SymbolFile.objects.get().file.name
    services.run_analysis(capture.pk)
    notes = Capture.objects.get(pk=capture.pk).latest_result().report["notes"]
    assert "mystery-symbols.bin: not a symbol file (ELF, kallsyms, System.map, " \
           "/proc/PID/maps, perf-PID.map or jit-PID.dump); skipped" in notes
    assert not any(os.path.basename(stored) in n for n in notes), notes


def test_long_non_ascii_upload_names_are_analysed(member):
    """Django keeps 255 characters of a name; 110 CJK characters are 330 bytes, over what
    a file name may hold on disk."""
    from django.core.files import File
    from perfweb.captures.uploads import store_symbol
    team = Team.objects.get(name="inference")
    build = Build.objects.create(service=Service.objects.create(team=team, name="s"),
                                 version="1")
    long_name = "性能" * 55
    with open(SPINPOOL / "1.1.0-busy.perf.data", "rb") as f:
        capture = Capture(build=build, original_name=long_name + ".perf.data",
                          sha256="f" * 64, size=1)
        capture.file.save("x", File(f), save=False)
        capture.save()
    with open(SPINPOOL / "kernel-symbols.zip", "rb") as f:
        store_symbol(File(f, name=long_name + ".zip"), member, build=build)
    services.run_analysis(capture.pk)
    done = Capture.objects.get(pk=capture.pk)
    assert done.status == "done", done.error
    assert done.latest_result().report["samples"] == 154


def test_the_comparison_with_the_previous_build_reads_its_report_only(member, monkeypatch):
    """The worker compares with the previous build's capture of the label from the two
    reports: the previous saved profile is not loaded (0.07-0.15 s of every upload of
    bench-upload's capture, and a profile in the worker's cache). The verdict is the
    one the compare API computes from both profiles."""
    from analysis import profile_io
    from perfweb.captures.models import AnalysisResult

    from .conftest import spinpool
    old = spinpool(member, "1.1.0", "busy")

    def refuse(*a, **kw):
        raise AssertionError("the previous build's saved profile was loaded")
    monkeypatch.setattr(profile_io, "load", refuse)
    new = spinpool(member, "1.0.0", "busy")
    import gc  # (the attempt froze its engine steps' objects, and let them go at its end)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    result = AnalysisResult.objects.get(capture=new)
    assert result.report["compared_with"]["capture"] == old.pk
    assert result.report["compared_with"]["verdict"] == "regression"
    assert result.comparison["before"]["id"] == old.pk
    assert result.comparison["samples_before"] == 154
    assert result.comparison["samples_after"] == 973
