"""The debuginfod client (analysis/symbols/debuginfod.py) against Debian's debuginfod
serving the spinpool case's ELF files on loopback (tests/debuginfod_server.py): the busy
1.0.0 capture uploaded with the kernel's kallsyms only, its user frames named from the
server exactly as perf names them with every symbol file (truth-script, truth-report),
each file cached per build-id, a second analysis asking nothing; a stub standing for a
bad server answers what a hostile one may."""
import http.server
import json
import os
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from analysis.export.folded import FoldOptions, fold
from analysis.importers import load
from analysis.symbols import symbolize
from analysis.symbols.debuginfod import Client, parse_urls
from conftest import FIXTURES, ROOT, SPINPOOL
from debuginfod_server import DWARF, LIBC, QUALLA, Server, requests
from loopback_http import serving
from truth import truth_report

CASE = "1.0.0-busy"
KERNEL = SPINPOOL / "kernel-symbols.zip"
QUALLA_DSO = "/opt/qualla-1.0.0/bin/libqualla.so"
LIBC_DSO = "/usr/lib/x86_64-linux-gnu/libc.so.6"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("debuginfod"))
    yield s
    s.stop()


def _analysed(client):
    p = load(SPINPOOL / f"{CASE}.perf.data")
    cov = symbolize(p, [KERNEL], inline=False, debuginfod=client)
    return p, {c["dso"]: c for c in cov}


def _folded(profile):
    return fold(profile, FoldOptions(convention="inferno", weight="samples"))


def _unnamed(p, dsos=(QUALLA_DSO, LIBC_DSO)):
    """(frames, samples) of `dsos` left unnamed: distinct locations, and the samples
    whose stack holds one. (libstdc++'s one address stays unnamed: no file of it is
    anywhere, perf shows it as 0x7f147f4d44a3.)"""
    bad = {loc.id for loc in p.locations
           if p.mappings[loc.mapping_id].path in dsos
           and not any(p.functions[f].resolved for f in loc.functions)}
    samples = sum(n for sid, n in zip(p.s_stack, p.s_count) if bad & set(p.stacks[sid]))
    return len(bad), samples


def test_the_variable_as_libdebuginfod_reads_it(tmp_path):
    for unset in ({}, {"DEBUGINFOD_URLS": ""}, {"DEBUGINFOD_URLS": "  \t "},
                  {"DEBUGINFOD_URLS": "file:///usr/lib/debug"}):
        assert Client.from_env(unset, tmp_path) is None
    c = Client.from_env({"DEBUGINFOD_URLS": "https://debuginfod.debian.net/ "
                         "http://127.0.0.1:8002 https://debuginfod.debian.net",
                         "DEBUGINFOD_TIMEOUT": "2", "DEBUGINFOD_MAXSIZE": "1000"}, tmp_path)
    assert c.urls == ["https://debuginfod.debian.net", "http://127.0.0.1:8002"]
    assert (c.timeout, c.max_bytes) == (2.0, 1000)
    assert parse_urls("ftp://x http://a/b/") == ["http://a/b"]
    assert c.fetch("../../etc", "debuginfo") is None and c.requests == 0  # not hex
    assert c.fetch(QUALLA, "source") is None and c.requests == 0


def test_without_servers_the_user_frames_stay_unnamed(server):
    before = requests(server.url)
    p, cov = _analysed(None)
    assert _unnamed(p) == (57, 973)  # 57 addresses; every sample has one
    assert (cov[QUALLA_DSO]["status"], cov[QUALLA_DSO]["from"]) == ("missing", "not found")
    assert (cov[LIBC_DSO]["status"], cov[LIBC_DSO]["from"]) == ("missing", "not found")
    assert cov["[kernel.kallsyms]"]["from"] == "kallsyms"
    assert requests(server.url) == before


def test_names_from_the_server_are_perfs_and_cached_per_build_id(server, tmp_path):
    cache = tmp_path / "cache"
    before = requests(server.url)
    client = Client([server.url], cache)
    t0 = time.perf_counter()
    p, cov = _analysed(client)
    cold = time.perf_counter() - t0
    # debuginfo and executable of libc and libqualla; libstdc++ has no build-id in the
    # capture (no sample landed in it), so it is never asked for
    assert client.requests == 4
    assert requests(server.url) == (before[0] + 2, before[1] + 2)
    assert _unnamed(p) == (0, 0)
    truth = load(SPINPOOL / f"{CASE}.truth-script.txt")
    assert _folded(p) == _folded(truth)
    # perf report --no-children --sort sym with the symbol files: every function's self
    samples, entries = truth_report(SPINPOOL / f"{CASE}.truth-report.txt")
    leaves = Counter()
    for stack, n in _folded(p).items():
        leaves[stack.rsplit(";", 1)[-1]] += n
    assert samples == sum(leaves.values()) == 973
    assert {name: round(100 * n / samples, 2) for name, n in leaves.items()} == entries
    assert entries["pthread_mutex_lock@@GLIBC_2.2.5"] == 14.80
    for dso, bid in ((QUALLA_DSO, QUALLA), (LIBC_DSO, LIBC)):
        c = cov[dso]
        assert (c["status"], c["resolved"]) == ("resolved", 1.0)
        assert c["from"] == f"debuginfod {server.url}"
        assert c["source"] == f"{server.url}/buildid/{bid}/debuginfo"
        folder = cache / "debuginfod-client" / bid[:2] / bid
        assert sorted(f.name for f in folder.iterdir()) == \
            ["debuginfo", "debuginfo.json", "executable", "executable.json"]
        meta = json.loads((folder / "debuginfo.json").read_text())
        assert meta["server"] == server.url and meta["size"] == \
            (folder / "debuginfo").stat().st_size
    qualla_debug = zipfile.ZipFile(SPINPOOL / "symbols-1.0.0.zip").read("libqualla.so.debug")
    assert (cache / "debuginfod-client" / QUALLA[:2] / QUALLA / "debuginfo").read_bytes() \
        == qualla_debug
    assert cov["/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"]["from"] == "not found"
    assert "debuginfod servers" not in \
        cov["/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"]["reason"]  # never asked

    # again, as the next analysis on this worker: from the cache, the server not asked
    asked = requests(server.url)
    again = Client([server.url], cache)
    t0 = time.perf_counter()
    p2, cov2 = _analysed(again)
    warm = time.perf_counter() - t0
    assert again.requests == 0 and requests(server.url) == asked
    assert _folded(p2) == _folded(truth)
    assert cov2[QUALLA_DSO]["from"] == f"debuginfod {server.url}"
    print(f"analysis with 4 files fetched: {cold:.2f} s; from the cache: {warm:.2f} s")


def test_the_command_line_asks_only_with_debuginfod(server, tmp_path):
    """`python -m analysis report --debuginfod`: the same names; without the flag the
    variable alone asks nothing (the CLI runs offline unless told)."""
    env = {"PATH": "/usr/bin:/bin", "PERFWEB_CACHE_DIR": str(tmp_path),
           "DEBUGINFOD_URLS": server.url}
    args = [sys.executable, "-m", "analysis", "report", SPINPOOL / f"{CASE}.perf.data",
            "--symbols", KERNEL, "--format", "folded", "--convention", "inferno",
            "--weight", "samples", "--no-inline"]
    before = requests(server.url)
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert "qualla::" not in r.stdout and requests(server.url) == before
    r = subprocess.run(args + ["--debuginfod"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    truth = _folded(load(SPINPOOL / f"{CASE}.truth-script.txt"))
    assert r.stdout == "".join(f"{k} {truth[k]}\n" for k in sorted(truth))
    assert requests(server.url) == (before[0] + 2, before[1] + 2)
    assert (tmp_path / "debuginfod-client" / QUALLA[:2] / QUALLA / "debuginfo").is_file()
    r = subprocess.run(args + ["--debuginfod"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={**env, "DEBUGINFOD_URLS": ""})
    assert r.returncode == 2
    assert r.stderr == ("error: --debuginfod asks the servers in DEBUGINFOD_URLS, which "
                        "names none (set it to URLs separated by spaces)\n")


def test_dwarf_stacks_unwound_with_the_binaries_from_the_server(server, tmp_path):
    """A --call-graph dwarf capture (the C++ pool, 441 samples) uploaded with only its
    vDSO: the unwinder gets pool, libwork.so, libc and libstdc++ from the server and
    every stack equals perf's own unwinding, frame for frame."""
    from test_dwarf_unwinding import our_stacks, perf_stacks
    capture = DWARF / "cpp-pool" / "dwarf8k.perf.data"
    vdso = DWARF / "system-libs" / "vdso-e95baaeaec8534edc5df3654182ddf12b19d9b23.so"
    theirs = perf_stacks(capture.with_name(capture.name + ".script-fields-noinline.txt.gz"))
    p = load(capture)
    symbolize(p, [vdso])
    cut = our_stacks(p)  # not unwound: the sampled frame alone, 443 frames of perf's 4,519
    assert sum(a == b for a, b in zip(cut, theirs)) == 0
    assert (sum(len(f) for _, f in cut), sum(len(f) for _, f in theirs)) == (443, 4519)
    before = requests(server.url)
    client = Client([server.url], tmp_path)
    p = load(capture)
    cov = {c["dso"]: c for c in symbolize(p, [vdso], debuginfod=client)}
    ours = our_stacks(p)
    assert len(ours) == len(theirs) == 441
    assert sum(a == b for a, b in zip(ours, theirs)) == 441
    # debuginfo and executable of pool, libwork.so, libc; libstdc++'s executable only
    # (the server has no debug file of it: one 404)
    assert requests(server.url) == (before[0] + 4, before[1] + 4)
    for dso, c in cov.items():
        if dso.endswith(("/pool", "/libwork.so", "/libc.so.6", "/libstdc++.so.6.0.30")):
            assert c["from"] == f"debuginfod {server.url}", dso
    assert cov["[vdso]"]["from"] == "uploaded"


def test_a_miss_is_remembered_briefly(server, tmp_path):
    client = Client([server.url], tmp_path)
    nobody = "00" * 19 + "ff"
    before = requests(server.url)
    assert client.fetch(nobody, "debuginfo") is None
    assert client.fetch(nobody, "debuginfo") is None  # remembered
    assert requests(server.url)[0] == before[0] + 1 and client.requests == 1
    marker, = (tmp_path / "debuginfod-client" / "00" / nobody).glob("debuginfo.missing-*")
    old = time.time() - client.miss_ttl - 1
    os.utime(marker, (old, old))
    assert client.fetch(nobody, "debuginfo") is None  # expired: asked again
    assert requests(server.url)[0] == before[0] + 2
    # a 404 is no error worth a note
    assert client.notes == []


# ---- a bad server ----------------------------------------------------------------------
_OTHER_ELF = (FIXTURES / "perfdata" / "bin" / "pw-dlopen").read_bytes()
CAP = 8 << 20  # above libc's debug file (the biggest served), below what the stub sends


class _Hostile(http.server.BaseHTTPRequestHandler):
    """Answers each file of the capture's two build-ids in a way that must not be used."""
    protocol_version = "HTTP/1.0"  # bodies end when the connection closes
    hits: list = []

    def do_GET(self):
        self.hits.append(self.path)
        body, headers = b"", {}
        if self.path == f"/buildid/{QUALLA}/debuginfo":
            body = b"<html>not a debug file</html>\n" * 50
        elif self.path == f"/buildid/{QUALLA}/executable":
            body = _OTHER_ELF  # an ELF, of another build
        elif self.path == f"/buildid/{LIBC}/debuginfo":
            body, headers = b"\x7fELF", {"Content-Length": str(1 << 40)}
        elif self.path == f"/buildid/{LIBC}/executable":
            self.send_response(200)
            self.end_headers()  # no length: an ELF header, then more than the cap
            self.wfile.write(b"\x7fELF" + b"\0" * 1020)
            for _ in range(CAP // (1 << 20) + 1):
                try:
                    self.wfile.write(b"\0" * (1 << 20))
                except OSError:
                    return  # the client hung up at the cap
            return
        elif self.path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()
            return
        elif self.path.startswith("/garbage/"):
            self.wfile.write(b"HELLO THERE\r\n\r\n")
            return
        elif self.path.startswith("/short/"):
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"\x7fELF" + b"\0" * 100)
            return
        elif self.path.startswith(("/drip/", "/driphead/")):
            # a byte every 0.2 s: each read is well within the timeout, the whole not
            head = b"HTTP/1.0 200 OK\r\n\r\n"
            body = head + b"\x7fELF" + b"\0" * 60 if self.path.startswith("/driphead/") \
                else b"\x7fELF" + b"\0" * 60
            if self.path.startswith("/drip/"):
                self.wfile.write(head)
            for i in range(len(body)):
                try:
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                except OSError:
                    return  # the client hung up
                time.sleep(0.2)
            return
        elif self.path.startswith("/slow/"):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"\x7fELF")
            self.wfile.flush()
            time.sleep(2)
            return
        else:
            self.send_error(404)
            return
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hostile():
    with serving(_Hostile) as url:
        yield url


def test_a_bad_servers_answers_are_not_used(hostile, server, tmp_path):
    _Hostile.hits.clear()
    cache = tmp_path / "cache"
    alone = Client([hostile], cache, max_bytes=CAP)
    p, cov = _analysed(alone)
    assert sorted(_Hostile.hits) == sorted(f"/buildid/{b}/{k}" for b in (LIBC, QUALLA)
                                           for k in ("debuginfo", "executable"))
    assert _unnamed(p) == (57, 973)  # as with no server at all
    assert cov[QUALLA_DSO]["from"] == cov[LIBC_DSO]["from"] == "not found"
    assert f"the debuginfod servers ({hostile}) have none" in cov[QUALLA_DSO]["reason"]
    why = {n.split(": ", 2)[1]: n.split(": ", 2)[2] for n in p.notes
           if n.startswith(f"debuginfod {hostile}")}
    assert why == {
        f"{QUALLA}/debuginfo": "not an ELF file; not used",
        f"{QUALLA}/executable": "its build-id is "  # pw-dlopen's
                                "f7142a817a82108888864f43a07f0a3580870906; not used",
        f"{LIBC}/debuginfo": f"{1 << 40} bytes, over the {CAP} byte cap; not used",
        f"{LIBC}/executable": f"over the {CAP} byte cap; not used",
    }
    # nothing of it kept but the misses, and no partial file left behind
    kept = sorted(str(f.relative_to(cache)) for f in cache.rglob("*") if f.is_file())
    assert [k.rsplit("/", 1)[-1].split("-")[0] for k in kept] == \
        ["debuginfo.missing", "executable.missing"] * 2

    # the bad server first, the good one after it: every file from the good one
    _Hostile.hits.clear()
    both = Client([hostile, server.url], tmp_path / "cache2", max_bytes=CAP)
    p, cov = _analysed(both)
    assert len(_Hostile.hits) == 4 and both.requests == 8
    assert _unnamed(p) == (0, 0)
    assert _folded(p) == _folded(load(SPINPOOL / f"{CASE}.truth-script.txt"))
    assert cov[QUALLA_DSO]["from"] == cov[LIBC_DSO]["from"] == f"debuginfod {server.url}"


def test_a_cache_folder_that_cannot_be_written_fails_nothing(server, tmp_path):
    (tmp_path / "cache").write_text("a file where the folder should be")
    p, cov = _analysed(Client([server.url], tmp_path / "cache"))
    assert _unnamed(p) == (57, 973) and cov[QUALLA_DSO]["from"] == "not found"
    assert sum("not fetched (" in n for n in p.notes) == 4  # 2 build-ids, 2 kinds


def test_a_dead_server_costs_one_timeout(server, tmp_path):
    """A server that accepts connections and never answers, first in the list: one
    timeout, then only the good server is asked."""
    import socket
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        dead = f"http://127.0.0.1:{hole.getsockname()[1]}"
        client = Client([dead, server.url], tmp_path, timeout=0.3)
        t0 = time.perf_counter()
        p, cov = _analysed(client)
        took = time.perf_counter() - t0
    assert client.requests == 5 and client.down == {dead}
    assert [n for n in p.notes if "not reachable" in n] == \
        [f"debuginfod {dead}: not reachable (timed out); not asked again this time"]
    assert _unnamed(p) == (0, 0)
    assert cov[QUALLA_DSO]["from"] == f"debuginfod {server.url}"
    assert took < 3


def test_redirects_and_stalls(hostile, tmp_path):
    client = Client([f"{hostile}/redirect"], tmp_path, timeout=0.5)
    assert client.fetch(QUALLA, "debuginfo") is None
    assert client.notes == [f"debuginfod {hostile}/redirect/buildid/{QUALLA}/debuginfo: "
                            f"HTTP 302"]
    slow = Client([f"{hostile}/slow"], tmp_path, timeout=0.5)
    t0 = time.perf_counter()
    assert slow.fetch(QUALLA, "debuginfo") is None
    assert time.perf_counter() - t0 < 1.5
    assert slow.notes == [f"debuginfod {hostile}/slow: {QUALLA}/debuginfo: transfer broke "
                          f"off (TimeoutError); not used"]
    garbled = Client([f"{hostile}/garbage"], tmp_path)
    assert garbled.fetch(QUALLA, "debuginfo") is None
    assert garbled.notes == [f"debuginfod {hostile}/garbage: not an HTTP answer "
                             f"(BadStatusLine); not asked again this time"]
    short = Client([f"{hostile}/short"], tmp_path)
    assert short.fetch(QUALLA, "debuginfo") is None
    assert short.notes == [f"debuginfod {hostile}/short: {QUALLA}/debuginfo: cut short "
                           f"(104 of 100000 bytes); not used"]
    assert not any(f.name == "debuginfo" for f in tmp_path.rglob("*"))


def test_a_dripping_server_is_cut_at_max_time_and_not_asked_again(hostile, tmp_path):
    """A server dripping a byte every 0.2 s (each read well within the 5 s timeout),
    DEBUGINFOD_MAXTIME 1 s: the socket is shut at 1 s, whether the body or the status
    line drips; nothing kept (not even a miss: the next analysis asks again), and the
    server not asked again by that client (the analysis)."""
    for where in ("drip", "driphead"):
        _Hostile.hits.clear()
        client = Client([f"{hostile}/{where}"], tmp_path / where, max_time=1)
        t0 = time.perf_counter()
        assert client.fetch(QUALLA, "debuginfo") is None
        took = time.perf_counter() - t0
        assert 1 <= took < 2, (where, took)
        assert client.notes == [f"debuginfod {hostile}/{where}: {QUALLA}/debuginfo: took "
                                f"longer than 1 s (DEBUGINFOD_MAXTIME); not used, not "
                                f"asked again this time"]
        assert client.down == {f"{hostile}/{where}"}
        assert client.fetch(LIBC, "debuginfo") is None  # not asked: down
        assert client.fetch(QUALLA, "executable") is None
        assert client.requests == 1 and _Hostile.hits == [f"/{where}/buildid/{QUALLA}/debuginfo"]
        assert [f for f in tmp_path.joinpath(where).rglob("*") if f.is_file()] == []


def test_the_cache_and_each_analysis_are_bounded(server, tmp_path):
    """PERFWEB_DEBUGINFOD_CACHE_BYTES: past it the least recently used files go, never
    one the analysis uses; PERFWEB_DEBUGINFOD_ANALYSIS_BYTES: past it one analysis asks
    nothing more, with a note, and remembers no miss."""
    cache = tmp_path / "cache"
    root = cache / "debuginfod-client"
    first = Client([server.url], cache)
    files = {}
    for bid, kind in ((QUALLA, "debuginfo"), (LIBC, "executable"), (QUALLA, "executable")):
        files[bid, kind] = Path(first.fetch(bid, kind).path)
    size = {k: f.stat().st_size for k, f in files.items()}
    for t, k in enumerate(files):  # used in this order, long ago
        os.utime(files[k], (1000 + t, 1000 + t))
    assert first.requests == 3 and first.downloaded == sum(size.values())

    # the next analysis uses libqualla's executable (a hit) and fetches libc's debug
    # file: the two least recently used go, qualla's debuginfo then libc's executable
    libc_debug = Path(Client([server.url], tmp_path / "side").fetch(LIBC, "debuginfo")
                      .path).stat().st_size
    second = Client([server.url], cache,
                    cache_bytes=size[QUALLA, "executable"] + libc_debug)
    assert second.fetch(QUALLA, "executable").path == str(files[QUALLA, "executable"])
    assert second.requests == 0
    assert Path(second.fetch(LIBC, "debuginfo").path).stat().st_size == libc_debug
    assert sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file()) == \
        sorted(f"{b[:2]}/{b}/{k}{ext}" for b, k in ((QUALLA, "executable"),
                                                    (LIBC, "debuginfo"))
               for ext in ("", ".json"))
    assert not (root / QUALLA[:2] / QUALLA / "debuginfo").exists()
    # what this analysis uses stays, over the bound: qualla's debuginfo fetched again
    assert second.fetch(QUALLA, "debuginfo") is not None and second.requests == 2
    assert len([f for f in root.rglob("*") if f.name in ("debuginfo", "executable")]) == 3

    # an analysis capped just above qualla's debug file: libc's is not fetched
    capped = Client([server.url], tmp_path / "capped",
                    analysis_bytes=size[QUALLA, "debuginfo"] + 10)
    assert capped.fetch(QUALLA, "debuginfo") is not None
    assert capped.fetch(LIBC, "debuginfo") is None
    assert capped.fetch(LIBC, "executable") is None  # not asked at all
    assert capped.requests == 2
    assert capped.notes == [
        f"debuginfod {server.url}: {LIBC}/debuginfo not fetched ({libc_debug} bytes): "
        f"this analysis's downloads are capped at {size[QUALLA, 'debuginfo'] + 10} bytes "
        f"(PERFWEB_DEBUGINFOD_ANALYSIS_BYTES; {size[QUALLA, 'debuginfo']} downloaded); "
        f"nothing more is asked this time"]
    assert not list((tmp_path / "capped").rglob("*.missing-*"))  # no miss remembered
    env = Client.from_env({"DEBUGINFOD_URLS": server.url, "PERFWEB_DEBUGINFOD_CACHE_BYTES":
                           "1000", "PERFWEB_DEBUGINFOD_ANALYSIS_BYTES": "2000"}, tmp_path)
    assert (env.cache_bytes, env.analysis_bytes) == (1000, 2000)
    assert (Client([], tmp_path).cache_bytes, Client([], tmp_path).analysis_bytes) == \
        (10 << 30, 4 << 30)
