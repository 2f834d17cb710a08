"""Two teams' uploads through one Celery worker and its one symbol cache (security probe,
issue 12): team B's copy of team A's debug file, renamed inside but with A's build-id and
size, was indexed once for both, so whoever uploaded first decided the names the other
team saw."""
import pytest
from django.urls import reverse

from perfweb.captures.models import Capture

from renamed_symbols import REAL, renamed_bundle
from .conftest import SPINPOOL, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _upload_and_wait(client, user, bundle):
    client.force_login(user)
    files = [open(p, "rb") for p in (SPINPOOL / "1.0.0-idle.perf.data", bundle,
                                     SPINPOOL / "1.0.0-idle.perf.data.tar.bz2")]
    try:
        r = client.post(reverse("upload"), {
            "service": "llm-api", "version": "1.0.0", "label": "idle",
            "symbols_for_build": "on", "capture": files[0], "symbols": files[1:]})
    finally:
        for f in files:
            f.close()
    assert r.status_code == 302
    capture = Capture.objects.get(build__service__team__members=user)
    done = wait_for(lambda: Capture.objects.get(pk=capture.pk).finished and
                    Capture.objects.get(pk=capture.pk))
    assert done.status == "done", done.error
    return capture


def _functions(client, user, capture):
    client.force_login(user)
    r = client.get(reverse("data-functions", args=[capture.pk]))
    assert r.status_code == 200
    return {f["n"] for f in r.json()["functions"]}


def test_each_team_sees_the_names_of_its_own_upload(client, member, outsider,
                                                    worker_factory, tmp_path):
    worker_factory({"PERFWEB_CACHE_DIR": str(tmp_path / "shared-cache")})
    # team B (outsider) first: its index must not become the one team A's capture reads
    theirs = _upload_and_wait(client, outsider, renamed_bundle(tmp_path))
    ours = _upload_and_wait(client, member, REAL)
    mine, other = _functions(client, member, ours), _functions(client, outsider, theirs)
    assert "qualla::ThreadPool::loop" in mine
    assert not any("HackedPool" in n for n in mine)
    assert "qualla::HackedPool::loop" in other
    assert not any("ThreadPool" in n for n in other)
    assert len(list((tmp_path / "shared-cache" / "symbols").glob("*.idx"))) >= 4
