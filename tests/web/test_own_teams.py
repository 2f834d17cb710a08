"""Who is in a team comes from membership rows only (security probe, issue 12). A team was
found by its name "<username>'s team", so a new account named like a deleted one inherited
its team and captures after one GET of the upload page, and a user "dave" joined a team
somebody had called "dave's team"."""
import pytest
from django.urls import reverse

from perfweb.captures.api_tokens import create_token
from perfweb.captures.models import (Build, Capture, Membership, Service, ShareLink,
                                     SymbolFile, Team)

from .conftest import SPINPOOL

pytestmark = pytest.mark.django_db

MODELS = (Team, Membership, Service, Build, Capture, SymbolFile, ShareLink)


def rows() -> dict:
    return {m.__name__: m.objects.count() for m in MODELS}


def _form_upload(client, path, service="llm-api", version="1.0.0"):
    with open(path, "rb") as f:
        return client.post(reverse("upload"), {"service": service, "version": version,
                                               "label": "idle", "capture": f})


def _api_upload(client, key, path, service="llm-api", version="1.0.0"):
    with open(path, "rb") as f:
        return client.post("/api/v1/captures/", {"service": service, "version": version,
                                                 "capture": f},
                           HTTP_AUTHORIZATION=f"Token {key}")


def _sees_nothing_of(client, capture, key):
    """Every way in to another team's capture answers 404, and lists leave it out."""
    for name in ("capture", "capture-download", "capture-result", "capture-status",
                 "data-functions"):
        assert client.get(reverse(name, args=[capture.pk])).status_code == 404, name
    service = capture.build.service
    assert client.get(reverse("service", args=[service.pk])).status_code == 404
    assert capture.get_absolute_url() not in client.get(reverse("home")).content.decode()
    auth = {"HTTP_AUTHORIZATION": f"Token {key}"}
    assert client.get(f"/api/v1/captures/{capture.pk}/", **auth).status_code == 404
    listed = client.get("/api/v1/captures/", **auth).json()["results"]
    assert capture.pk not in [c["id"] for c in listed]
    services = client.get("/api/v1/services/", **auth).json()["results"]
    assert service.pk not in [s["id"] for s in services]


def test_a_new_account_named_like_a_deleted_one_inherits_nothing(client,
                                                                 django_user_model):
    carol = django_user_model.objects.create_user("carol", password="pw-carol-123")
    client.force_login(carol)
    assert _form_upload(client, SPINPOOL / "1.1.0-busy.perf.data").status_code == 302
    old_team = Team.objects.get()
    assert old_team.name == "carol's team"
    old_capture = Capture.objects.get()
    carol.delete()  # the team and its captures stay (other members may need them)
    assert Membership.objects.count() == 0

    carol = django_user_model.objects.create_user("carol", password="pw-carol-456")
    client.force_login(carol)
    key = create_token(carol, "ci")
    before = rows()
    page = client.get(reverse("upload"))
    assert page.status_code == 200
    assert rows() == before  # a GET creates nothing, and joins nothing
    _sees_nothing_of(client, old_capture, key)
    assert rows() == before
    assert "Your first upload makes a team of your own" in page.content.decode()

    # her first upload makes a new team: the old name is taken, so a free one
    assert _form_upload(client, SPINPOOL / "1.1.0-idle.perf.data").status_code == 302
    team = Membership.objects.get(user=carol).team
    assert team != old_team and team.name == "carol's team 2"
    assert list(team.members.all()) == [carol]
    assert list(Capture.objects.filter(build__service__team=team)) == \
        [Capture.objects.get(uploaded_by=carol)]
    _sees_nothing_of(client, old_capture, key)
    assert "Your first upload" not in client.get(reverse("upload")).content.decode()


def test_dave_does_not_join_the_team_called_daves_team(client, django_user_model):
    erin = django_user_model.objects.create_user("erin", password="pw-erin-123")
    theirs = Team.objects.create(name="dave's team")
    Membership.objects.create(team=theirs, user=erin)
    client.force_login(erin)
    assert _form_upload(client, SPINPOOL / "1.1.0-busy.perf.data").status_code == 302
    erins = Capture.objects.get()
    assert erins.build.service.team == theirs

    dave = django_user_model.objects.create_user("dave", password="pw-dave-123")
    client.force_login(dave)
    key = create_token(dave, "ci")
    before = rows()
    assert client.get(reverse("upload")).status_code == 200
    assert rows() == before
    _sees_nothing_of(client, erins, key)

    # the API upload makes his own team too, never the one with his name on it
    r = _api_upload(client, key, SPINPOOL / "1.1.0-idle.perf.data")
    assert r.status_code == 201, r.content
    assert list(theirs.members.all()) == [erin]
    mine = Team.objects.get(membership__user=dave)
    assert mine.name == "dave's team 2"
    assert Capture.objects.get(pk=r.json()["id"]).build.service.team == mine
    _sees_nothing_of(client, erins, key)
    # a second upload goes to the same team, which is now found by membership
    r = _api_upload(client, key, SPINPOOL / "1.0.0-busy.perf.data", version="1.1.0")
    assert r.status_code == 201
    assert Team.objects.filter(membership__user=dave).count() == 1
    assert Team.objects.count() == 2


def test_creating_a_service_makes_a_team_of_ones_own(client, django_user_model):
    Team.objects.create(name="frank's team")
    frank = django_user_model.objects.create_user("frank", password="pw-frank-123")
    auth = {"HTTP_AUTHORIZATION": f"Token {create_token(frank, 'ci')}"}
    before = rows()
    for path in ("/api/v1/services/", "/api/v1/captures/"):
        assert client.get(path, **auth).json()["results"] == []
    assert rows() == before
    r = client.post("/api/v1/services/", {"name": "llm-api"}, **auth)
    assert r.status_code == 201 and r.json()["team"] == "frank's team 2"
    assert Membership.objects.filter(user=frank).count() == 1


def test_a_long_username_still_gets_a_valid_free_team_name(client, django_user_model):
    name = "g" * 150  # Django allows 150 characters, a team name 100
    Team.objects.create(name="g" * 93 + "'s team")
    user = django_user_model.objects.create_user(name, password="pw-long-123")
    client.force_login(user)
    assert _form_upload(client, SPINPOOL / "1.1.0-busy.perf.data").status_code == 302
    assert Team.objects.get(membership__user=user).name == "g" * 91 + "'s team 2"


@pytest.mark.django_db(transaction=True)
def test_two_first_uploads_at_once_make_one_team(django_user_model):
    """The user's row is locked while their first team is made, so a second upload
    running at the same moment joins that team instead of making another."""
    import threading

    from django.core.files import File
    from django.db import connection

    from perfweb.captures.uploads import store_upload
    hana = django_user_model.objects.create_user("hana", password="pw-hana-123")
    start, results = threading.Barrier(2), []

    def upload(path):
        try:
            with open(path, "rb") as f:
                start.wait()
                capture, _ = store_upload(hana, None, {
                    "service": "llm-api", "version": "1.0.0", "capture": File(f, path.name)})
            results.append(capture.build.service.team_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(SPINPOOL / name,))
               for name in ("1.1.0-busy.perf.data", "1.1.0-idle.perf.data")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and results[0] == results[1]
    assert list(Team.objects.values_list("name", flat=True)) == ["hana's team"]
    assert Capture.objects.filter(build__service__team_id=results[0]).count() == 2
