"""Exports are made once per host and streamed from its disk (issue 33): a 3 MB export
took 4 s for every download, and the `perf script` text of a large capture was built
in memory whole. The cached file is what later downloads get; another selection or
another analysis is another file; the folder keeps to its budget; a refused selection
leaves nothing; deleting the capture removes its files."""
import pytest

from perfweb.captures.models import Capture
from perfweb.captures.services import deletion

from .conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cache_dir(settings, tmp_path):
    settings.PERFWEB_CACHE_DIR = str(tmp_path / "cache")
    return tmp_path / "cache" / "exports"


def _files(root, pattern="*/*.export"):
    return sorted(root.glob(pattern)) if root.exists() else []


def test_an_export_is_made_once_and_streamed(client, member, cache_dir):
    capture = spinpool(member, "1.0.0", "busy")
    client.force_login(member)
    url = f"/captures/{capture.pk}/export/perf-script/"
    first = client.get(url)
    assert first.status_code == 200 and first.streaming
    text = first.getvalue()
    assert text.count(b"cpu-clock") == 973  # every sample
    (made,) = _files(cache_dir)
    assert made.read_bytes() == text
    # what the next download gets is that file, not the export made again
    made.write_bytes(b"made once\n")
    assert client.get(url).getvalue() == b"made once\n"
    # another format, another selection: files of their own
    assert client.get(f"/captures/{capture.pk}/export/pprof/").status_code == 200
    assert client.get(f"/captures/{capture.pk}/export/pprof/?tids=18193").status_code == 200
    assert len(_files(cache_dir)) == 3
    # the same selection spelled otherwise (merges in another order) is the same file
    q = "tf=mf-1.mf-2"
    assert client.get(f"/captures/{capture.pk}/export/firefox/?{q}").status_code == 200
    assert client.get(f"/captures/{capture.pk}/export/firefox/?tf=mf-2.mf-1").status_code \
        == 200
    assert len(_files(cache_dir)) == 4
    # a selection the explorer refuses is a 400 and leaves no file, whole or partial
    r = client.get(f"/captures/{capture.pk}/export/firefox/?tf=zz-1")
    assert r.status_code == 400 and b"is not one of" in r.content
    r = client.get(f"/captures/{capture.pk}/export/firefox/?view=off-cpu")
    assert r.status_code == 400 and b"context switches" in r.content
    assert len(_files(cache_dir)) == 4 and not _files(cache_dir, "*/*.part")
    # deleting the capture removes its exports
    deletion.delete_capture(Capture.objects.get(pk=capture.pk))
    assert _files(cache_dir) == []


def test_the_exports_folder_keeps_to_its_budget(client, member, cache_dir, settings):
    capture = spinpool(member, "1.0.0", "busy")
    client.force_login(member)
    sizes = {}
    for fmt in ("speedscope", "pprof", "firefox"):
        sizes[fmt] = len(client.get(f"/captures/{capture.pk}/export/{fmt}/").getvalue())
    assert len(_files(cache_dir)) == 3
    # room for the last one made and the one asked again: the other goes
    settings.PERFWEB_EXPORT_CACHE_BYTES = sizes["firefox"] + sizes["speedscope"]
    client.get(f"/captures/{capture.pk}/export/speedscope/").getvalue()  # (used again)
    client.get(f"/captures/{capture.pk}/export/perf-script/").getvalue()
    kept = sum(f.stat().st_size for f in _files(cache_dir))
    assert kept <= settings.PERFWEB_EXPORT_CACHE_BYTES
    # files unused for longer than the idle limit go at the next export made
    settings.PERFWEB_EXPORT_CACHE_BYTES = 1 << 30
    settings.PERFWEB_EXPORT_CACHE_IDLE_S = 0
    client.get(f"/captures/{capture.pk}/export/pprof/?tids=18192").getvalue()
    assert len(_files(cache_dir)) <= 1
