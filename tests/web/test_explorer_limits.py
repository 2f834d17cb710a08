"""The explorer's data stays cheap whatever a request or a capture holds (issue 12).

A search is what anyone with a share link can type: a backtracking pattern held every
gunicorn worker for minutes. A capture is what anyone on the team can upload: a stack of
5,000 frames broke every tree view with RecursionError, one of millions took gigabytes.
"""
import gzip
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from analysis import explore
from analysis.profile_size import approx_bytes
from perfweb.captures import services
from perfweb.captures.services import profiles
from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import Capture, Membership, ShareLink, Team
from perfweb.captures.uploads import store_upload

from .conftest import SPINPOOL

pytestmark = pytest.mark.django_db(transaction=True)

#: the probe's patterns (`%23` is `#`): 2^22 ways to try each name under Python's re
PROBES = ["^(.|.)*#", "^(.|.){0,22}#", "^(.|.){0,40}#"]


def _file(path, name=None, data=None):
    return SimpleUploadedFile(name or path.name,
                              data if data is not None else path.read_bytes())


def _analyzed(user, team, capture, version, symbols=(), label="idle"):
    c, _ = store_upload(user, team, {
        "service": "llm-api", "version": version, "label": label, "capture": capture,
        "symbols": list(symbols), "symbols_for_build": True})
    services.run_analysis(c.pk)
    c = Capture.objects.get(pk=c.pk)
    assert c.status == "done", c.error
    return c


@pytest.fixture
def team(django_user_model):
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    t = Team.objects.create(name="inference")
    Membership.objects.create(team=t, user=alice)
    return alice, t


@pytest.fixture
def spinpool(team):
    """The demo's idle capture with its symbols, and a share link to it."""
    alice, t = team
    c = _analyzed(alice, t, _file(SPINPOOL / "1.0.0-idle.perf.data"), "1.0.0",
                  [_file(SPINPOOL / "symbols-1.0.0.zip"),
                   _file(SPINPOOL / "1.0.0-idle.perf.data.tar.bz2")])
    link = ShareLink.objects.create(capture=c, token="s" * 32, created_by=alice)
    return c, link


def _flame_urls(capture, link, query):
    q = urllib.parse.urlencode(query)
    return {"team": f"/captures/{capture.pk}/data/flame.json?{q}",
            "share": f"/s/{link.url_token}/data/flame.json?{q}"}


def test_probe_searches_answer_at_once_on_both_urls(client, team, spinpool):
    capture, link = spinpool
    client.force_login(team[0])
    for pattern in PROBES:
        for kind, url in _flame_urls(capture, link, {"search": pattern}).items():
            t0 = time.perf_counter()
            r = client.get(url)
            took = time.perf_counter() - t0
            assert r.status_code == 200, (kind, r.content)
            assert took < 1.0, (kind, pattern, took)
            assert r.json()["search"] == {"pattern": pattern, "samples": 0, "share": 0.0,
                                          "functions": []}
    # text that is no regex, a regex, and what RE2 cannot run: a 400 saying why, in JSON
    for query, status, check in [
            ({"search": "libstdc++"}, 200, lambda d: d["search"]["samples"] == 975),
            # 386 under __x64_sys_futex, 68 more in glibc's inlined futex_wait
            ({"search": "futex"}, 200, lambda d: d["search"]["samples"] == 454),
            ({"search": r"Pool::lo+p$"}, 200, lambda d: d["search"]["samples"] == 52),
            ({"search": r"(\w)\1"}, 400, lambda d: "backreferences" in d["error"]),
            ({"search": "(?<=qualla)x"}, 400, lambda d: "lookaround" in d["error"]),
            ({"search": "a" * 201}, 400, lambda d: "at most 200" in d["error"])]:
        for kind, url in _flame_urls(capture, link, query).items():
            r = client.get(url)
            assert r.status_code == status and r["Content-Type"] == "application/json", \
                (kind, query, r.content)
            assert check(r.json()), (kind, query, r.json())


def _get(url, cookie=None, timeout=30):
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status = r.status
            r.read()
    except urllib.error.HTTPError as e:
        status = e.code
    return status, time.monotonic() - t0


def test_probes_do_not_stall_gunicorn(client, team, spinpool, server_factory):
    """Three probes at once used to hold all three sync workers for two minutes; now
    they and the requests behind them are answered within a second or so."""
    capture, link = spinpool
    base = server_factory(workers=3)
    client.force_login(team[0])
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    urls = [(base + u, cookie if kind == "team" else None)
            for p in PROBES for kind, u in _flame_urls(capture, link, {"search": p}).items()]
    results = [None] * len(urls)

    def fetch(i):
        results[i] = _get(*urls[i])
    t0 = time.monotonic()
    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s for s, _ in results] == [200] * len(urls), results
    after = _get(f"{base}/s/{link.url_token}/data/flame.json")
    assert after[0] == 200
    assert time.monotonic() - t0 < 3.0, (results, after)


# ---- deep stacks -----------------------------------------------------------------------
def _deep_folded(frames):
    return ("main;work 2\n" + "main;" + "recurse;" * frames + "leaf 1\n").encode()


def _deep_script(frames):
    """perf script text: a sample through leaf, `frames` x recurse and main; 2 through
    main;work (frames leaf first, as perf prints them)."""
    deep = ["\t401000 leaf+0x10 (/usr/bin/deep)"] + \
        ["\t401136 recurse+0x16 (/usr/bin/deep)"] * frames + \
        ["\t401500 main+0x5 (/usr/bin/deep)"]
    deep = "\n".join(deep) + "\n\n"
    shallow = "\t401600 work+0x10 (/usr/bin/deep)\n\t401500 main+0x5 (/usr/bin/deep)\n\n"
    head = "deep 100/100 [000] 1.{:06d}: 1 cycles:\n"
    return "".join([head.format(i) + shallow for i in range(2)] +
                   [head.format(10) + deep]).encode()


def _gunicorn_workers(base):
    """Pids of the gunicorn workers serving `base` (children of the master bound to it)."""
    bind = base.removeprefix("http://").encode()
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if bind in f.read():
                        with open(f"/proc/{d}/stat") as st:
                            procs[int(d)] = int(st.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    return [pid for pid, parent in procs.items() if parent in procs]


def _vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("fmt", ["folded", "perf-script"])
def test_deep_stacks_answer_with_bounded_memory(client, team, server_factory, fmt):
    """Captures of a 5,000- and a 2,000,000-frame stack (3 samples: 1 through the deep
    stack, 2 through main;work): flame data, both call trees, a focus, the comparison
    page and the API's comparison answer 200 with the right totals from a web worker
    that stays small (it reached 2.4 GB on 5.2 million frames)."""
    alice, t = team
    make = _deep_folded if fmt == "folded" else _deep_script
    caps = {}
    for version, frames in (("1.0.0", 5000), ("2.0.0", 2_000_000)):
        data = gzip.compress(make(frames), 1)
        caps[frames] = _analyzed(alice, t, _file(None, f"deep{frames}.{fmt}.gz", data),
                                 version, label="deep")
    small, big = caps[5000], caps[2_000_000]
    assert any("[truncated: N frames]" in n for n in big.latest_result().report["notes"])
    link = ShareLink.objects.create(capture=big, token="d" * 32, created_by=alice)
    key = create_token(alice, "t")
    base = server_factory(workers=1)
    client.force_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    (worker,) = _gunicorn_workers(base)

    def get_json(path, auth=cookie, headers=None):
        req = urllib.request.Request(base + path, headers={"Cookie": auth, **(headers or {})})
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200
            return json.load(r)
    for c in (small, big):
        for path in (f"/captures/{c.pk}/data/flame.json",
                     f"/captures/{c.pk}/data/flame.json?invert=1"):
            data = get_json(path)
            nodes = data["tree"]["nodes"]
            assert data["total"] == nodes[0]["t"] == 3
            kids = {n["n"]: n["t"] for n in nodes if n["p"] == 0}
            if "invert" in path:
                assert kids == {"leaf": 1, "work": 2}
            elif c is small:
                assert kids == {"main": 3}
            else:  # the root side was cut: main is among the 1,344,642 frames cut
                assert kids == {"main": 2, "[truncated: 1344642 frames]": 1}
            deeper = [n for n in nodes if n["n"].startswith("[deeper frames")]
            assert [n["t"] for n in deeper] == [1]  # below the 1,000th level
        recurse = next(n["f"] for n in get_json(f"/captures/{c.pk}/data/flame.json")
                       ["tree"]["nodes"] if n["n"] == "recurse")
        focus = get_json(f"/captures/{c.pk}/data/flame.json?focus={recurse}")
        assert focus["callers"]["nodes"][0]["t"] == focus["callees"]["nodes"][0]["t"] == 1
    shared = get_json(f"/s/{link.url_token}/data/flame.json", auth="")
    assert shared["tree"]["nodes"][0]["t"] == 3
    page = urllib.request.urlopen(urllib.request.Request(
        f"{base}/compare/{small.pk}/{big.pk}/", headers={"Cookie": cookie}), timeout=60)
    assert page.status == 200 and b'id="diff-tree"' in page.read()
    cmp = get_json(f"/api/v1/captures/{big.pk}/compare/?with={small.pk}&tree=1", auth="",
                   headers={"Authorization": f"Token {key}"})
    tree = cmp["tree"]
    assert (tree["a"], tree["b"]) == (3, 3)
    assert {n["n"]: (n["a"], n["b"]) for n in tree["nodes"] if n["p"] == 0} == \
        {"main": (3, 2), "[truncated: 1344642 frames]": (0, 1)}
    assert cmp["samples_before"] == cmp["samples_after"] == 3
    assert _vm_hwm_mib(worker) < 200  # peak resident memory of the web worker (98 MiB)


def test_the_profile_cache_is_bounded_by_bytes(team, spinpool, settings):
    """The web process kept 8 profiles whatever their size; now what fits its budget of
    bytes, and a profile larger than the whole budget is served without being kept."""
    alice, t = team
    idle = spinpool[0].latest_result()
    busy = _analyzed(alice, t, _file(SPINPOOL / "1.0.0-busy.truth-script.txt"), "1.0.1",
                     label="busy").latest_result()
    size = approx_bytes(profiles.result_profile(idle))
    settings.PERFWEB_PROFILE_CACHE_BYTES = int(size * 1.5)  # room for one of them
    first = profiles.result_profile(idle)
    assert profiles.result_profile(idle) is first  # kept
    profiles.result_profile(busy)
    assert profiles.cached_bytes() <= settings.PERFWEB_PROFILE_CACHE_BYTES
    again = profiles.result_profile(idle)
    assert again is not first  # pushed out by the other one, loaded again
    assert explore.flame(again, explore.Query()) == explore.flame(first, explore.Query())
    settings.PERFWEB_PROFILE_CACHE_BYTES = size // 2  # smaller than the profile
    assert profiles.result_profile(idle) is not profiles.result_profile(idle)
    assert profiles.cached_bytes() <= size // 2
