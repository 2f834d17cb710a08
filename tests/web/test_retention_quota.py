"""Retention and quotas per team (issue 18, item 2), against PostgreSQL and the storage.

- the purge (`manage.py purge_expired` and the beat's task) deletes the rows and stored
  files of the captures past their team's retention, and nothing else;
- a capture a live share link shows is kept; a comparison with a purged capture says so
  on its page (and the capture's own URL too) instead of 404;
- a team over its storage quota has its upload refused as a user over theirs is: 400,
  the same sentence on the page and in the API, nothing kept;
- only a team admin changes the retention; an outsider does not find the team (404).
"""
import threading
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from perfweb.captures import services, tasks
from perfweb.captures.api_tokens import ADMIN, create_token
from perfweb.captures.models import (AnalysisResult, Build, Capture, Comment, Membership,
                                     PurgedCapture, Service, ShareLink, SymbolFile, Team)
from perfweb.captures.services import retention
from perfweb.captures.uploads import store_upload

from .conftest import SPINPOOL, spinpool

pytestmark = pytest.mark.django_db
#: transactions commit, as in production: the files go once the deletion has committed
committing = pytest.mark.django_db(transaction=True)

BUSY = SPINPOOL / "1.1.0-busy.perf.data"  # 18,836 bytes
IDLE = SPINPOOL / "1.1.0-idle.perf.data"  # 6,408 bytes
BUSY_SCRIPT = SPINPOOL / "1.1.0-busy.truth-script.txt"
IDLE_SCRIPT = SPINPOOL / "1.1.0-idle.truth-script.txt"
SYMBOLS = SPINPOOL / "symbols-1.1.0.zip"  # 84,872 bytes
for _p in (BUSY, IDLE, BUSY_SCRIPT, IDLE_SCRIPT, SYMBOLS):
    assert _p.is_file(), _p  # fail loudly, never collect nothing


def stored_files() -> list:
    media = Path(django_settings.MEDIA_ROOT)
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()) \
        if media.exists() else []


def files_of(capture: Capture) -> list:
    names = [capture.file.name]
    for r in AnalysisResult.objects.filter(capture=capture):
        names += [f.name for f in (r.folded, r.profile) if f]
    names += [sf.file.name for sf in SymbolFile.objects.filter(capture=capture)]
    return names


@pytest.fixture
def admin(django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    Membership.objects.create(team=Team.objects.create(name="inference"), user=user,
                              admin=True)
    return user


@pytest.fixture
def teammate(admin, django_user_model):
    user = django_user_model.objects.create_user("bob", password="pw-bob-123")
    Membership.objects.create(team=Team.objects.get(name="inference"), user=user)
    return user


@pytest.fixture
def outsider(django_user_model):
    user = django_user_model.objects.create_user("mallory", password="pw-mallory-123")
    Membership.objects.create(team=Team.objects.create(name="elsewhere"), user=user,
                              admin=True)
    return user


def upload(user, path, version, label="busy", team="inference", symbols=(), analyse=False,
           age_days=0):
    c, created = store_upload(user, Team.objects.get(name=team), {
        "service": "llm-api", "version": version, "label": label,
        "capture": SimpleUploadedFile(path.name, path.read_bytes()),
        "symbols": [SimpleUploadedFile(s.name, s.read_bytes()) for s in symbols]})
    assert created
    if analyse:
        services.run_analysis(c.pk)
        assert Capture.objects.get(pk=c.pk).status == "done"
    if age_days:
        Capture.objects.filter(pk=c.pk).update(
            created_at=timezone.now() - timedelta(days=age_days))
    return Capture.objects.get(pk=c.pk)


@committing
def test_purge_deletes_the_expired_captures_rows_and_files(admin, outsider):
    Team.objects.filter(name="inference").update(retention_days=30)
    # expired: analysed (upload, folded stacks, saved profile) with a symbol file of its
    # own; and a plain upload, the only content of its build (which goes with it)
    old = upload(admin, BUSY, "1.0.0", symbols=[SYMBOLS], analyse=True, age_days=31)
    old_lone = upload(admin, IDLE, "0.9.0", label="idle", age_days=45)
    # kept: 29 days old (in the build of `old`, which stays), and new; another team's
    # 400-day-old capture (that team keeps them for ever)
    recent = upload(admin, BUSY_SCRIPT, "1.0.0", analyse=True, age_days=29)
    new = upload(admin, IDLE_SCRIPT, "1.2.0", label="idle")
    theirs = upload(outsider, BUSY, "1.0.0", team="elsewhere", age_days=400)
    assert len(files_of(old)) == 4 and len(files_of(old_lone)) == 1  # upload, folded,
    kept = sorted(files_of(recent) + files_of(new) + files_of(theirs))  # profile, symbols
    assert stored_files() == sorted(kept + files_of(old) + files_of(old_lone))
    assert list(retention.expired(Team.objects.get(name="inference"), timezone.now())) == \
        [old_lone, old]  # oldest first

    out = StringIO()
    call_command("purge_expired", "--dry-run", stdout=out)
    assert out.getvalue().count("would delete capture") == 2 and len(stored_files()) == 10

    out = StringIO()
    call_command("purge_expired", stdout=out)
    assert out.getvalue().startswith("purged 2 captures (5 stored files, ")
    assert "1 empty build; 0 kept by live share links" in out.getvalue()
    assert sorted(Capture.objects.values_list("pk", flat=True)) == \
        sorted([recent.pk, new.pk, theirs.pk])
    assert AnalysisResult.objects.filter(capture_id__in=[old.pk, old_lone.pk]).count() == 0
    assert SymbolFile.objects.count() == 0
    assert not Build.objects.filter(version="0.9.0").exists()  # its only capture's build
    assert Build.objects.filter(version="1.0.0").count() == 2  # inference's and theirs
    assert stored_files() == kept  # the files of the deleted captures are gone, only those
    purged = {p.capture_id: p for p in PurgedCapture.objects.all()}
    assert sorted(purged) == sorted([old.pk, old_lone.pk])
    assert purged[old.pk].retention_days == 30 and purged[old.pk].build == "1.0.0"
    assert purged[old.pk].service == "llm-api" and purged[old.pk].label == "busy"

    # again: nothing left to purge; the beat's task (run here, in-process) says the same
    assert tasks.purge_expired_captures.apply().get() == \
        {"captures": 0, "builds": 0, "files": 0, "bytes": 0, "kept_by_links": 0}
    schedule = django_settings.CELERY_BEAT_SCHEDULE["purge-expired-captures"]
    assert schedule["task"] == tasks.purge_expired_captures.name
    assert stored_files() == kept


@committing
def test_a_live_share_link_keeps_its_capture(admin, teammate):
    Team.objects.filter(name="inference").update(retention_days=7)
    now = timezone.now()
    captures = [upload(admin, p, v, age_days=8) for p, v in
                ((BUSY, "1"), (IDLE, "2"), (BUSY_SCRIPT, "3"), (IDLE_SCRIPT, "4"))]
    live, later, revoked, lapsed = captures
    # the four uploads are stored (so that "none left" below says they went)
    assert stored_files() == sorted(n for c in captures for n in files_of(c)) and \
        len(stored_files()) == 4

    def link(capture, **kw):
        return ShareLink.objects.create(capture=capture, token=f"t{capture.pk}" * 8,
                                        created_by=admin, **kw)
    link(live)  # no expiry
    link(later, expires_at=now + timedelta(days=3))
    gone_link = link(revoked, revoked_at=now - timedelta(hours=1))
    link(lapsed, expires_at=now - timedelta(minutes=1))

    client = Client()
    client.force_login(teammate)
    team = Team.objects.get(name="inference")
    page = client.get(reverse("team", args=[team.pk])).content.decode()
    assert "2 captures past the retention are kept because a live share link shows them" \
        in page and "2 are due for the next purge" in page

    done = retention.purge()
    assert (done.captures, done.kept_by_links) == (2, 2)
    assert sorted(done.ids) == sorted([revoked.pk, lapsed.pk])
    assert set(Capture.objects.values_list("pk", flat=True)) == {live.pk, later.pk}
    assert ShareLink.objects.count() == 2  # the links of the purged captures with them
    # the revoked link's page was "no longer valid" before the purge, and still is
    assert Client().get(reverse("shared", args=[gone_link.url_token])).status_code == 410
    for c in (live, later):  # the links that show a capture still show it
        token = ShareLink.objects.get(capture=c).url_token
        assert Client().get(reverse("shared", args=[token])).status_code == 200

    # once the last live link is revoked, the next purge deletes its capture
    ShareLink.objects.filter(capture=live).update(revoked_at=timezone.now())
    assert retention.purge().ids == [live.pk]
    # and once the other link has expired, so does that one (three days on)
    assert retention.purge(now=now + timedelta(days=3, seconds=1)).ids == [later.pk]
    assert Capture.objects.count() == 0 and stored_files() == []


@committing
def test_a_comparisons_live_link_keeps_both_sides(admin):
    """A share link to a comparison shows both captures: while it is live, neither is
    purged; revoked, both go."""
    Team.objects.filter(name="inference").update(retention_days=7)
    before, after = (upload(admin, p, v, age_days=8) for p, v in ((BUSY, "1"), (IDLE, "2")))
    link = ShareLink.objects.create(capture=before, compare_with=after, token="k" * 32,
                                    created_by=admin)
    done = retention.purge()
    assert (done.captures, done.kept_by_links) == (0, 2)
    link.revoked_at = timezone.now()
    link.save()
    assert sorted(retention.purge().ids) == sorted([before.pk, after.pk])


def test_a_comparison_with_a_purged_capture_says_so(admin, outsider):
    team = Team.objects.get(name="inference")
    # 1.1.0 busy, then the build that spins (1.0.0's capture, as the next build): a
    # regression, its finding naming the earlier build
    before = spinpool(admin, "1.1.0", "busy")
    Capture.objects.filter(pk=before.pk).update(
        created_at=timezone.now() - timedelta(days=40))
    after = spinpool(admin, "1.0.0", "busy")
    stored = after.latest_result().comparison
    assert stored["before"]["id"] == before.pk  # the worker compared them
    member, stranger = Client(), Client()
    member.force_login(admin)
    stranger.force_login(outsider)
    compare = reverse("compare", args=[before.pk, after.pk])
    assert member.get(compare).status_code == 200

    team.retention_days = 30
    team.save()
    assert retention.purge().ids == [before.pk]
    day = PurgedCapture.objects.get(capture_id=before.pk).deleted_at.strftime("%Y-%m-%d")
    sentence = (f"Capture {before.pk} was deleted on {day} by the retention policy "
                f"(30 days).")

    r = member.get(compare)
    assert r.status_code == 410
    page = r.content.decode()
    assert sentence in page
    assert f"the comparison with it said: <strong>{stored['verdict']}</strong>" in page
    assert after.get_absolute_url() in page
    r = member.get(reverse("compare-data", args=[before.pk, after.pk]))
    assert r.status_code == 410 and r.json() == {
        "detail": sentence, "purged": [{
            "capture": before.pk, "retention_days": 30,
            "deleted_at": PurgedCapture.objects.get().deleted_at.isoformat()}]}
    # either order of the two
    assert sentence in member.get(reverse("compare", args=[after.pk, before.pk])) \
        .content.decode()
    # the later capture's page: its verdict against the purged one says where it went,
    # and so does its regression finding, on the page and through a share link (review M5)
    page = member.get(after.get_absolute_url()).content.decode()
    assert f"(The 1.1.0 capture is gone: {sentence[0].lower()}{sentence[1:-1]}.)" in page
    assert stored["verdict"] == "regression" and stored["regression"]["rule"] == "regression"
    note = (f'<p class="purged-note" id="regression-purged">The 1.1.0 capture it was '
            f'compared with is gone: {sentence[0].lower()}{sentence[1:-1]}.</p>')
    assert note in page
    link = ShareLink.objects.create(capture=after, token="r" * 32, created_by=admin)
    shared = Client().get(reverse("shared", args=[link.url_token])).content.decode()
    assert 'id="finding-regression"' in shared and note in shared
    # the purged capture's own URL
    r = member.get(reverse("capture", args=[before.pk]))
    assert r.status_code == 410 and sentence in r.content.decode()
    # the API: the capture and a comparison with it are 410 with the sentence
    api = {"HTTP_AUTHORIZATION": f"Token {create_token(admin, 'ci', ADMIN)}"}
    outside = {"HTTP_AUTHORIZATION": f"Token {create_token(outsider, 'ci', ADMIN)}"}
    for url in (f"/api/v1/captures/{before.pk}/", f"/api/v1/captures/{before.pk}/result/",
                f"/api/v1/captures/{after.pk}/compare/?with={before.pk}"):
        r = Client().get(url, **api)
        assert r.status_code == 410 and r.json() == {"detail": sentence}, url
        assert Client().get(url, **outside).status_code == 404, url
    # an outsider learns nothing: 404 as for any capture of another team
    for url in (compare, reverse("compare-data", args=[before.pk, after.pk]),
                reverse("capture", args=[before.pk])):
        assert stranger.get(url).status_code == 404, url
    # a capture that never existed is still a plain 404
    assert member.get(reverse("compare", args=[before.pk + 1000, after.pk])) \
        .status_code == 404


def _form(client, path, service="llm-api"):
    with open(path, "rb") as f:
        return client.post(reverse("upload"), {"service": service, "version": "9.9",
                                               "capture": f},
                           HTTP_ACCEPT="application/json")


def _api(client, key, path, service="llm-api"):
    with open(path, "rb") as f:
        return client.post("/api/v1/captures/", {"service": service, "version": "9.9",
                                                 "capture": f},
                           HTTP_AUTHORIZATION=f"Token {key}")


def test_team_quota_refuses_as_the_user_quota_does(admin, teammate, settings):
    team = Team.objects.get(name="inference")
    team.quota_bytes = 20_000
    team.save()
    client = Client()
    client.force_login(teammate)
    key = create_token(teammate, "ci", ADMIN)
    assert _form(client, BUSY).status_code == 200  # 18,836 of 20,000 bytes
    before = (Service.objects.count(), Build.objects.count(), Capture.objects.count())
    files = stored_files()
    quota = ("This upload of 6,408 bytes (6.3 KiB) would take the uploads of team "
             "“inference” to 25,244 bytes (24.7 KiB), over its quota of 20,000 bytes "
             "(19.5 KiB). Delete old captures or ask an administrator for more room.")
    r = _form(client, IDLE, service="new-service")
    assert r.status_code == 400
    assert r.json()["errors"]["__all__"][0]["message"] == quota
    with open(IDLE, "rb") as f:  # the page itself, as a browser posts it
        r = client.post(reverse("upload"), {"service": "x", "version": "9.9", "capture": f})
    assert r.status_code == 400 and quota in r.content.decode()
    r = _api(client, key, IDLE)
    assert r.status_code == 400 and r.json()["detail"] == quota
    assert (Service.objects.count(), Build.objects.count(), Capture.objects.count()) == \
        before and stored_files() == files
    # symbol files added to a build count too
    build = Build.objects.get()
    with open(SYMBOLS, "rb") as f:
        r = client.post(reverse("build", args=[build.pk]), {"symbols": [f]})
    assert r.status_code == 400
    assert ("This upload of 84,872 bytes (82.9 KiB) would take the uploads of team "
            "“inference” to 103,708 bytes (101.3 KiB), over its quota of 20,000 bytes "
            "(19.5 KiB).") in r.content.decode()
    assert SymbolFile.objects.count() == 0
    # the team page shows the use and the quota
    page = client.get(reverse("team", args=[team.pk])).content.decode()
    assert '<strong id="team-used">18,836 bytes (18.4 KiB)</strong>' in page
    assert '<strong id="team-quota">20,000 bytes (19.5 KiB)</strong>' in page

    # without a quota of its own, the team has PERFWEB_TEAM_QUOTA_BYTES
    team.quota_bytes = None
    team.save()
    settings.PERFWEB_TEAM_QUOTA_BYTES = 25_243  # one byte short
    r = _api(client, key, IDLE)
    assert r.status_code == 400 and r.json()["detail"] == quota.replace(
        "20,000 bytes (19.5 KiB)", "25,243 bytes (24.7 KiB)")
    settings.PERFWEB_TEAM_QUOTA_BYTES = 25_244  # exactly full is allowed
    assert _api(client, key, IDLE).status_code == 201


def test_only_team_admins_change_the_retention(admin, teammate, outsider):
    team = Team.objects.get(name="inference")
    page, settings_url = reverse("team", args=[team.pk]), \
        reverse("team-settings", args=[team.pk])
    boss, peer, stranger = Client(), Client(), Client()
    boss.force_login(admin)
    peer.force_login(teammate)
    stranger.force_login(outsider)
    assert "Captures are kept <strong>for ever</strong>" in boss.get(page).content.decode()

    r = boss.post(settings_url, {"retention_days": "30"})
    assert r.status_code == 302 and r["Location"] == page
    assert Team.objects.get(pk=team.pk).retention_days == 30
    text = boss.get(page).content.decode()
    assert "Captures are kept <strong>30 days</strong>" in text
    assert 'id="retention-form"' in text

    text = peer.get(page).content.decode()  # a member sees it, without the form
    assert "Captures are kept <strong>30 days</strong>" in text
    assert 'id="retention-form"' not in text
    r = peer.post(settings_url, {"retention_days": "1"})
    assert r.status_code == 403
    assert "Only the team&#x27;s admins may change its settings." in r.content.decode()
    assert Team.objects.get(pk=team.pk).retention_days == 30

    assert stranger.get(page).status_code == 404  # an outsider does not find the team
    assert stranger.post(settings_url, {"retention_days": "1"}).status_code == 404
    assert Team.objects.get(pk=team.pk).retention_days == 30
    assert Client().post(settings_url, {"retention_days": "1"}).status_code == 302  # login

    r = boss.post(settings_url, {"retention_days": "0"})
    assert r.status_code == 400
    assert "Ensure this value is greater than or equal to 1." in r.content.decode()
    assert boss.post(settings_url, {"retention_days": ""}).status_code == 302
    assert Team.objects.get(pk=team.pk).retention_days is None  # for ever again

    # the team list; a first upload makes its uploader the admin of the new team
    assert f'href="{page}"' in boss.get(reverse("teams")).content.decode()
    newcomer = type(admin).objects.create_user("nina", password="pw-nina-123")
    store_upload(newcomer, None, {"service": "s", "version": "1",
                                  "capture": SimpleUploadedFile("c", IDLE.read_bytes())})
    assert Membership.objects.get(user=newcomer).admin is True


def _purge_once_blocked(capture: Capture, errors: list) -> threading.Event:
    """The purge of `capture` racing a request (review M2), deterministically: a thread
    of its own (its own connection) locks the capture's row, says so (the Event), waits
    until another backend waits for a lock, then runs the real purge_capture in that
    transaction and commits: the request read the capture before the purge and writes
    after it."""
    locked = threading.Event()

    def run():
        try:
            team = Team.objects.get(name="inference")
            with transaction.atomic():
                Capture.objects.select_for_update().get(pk=capture.pk)
                locked.set()
                with connection.cursor() as cursor:
                    for _ in range(200):
                        cursor.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                            "current_database() AND wait_event_type = 'Lock' AND "
                            "pid <> pg_backend_pid()")
                        if cursor.fetchone()[0]:
                            break
                        time.sleep(0.05)
                    else:
                        errors.append("the request never waited for the capture's row")
                if retention.purge_capture(capture.pk, team, timezone.now()) is None:
                    errors.append("purge_capture found nothing to purge")
        except Exception as e:  # said by the test
            errors.append(repr(e))
            locked.set()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    locked.thread = thread
    assert locked.wait(10)
    return locked


@committing
def test_a_share_link_or_comment_racing_the_purge_is_410(admin):
    """A share link or a comment made while the purge deletes the same capture: the
    request locks the capture's row, finds it gone and answers 410 with the retention's
    sentence (it was an IntegrityError, a 500); purged before the request, 410 too."""
    Team.objects.filter(name="inference").update(retention_days=30)
    captures = [upload(admin, p, v, analyse=True, age_days=40)
                for p, v in ((BUSY, "1.0.0"), (IDLE, "1.1.0"), (BUSY, "1.2.0"))]
    member = Client()
    member.force_login(admin)
    api = {"HTTP_AUTHORIZATION": f"Token {create_token(admin, 'ci', ADMIN)}"}
    comment = {"kind": "range", "start": "0", "end": "0.5", "body": "warm-up"}
    requests = [
        lambda c: member.post(reverse("share-create", args=[c.pk]), {"days": "7"}),
        lambda c: member.post(reverse("capture-comment-create", args=[c.pk]), comment),
        lambda c: member.post(f"/api/v1/captures/{c.pk}/comments/", comment,
                              content_type="application/json", **api)]
    for capture, request in zip(captures, requests):
        errors: list = []
        locked = _purge_once_blocked(capture, errors)
        r = request(capture)
        locked.thread.join(30)
        assert errors == []
        sentence = PurgedCapture.objects.get(capture_id=capture.pk).sentence
        assert r.status_code == 410 and sentence in r.content.decode()
        # and once it is gone, the same request is refused the same way
        r = request(capture)
        assert r.status_code == 410 and sentence in r.content.decode()
    assert Capture.objects.count() == 0 and ShareLink.objects.count() == 0
    assert Comment.objects.count() == 0
