"""Rate limits of the explorer's data, transforms, stack chart and exports (issue 33):
six requests with long transform chains or whole stack charts through one share link
held every gunicorn worker, the login page waited 18.9 s. Each share link, each client
address and each signed-in user now has a budget of requests and of seconds of work per
window, counted in Redis (shared by all workers), past which a request gets 429 with
Retry-After and a sentence; while Redis is down nothing is limited and nothing fails."""
import fcntl
import json
import os
import threading
import time
import urllib.error
import urllib.request

import pytest
from django.test import Client, RequestFactory

from perfweb.captures.client_address import client_address, limit_key
from perfweb.captures.models import ShareLink, ShareLinkUse
from perfweb.captures.services.profiles import stored_profile

from .conftest import spinpool, wait_for
from .test_limits_and_faults import _private_redis, _redis_up

pytestmark = pytest.mark.django_db(transaction=True)

UNLIMITED = (0, 0)


@pytest.fixture
def busy(member):
    capture = spinpool(member, "1.0.0", "busy")
    return capture, ShareLink.objects.create(capture=capture, token="r" * 32,
                                             created_by=member)


#: a window of an hour: no test sees its counts start again half way (windows begin on
#: the clock's hours)
HOUR = {"PERFWEB_RATE_WINDOW_S": "3600"}


def _limits(settings, **scopes):
    settings.PERFWEB_RATE_WINDOW_S = 3600
    settings.PERFWEB_RATE_LIMITS = {"link": UNLIMITED, "address": UNLIMITED,
                                    "member": UNLIMITED, **scopes}


def _data(client, link, kind="flame", addr="192.0.2.1", query=""):
    return client.get(f"/s/{link.url_token}/data/{kind}.json{query}", REMOTE_ADDR=addr)


def _is_429(r, who):
    assert r.status_code == 429, r.content[:200]
    assert 1 <= int(r["Retry-After"]) <= 3600
    return who in (r.json()["error"] if r["Content-Type"] == "application/json"
                   else r.content.decode())


def test_a_share_link_past_its_limit_gets_429(settings, busy):
    _limits(settings, link=(5, 0))
    capture, link = busy
    guest = Client()
    # the page and four data requests from two addresses: the link's five
    assert guest.get(f"/s/{link.url_token}/", REMOTE_ADDR="192.0.2.1").status_code == 200
    for k, kind in enumerate(("flame", "functions", "stacks", "threads")):
        assert _data(guest, link, kind, addr=f"192.0.2.{k % 2 + 1}").status_code == 200
    # the sixth, from anyone: JSON for data, the page for the page
    r = _data(guest, link, addr="198.51.100.9")
    assert _is_429(r, "This share link has had too many requests in the last hour")
    assert r.json()["error"].endswith(f"try again in {r['Retry-After']} s.")
    page = guest.get(f"/s/{link.url_token}/", REMOTE_ADDR="198.51.100.9")
    assert _is_429(page, "This share link has had too many requests")
    # another link to the same capture has its own budget; refused requests are no use
    other = ShareLink.objects.create(capture=capture, token="o" * 32)
    assert _data(guest, other, addr="198.51.100.9").status_code == 200
    assert ShareLinkUse.objects.get(link=link).count == 5


def test_an_address_is_limited_across_links(settings, busy):
    """An IPv6 client counts as its /64, and an address refused does not spend the
    link's budget for the others."""
    _limits(settings, link=(6, 0), address=(2, 0))
    capture, link = busy
    other = ShareLink.objects.create(capture=capture, token="o" * 32)
    guest = Client()
    assert _data(guest, link, addr="2001:db8:1:2::1").status_code == 200
    assert _data(guest, other, addr="2001:db8:1:2:ffff::7").status_code == 200
    for _ in range(5):
        assert _is_429(_data(guest, link, addr="2001:db8:1:2::99"),
                       "Your address has made too many requests")
    assert _data(guest, link, addr="2001:db8:1:3::1").status_code == 200
    assert _data(guest, link, addr="192.0.2.8").status_code == 200


def test_a_budget_of_work_stops_costly_requests(settings, busy):
    """One request's time spends a 1 ms budget: the next one is refused for it."""
    _limits(settings, address=(0, 0.001))
    capture, link = busy
    guest = Client()
    assert _data(guest, link, "stacks").status_code == 200
    assert _is_429(_data(guest, link, "flame"),
                   "Your address has made requests needing too much of the server's time")
    assert _data(guest, link, "flame", addr="192.0.2.2").status_code == 200


def test_members_have_a_limit_of_their_own(settings, busy, member, client):
    """The team's URLs: explorer data, export pages and the API's exports and functions
    table count against the signed-in user."""
    _limits(settings, member=(3, 0))
    capture, link = busy
    client.force_login(member)
    assert client.get(f"/captures/{capture.pk}/data/flame.json").status_code == 200
    assert client.get(f"/captures/{capture.pk}/export/pprof/").status_code == 200
    assert client.get(f"/api/v1/captures/{capture.pk}/functions/").status_code == 200
    assert _is_429(client.get(f"/captures/{capture.pk}/data/flame.json?tf=mf-1"),
                   "Your account has made too many requests")
    page = client.get(f"/captures/{capture.pk}/export/speedscope/")
    assert _is_429(page, "Your account has made too many requests")
    assert 'id="rate-limited"' in page.content.decode()
    api = client.get(f"/api/v1/captures/{capture.pk}/export/pprof/")
    assert api.status_code == 429 and "try again in" in api.json()["detail"]
    # a share link is no member's request
    assert _data(Client(), link).status_code == 200


def test_forwarded_for_is_believed_only_from_trusted_proxies(settings):
    rf = RequestFactory()
    req = rf.get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="203.0.113.7, 10.0.0.9")
    assert client_address(req) == "10.0.0.5"  # by default: whoever connected
    settings.PERFWEB_TRUSTED_PROXIES = ["10.0.0.0/8"]
    assert client_address(req) == "203.0.113.7"  # the last hop no proxy of ours wrote
    forged = rf.get("/", REMOTE_ADDR="10.0.0.5",
                    HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.7, 10.0.0.9")
    assert client_address(forged) == "203.0.113.7"  # what the client wrote is not read
    direct = rf.get("/", REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert client_address(direct) == "198.51.100.1"  # not through a proxy of ours
    assert client_address(rf.get("/", REMOTE_ADDR="::ffff:192.0.2.1")) == "192.0.2.1"
    assert limit_key("2001:db8::1") == limit_key("2001:db8::ffff:1") == "2001:db8::/64"


# ---- under gunicorn ------------------------------------------------------------------
def _fetch(url, timeout=60):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            r.read()
            return r.status, None, time.monotonic() - t0
    except urllib.error.HTTPError as e:
        body = e.read()
        return e.code, (e.headers.get("Retry-After"), body), time.monotonic() - t0


def _at_once(urls, meanwhile=None):
    """Each URL's (status, refusal, seconds), all asked at once from threads, and
    `meanwhile`'s, asked once they are sent."""
    results = [None] * len(urls)

    def get(i):
        results[i] = _fetch(urls[i])
    threads = [threading.Thread(target=get, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    other = _fetch(meanwhile) if meanwhile else None
    for t in threads:
        t.join()
    return results, other


def _heavy_queries(capture):
    """Twelve transforms (the most allowed) of the capture's functions, and whole stack
    charts at their finest resolution, all different."""
    profile = stored_profile(capture)
    fids = [f.id for f in profile.functions][:40]
    chains = [".".join(f"{k}-{fids[(i * 3 + n) % len(fids)]}" for i, k in
                       enumerate(["mf", "rec", "cr", "mf", "rec", "mf"] * 2))
              for n in range(3)]
    tids = ",".join(str(t) for t in sorted(set(profile.s_tid)))
    return [f"flame.json?tf={c}" for c in chains] + \
        [f"stacks.json?tids={tids}&px=1e-12&tf={c}" for c in chains]


def test_six_heavy_requests_at_once_under_gunicorn(busy, server_factory):
    """Six heavy requests at once through one share link, against 3 workers: the
    link's limit (3 an hour here) lets 3 through, the others get 429 at once, counted
    in Redis across the workers (each worker counting alone would let all six through),
    and the login page answers meanwhile. (No compute slots here: their test is next.)"""
    capture, link = busy
    base = server_factory(workers=3, extra_env={"PERFWEB_RATE_LINK_REQUESTS": "3",
                                                "PERFWEB_COMPUTE_SLOTS": "0", **HOUR})
    _at_once([f"{base}/login/"] * 6)  # (a worker's first page imports what it serves)
    urls = [f"{base}/s/{link.url_token}/data/{q}" for q in _heavy_queries(capture)]
    results, login = _at_once(urls, meanwhile=f"{base}/login/")
    statuses = sorted(s for s, _, _ in results)
    assert statuses == [200] * 3 + [429] * 3, results
    for status, refusal, _ in results:
        if status == 429:
            retry_after, body = refusal
            assert 1 <= int(retry_after) <= 3600
            assert "This share link has had too many requests" in json.loads(body)["error"]
    assert login[0] == 200 and login[2] < 2.0, login


def test_limits_fail_open_while_redis_is_down(busy, server_factory, tmp_path):
    """gunicorn on a private Redis that is killed: the share link's requests answer 200
    past the limit (and a line says the limits are not counted), none is a 500; with
    Redis back, the limit holds again."""
    import socket
    capture, link = busy
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    redis_proc = _private_redis(port, tmp_path)
    try:
        wait_for(lambda: _redis_up(port), timeout=20)
        base = server_factory(workers=1, extra_env={
            "REDIS_URL": f"redis://127.0.0.1:{port}/0", "PERFWEB_RATE_LINK_REQUESTS": "2", **HOUR})
        url = f"{base}/s/{link.url_token}/data/threads.json"
        assert [_fetch(url)[0] for _ in range(3)] == [200, 200, 429]
        redis_proc.kill()
        redis_proc.wait()
        down = [_fetch(url) for _ in range(4)]
        assert [s for s, _, _ in down] == [200] * 4
        assert all(took < 5 for _, _, took in down), down
        assert _fetch(f"{base}/s/{link.url_token}/")[0] == 200
        redis_proc = _private_redis(port, tmp_path)
        wait_for(lambda: _redis_up(port), timeout=20)
        time.sleep(5.5)  # the process asks the cache again 5 s after it failed
        assert [_fetch(url)[0] for _ in range(3)] == [200, 200, 429]
    finally:
        redis_proc.kill()
        redis_proc.wait()
    log = "".join(p.read_text() for p in tmp_path.glob("gunicorn-*.log"))
    assert "rate limits not counted" in log and "Traceback" not in log


class _Slots:
    """The host's compute slots, taken by this test's process as a request would."""
    def __init__(self, folder, n):
        self.fds = []
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            fd = os.open(folder / str(i), os.O_RDWR | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.fds.append(fd)

    def release(self, n=None):
        for fd in self.fds[:n]:
            os.close(fd)
        self.fds = self.fds[len(self.fds[:n]):]


def test_no_slot_free_is_a_429_that_counts_nowhere(settings, busy, member, tmp_path):
    settings.PERFWEB_COMPUTE_SLOTS = 2
    settings.PERFWEB_COMPUTE_SLOTS_DIR = str(tmp_path / "slots")
    _limits(settings, link=(2, 0))
    capture, link = busy
    taken = _Slots(tmp_path / "slots", 2)
    guest = Client()
    for _ in range(3):
        r = _data(guest, link)
        assert r.status_code == 429 and r["Retry-After"] == "1"
        assert r.json()["error"] == ("The server is busy with other requests of the "
                                     "explorer; try again in 1 s.")
    # the page itself computes nothing: it is served
    assert guest.get(f"/s/{link.url_token}/", REMOTE_ADDR="192.0.2.1").status_code == 200
    owner = Client()
    owner.force_login(member)
    page = owner.get(f"/captures/{capture.pk}/export/pprof/")
    assert page.status_code == 429 and b"The server is busy" in page.content
    taken.release(1)
    # the refused ones counted nowhere: the link's one other request of its two
    assert _data(guest, link).status_code == 200
    assert _is_429(_data(guest, link), "This share link has had too many requests")
    taken.release()


def test_compute_slots_leave_workers_for_other_pages(busy, server_factory, tmp_path):
    """gunicorn with 3 workers and 2 compute slots, both held (as two long requests
    would hold them): the six heavy requests get 429 at once, and the login page
    answers; with a slot free again, a heavy request is served."""
    capture, link = busy
    slots = tmp_path / "slots"
    taken = _Slots(slots, 2)
    base = server_factory(workers=3, extra_env={"PERFWEB_COMPUTE_SLOTS": "2",
                                                "PERFWEB_COMPUTE_SLOTS_DIR": str(slots)})
    urls = [f"{base}/s/{link.url_token}/data/{q}" for q in _heavy_queries(capture)]
    results, login = _at_once(urls, meanwhile=f"{base}/login/")
    assert [(s, r[0]) for s, r, _ in results] == [(429, "1")] * 6, results
    assert login[0] == 200 and login[2] < 2.0, login
    taken.release(1)
    assert _fetch(urls[0])[0] == 200
    taken.release()
