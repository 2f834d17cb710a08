"""A refused upload (too large, over the quota) keeps nothing: no team, service, build,
capture, symbol file or stored file; and its message gives exact sizes, since a file one
byte over a 2 GiB limit and the limit itself both read "2.0 GiB" rounded."""
import pytest
from django.core.files import File
from django.urls import reverse

from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import (Build, Capture, Membership, Service, SymbolFile,
                                     Team)
from perfweb.captures.uploads import UploadTooLarge, check_size

from .conftest import SPINPOOL

pytestmark = pytest.mark.django_db

BUSY = SPINPOOL / "1.1.0-busy.perf.data"  # 18,836 bytes
IDLE = SPINPOOL / "1.1.0-idle.perf.data"  # 6,408 bytes
SYMBOLS = SPINPOOL / "symbols-1.1.0.zip"  # 84,872 bytes


def rows() -> dict:
    return {m.__name__: m.objects.count()
            for m in (Team, Membership, Service, Build, Capture, SymbolFile)}


def stored_files(settings) -> list:
    from pathlib import Path
    media = Path(settings.MEDIA_ROOT)
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()) \
        if media.exists() else []


def _form(client, path, symbols=None, service="refused"):
    files = [open(path, "rb")] + ([open(symbols, "rb")] if symbols else [])
    try:
        data = {"service": service, "version": "9.9", "capture": files[0],
                "symbols": files[1:], "symbols_for_build": "on"}
        return client.post(reverse("upload"), data, HTTP_ACCEPT="application/json")
    finally:
        for f in files:
            f.close()


def _api(client, key, path, symbols=None, service="refused"):
    files = [open(path, "rb")] + ([open(symbols, "rb")] if symbols else [])
    try:
        data = {"service": service, "version": "9.9", "capture": files[0],
                "symbols": files[1:]}
        return client.post("/api/v1/captures/", data, HTTP_AUTHORIZATION=f"Token {key}")
    finally:
        for f in files:
            f.close()


@pytest.fixture
def newcomer(django_user_model):
    """In no team yet: a refused first upload must not make one either."""
    return django_user_model.objects.create_user("nina", password="pw-nina-123")


def test_over_the_quota_keeps_nothing(client, member, settings):
    key = create_token(member, "ci")
    client.force_login(member)
    settings.PERFWEB_USER_QUOTA_BYTES = 20_000
    assert _form(client, BUSY, service="kept").status_code == 200
    before, files = rows(), stored_files(settings)
    assert len(files) == 1 and before["Service"] == before["Build"] == 1

    quota = ("This upload of 6,408 bytes (6.3 KiB) would take your uploads to 25,244 bytes "
             "(24.7 KiB), over your quota of 20,000 bytes (19.5 KiB). Delete old captures "
             "or ask an administrator for more room.")
    r = _form(client, IDLE)  # a new service and build: neither is kept
    assert r.status_code == 400
    assert r.json()["errors"]["__all__"][0]["message"] == quota
    r = _api(client, key, IDLE)
    assert r.status_code == 400 and r.json()["detail"] == quota
    assert rows() == before and stored_files(settings) == files


def test_a_first_upload_over_the_quota_makes_no_team(client, newcomer, settings):
    key = create_token(newcomer, "ci")
    client.force_login(newcomer)
    settings.PERFWEB_USER_QUOTA_BYTES = 5_000
    before = rows()
    quota = ("This upload of 6,408 bytes (6.3 KiB) would take your uploads to 6,408 bytes "
             "(6.3 KiB), over your quota of 5,000 bytes (4.9 KiB). Delete old captures or "
             "ask an administrator for more room.")
    r = _form(client, IDLE)
    assert r.status_code == 400
    assert r.json()["errors"]["__all__"][0]["message"] == quota
    r = _api(client, key, IDLE)
    assert r.status_code == 400 and r.json()["detail"] == quota
    assert rows() == before and stored_files(settings) == []


@pytest.mark.parametrize("who", ["member", "newcomer"])
def test_too_large_keeps_nothing(client, settings, request, who):
    user = request.getfixturevalue(who)
    key = create_token(user, "ci")
    client.force_login(user)
    settings.PERFWEB_MAX_UPLOAD_BYTES = 18_835  # one byte less than the capture
    before = rows()
    large = ("1.1.0-busy.perf.data is 18,836 bytes (18.4 KiB); the limit is 18,835 bytes "
             "(18.4 KiB)")
    r = _form(client, BUSY)
    assert r.status_code == 400
    assert r.json()["errors"]["capture"][0]["message"] == large
    r = _api(client, key, BUSY)
    assert r.status_code == 400 and r.json()["capture"] == [large]
    # a symbol file over the limit refuses the whole upload, the capture with it
    settings.PERFWEB_MAX_UPLOAD_BYTES = 84_871
    symbols = ("symbols-1.1.0.zip is 84,872 bytes (82.9 KiB); the limit is 84,871 bytes "
               "(82.9 KiB)")
    r = _form(client, BUSY, symbols=SYMBOLS)
    assert r.status_code == 400
    assert r.json()["errors"]["symbols"][0]["message"] == symbols
    r = _api(client, key, BUSY, symbols=SYMBOLS)
    assert r.status_code == 400 and r.json()["symbols"] == [symbols]
    assert rows() == before and stored_files(settings) == []


def test_request_beyond_every_limit_is_refused_with_exact_sizes(client, member, settings):
    settings.PERFWEB_MAX_UPLOAD_BYTES = 100
    settings.PERFWEB_MAX_SYMBOL_FILES = 2
    client.force_login(member)
    before = rows()
    r = _form(client, BUSY)
    assert r.status_code == 413
    length = int(r.wsgi_request.META["CONTENT_LENGTH"])
    assert length > 18_836
    assert r.json()["detail"] == (
        f"The upload is {length:,} bytes ({length / 1024:.1f} KiB); a capture and its "
        f"symbol files may be 100 bytes each.")
    assert rows() == before


def test_one_byte_over_two_gib_says_so(tmp_path, settings):
    """The default limit, and a (sparse) file one byte over it."""
    assert settings.PERFWEB_MAX_UPLOAD_BYTES == 2 << 30
    path = tmp_path / "huge.perf.data"
    with open(path, "wb") as f:
        f.truncate((2 << 30) + 1)
    with open(path, "rb") as f, pytest.raises(UploadTooLarge) as refused:
        check_size(File(f, name="huge.perf.data"))
    assert str(refused.value) == ("huge.perf.data is 2,147,483,649 bytes (2.0 GiB); the "
                                  "limit is 2,147,483,648 bytes (2.0 GiB)")
    with open(path, "r+b") as f:
        f.truncate(2 << 30)  # at the limit: accepted
    with open(path, "rb") as f:
        check_size(File(f, name="huge.perf.data"))


def test_more_files_than_an_upload_holds_get_a_sentence(client, member, settings,
                                                        tmp_path):
    """Django stops reading a request at its 101st file (DATA_UPLOAD_MAX_NUMBER_FILES)
    and answered with its HTML page "Bad Request (400)", to the API too; now a sentence
    saying the limit: JSON for the API and the upload page's script, text for a form
    posted without it. 100 files (the capture and 99 symbol files) are taken."""
    assert settings.DATA_UPLOAD_MAX_NUMBER_FILES == 100
    key = create_token(member, "ci")
    client.force_login(member)
    maps = []
    for i in range(100):
        maps.append(tmp_path / f"perf-{1000 + i}.map")
        maps[-1].write_text(f"401000 10 handler_{i}\n")

    def post(url, symbols, **headers):
        files = [open(BUSY, "rb")] + [open(p, "rb") for p in symbols]
        try:
            return client.post(url, {"service": "many", "version": "1.0", "capture": files[0],
                                     "symbols": files[1:]}, **headers)
        finally:
            for f in files:
                f.close()

    said = ("An upload holds at most 100 files (the capture, symbol files and source "
            "archives together); this one has more. Put the symbol files in a .zip or "
            ".tar.gz archive (its members are read), or upload them in several parts.")
    before = rows()
    r = post("/api/v1/captures/", maps, HTTP_AUTHORIZATION=f"Token {key}")
    assert (r.status_code, r["Content-Type"], r.json()) == (400, "application/json",
                                                           {"detail": said})
    r = post(reverse("upload"), maps, HTTP_ACCEPT="application/json")  # the page's script
    assert (r.status_code, r.json()) == (400, {"detail": said})
    r = post(reverse("upload"), maps)  # the form without JavaScript
    assert (r.status_code, r["Content-Type"], r.content.decode()) == (
        400, "text/plain; charset=utf-8", said)
    assert rows() == before and stored_files(settings) == []

    r = post("/api/v1/captures/", maps[:99], HTTP_AUTHORIZATION=f"Token {key}")
    assert r.status_code == 201, r.content
    assert SymbolFile.objects.count() == before["SymbolFile"] + 99
    # the upload form states the limit
    page = client.get(reverse("upload")).content.decode()
    assert "at most 100 files in one upload, the capture included: put more in a .zip " \
           "or .tar.gz" in page
