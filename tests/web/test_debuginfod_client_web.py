"""The worker as a debuginfod client, seen on the capture page: the analysis of an
upload with no symbol files (services.run_analysis, what the Celery task runs) asks the
servers of DEBUGINFOD_URLS, here Debian's debuginfod on loopback (tests/debuginfod_server.py),
and the symbol coverage table says where each DSO's names came from."""
import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from debuginfod_server import Server, requests
from perfweb.captures import services
from perfweb.captures.models import Capture, Team
from perfweb.captures.uploads import store_upload

from .conftest import SPINPOOL

pytestmark = pytest.mark.django_db(transaction=True)

QUALLA = "/opt/qualla-1.0.0/bin/libqualla.so"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
STDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("debuginfod"))
    yield s
    s.stop()


def _analysed(user, version, symbols=()):
    capture, _ = store_upload(user, Team.objects.get(name="inference"), {
        "service": "llm-api", "version": version, "label": "busy",
        "symbols_for_build": True,
        "capture": SimpleUploadedFile("1.0.0-busy.perf.data",
                                      (SPINPOOL / "1.0.0-busy.perf.data").read_bytes()),
        "symbols": [SimpleUploadedFile(s, (SPINPOOL / s).read_bytes()) for s in symbols]})
    assert services.run_analysis(capture.pk) == "done"
    return Capture.objects.get(pk=capture.pk)


def _coverage(client, capture) -> dict[str, dict[str, str]] | None:
    """The table's rows by DSO, each by column title; None when there is no table."""
    page = client.get(capture.get_absolute_url())
    assert page.status_code == 200
    section = page.content.decode().split("<h2>Symbol coverage</h2>", 1)[1]
    section = section.split("</section>", 1)[0]
    if "<table>" not in section:
        assert "No symbol files were given" in section
        return None
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", section)]
    assert heads == ["DSO", "Samples", "Named", "Status", "Build-id", "File", "From",
                     "What would help"]
    rows = {}
    for row in re.findall(r"<tr class=\"coverage-[^\"]*\">(.*?)</tr>", section, re.S):
        cells = [html.unescape(re.sub(r"<br>", "\n", re.sub(r"<(?!br>)[^>]+>", "", c)))
                 for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = dict(zip(heads, cells))
    return rows


def _functions(client, capture) -> set[str]:
    r = client.get(reverse("data-functions", args=[capture.pk]))
    return {f["n"] for f in r.json()["functions"]}


def test_the_coverage_table_says_where_the_names_came_from(client, member, server,
                                                            settings, tmp_path):
    settings.PERFWEB_CACHE_DIR = str(tmp_path / "worker-cache")
    client.force_login(member)
    asked = requests(server.url)

    # off (settings_test: DEBUGINFOD_URLS empty): nothing asked, the user code unnamed
    off = _analysed(member, "off")
    assert _coverage(client, off) is None  # "No symbol files were given"
    assert "qualla::ThreadPool::loop" not in _functions(client, off)
    assert requests(server.url) == asked
    assert not (tmp_path / "worker-cache" / "debuginfod-client").exists()

    # on: libc and libqualla from the server, named as perf names them
    settings.DEBUGINFOD_URLS = server.url
    on = _analysed(member, "on")
    rows = _coverage(client, on)
    for dso in (QUALLA, LIBC):
        assert rows[dso]["Named"] == "100%" and rows[dso]["Status"] == "resolved"
        assert rows[dso]["File"] == "debuginfo"
        assert rows[dso]["From"] == f"debuginfod {server.url}"
    assert rows[STDCXX]["From"] == "not found"  # no build-id in the capture: not asked
    assert rows["[kernel.kallsyms]"]["From"] == "not found"  # no kallsyms uploaded
    assert {"qualla::ThreadPool::loop", "pthread_mutex_lock@@GLIBC_2.2.5",
            "__GI___pthread_mutex_unlock_usercnt"} <= _functions(client, on)
    assert requests(server.url) == (asked[0] + 2, asked[1] + 2)

    # the build's own bundle and kallsyms uploaded: those are used; libc (in no upload)
    # from the worker's cache, the server not asked again
    mixed = _analysed(member, "mixed", ["symbols-1.0.0.zip", "kernel-symbols.zip"])
    rows = _coverage(client, mixed)
    assert rows[QUALLA]["From"] == "uploaded"
    assert rows[QUALLA]["File"] == "symbols-1.0.0.zip\nlibqualla.so.debug"
    assert rows[LIBC]["From"] == f"debuginfod {server.url}"
    assert rows["[kernel.kallsyms]"]["From"] == "kallsyms"
    assert rows[QUALLA]["Named"] == rows[LIBC]["Named"] == "100%"
    assert requests(server.url) == (asked[0] + 2, asked[1] + 2)
