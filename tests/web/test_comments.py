"""Comments on a capture (issue 18, item 6): team members comment on a finding, a function
or a time range through the capture page's form and the API; the page (and a share link,
read-only) shows them with author and time, escaped; outsiders get 404 everywhere.

The capture: spinpool 1.1.0 busy with its bundles (154 samples over 4.917 s, findings
cpu-use, a hot spot at info and nothing-notable; 16 functions, qualla::ThreadPool::loop
among them), analysed in 0.25 s per test."""
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from perfweb.captures.api_tokens import ADMIN, create_token
from perfweb.captures.models import Comment, Membership, ShareLink, Team
from perfweb.captures.services.profiles import stored_profile

from .conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)

LOOP = "qualla::ThreadPool::loop"
# a name the capture's C++ gives: angle brackets, to be shown escaped
INVOKE = "__invoke_impl<void, engine_submit(void*, int)::<lambda()>&>"
SCRIPT = '<script>alert("body")</script> & then'
IMG_NAME = "<img src=x onerror=alert(1)>"


@pytest.fixture
def world(django_user_model):
    """Team "inference" (alice uploaded the capture, bob is a teammate), mallory in
    another team; a share link to the capture; API tokens for all three."""
    team, elsewhere = Team.objects.create(name="inference"), Team.objects.create(name="else")
    users = {}
    for name, t in (("alice", team), ("bob", team), ("mallory", elsewhere)):
        users[name] = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        Membership.objects.create(team=t, user=users[name])
    capture = spinpool(users["alice"], "1.1.0", "busy")
    report = capture.latest_result().report
    # (no problem: the busy pool's work, said at info as where the time goes)
    assert [(f["rule"], f["severity"]) for f in capture.latest_result().findings()] == \
        [("cpu-use", "info"), ("hot-spot", "info"), ("nothing-notable", "info")]
    assert report["duration_s"] == 4.917 and report["samples"] == 154
    link = ShareLink.objects.create(capture=capture, token="c" * 32, created_by=users["alice"])
    clients = {}
    for name, u in users.items():
        clients[name] = Client()
        clients[name].force_login(u)
    return {"capture": capture, "link": link, "clients": clients, **users,
            "keys": {name: create_token(u, "t", ADMIN) for name, u in users.items()},
            "functions": {f.name: f.id for f in stored_profile(capture).functions}}


def _page(capture):
    return f"/captures/{capture.pk}/"


def _api(capture):
    return f"/api/v1/captures/{capture.pk}/comments/"


class _Comments(HTMLParser):
    """The text of each comment's author, time, target and body, as a browser's DOM
    has it (entities decoded), per list: the Comments card and under each finding."""

    def __init__(self):
        super().__init__()
        self.lists: dict[str, list[dict]] = {}
        self._list = self._item = self._field = None
        self._finding = None
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "script":
            self._in_script = True
            self.scripts.append(a.get("src") or "")
        if tag == "article" and "finding" in cls:
            self._finding = a.get("data-rule")
        if tag == "ul" and "comments" in cls:
            self._list = a.get("id") or f"finding:{self._finding}"
            self.lists.setdefault(self._list, [])
        if tag == "li" and "comment" in cls and self._list:
            self._item = {"id": a.get("id"), "kind": a.get("data-kind"), "author": "",
                          "time": "", "target": "", "body": "", "href": None,
                          "datetime": None, "delete": False}
            self.lists[self._list].append(self._item)
        if self._item is not None:
            for name in ("author", "time", "target", "body"):
                if f"comment-{name}" in cls:
                    self._field = name
                    if name == "target":
                        self._item["href"] = a.get("href")
                    if name == "time":
                        self._item["datetime"] = a.get("datetime")
            if tag == "form" and "comment-delete" in cls:
                self._item["delete"] = True

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False
        if tag in ("strong", "time", "a", "span", "p") and self._field:
            self._field = None
        if tag == "li":
            self._item = None
        if tag == "ul":
            self._list = None
        if tag == "article":
            self._finding = None

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.scripts.append("inline:" + data)
        if self._item is not None and self._field:
            self._item[self._field] += data


def _comments(html: bytes) -> _Comments:
    p = _Comments()
    p.feed(html.decode())
    return p


def test_comments_on_a_finding_a_function_and_a_range(world):
    capture, alice, bob = world["capture"], world["clients"]["alice"], world["clients"]["bob"]
    loop_id = world["functions"][LOOP]
    # through the page's form: a finding, a function by name, a time range
    r = alice.post(f"{_page(capture)}comments/", {"kind": "finding", "finding": "cpu-use",
                                                  "body": "1.0 CPUs busy is the load test"})
    first = Comment.objects.get()
    assert r.status_code == 302 and r["Location"] == f"{_page(capture)}#comment-{first.pk}"
    assert alice.post(f"{_page(capture)}comments/", {
        "kind": "function", "function": LOOP, "body": "the pool\nsleeps now"}).status_code == 302
    assert alice.post(f"{_page(capture)}comments/", {
        "kind": "range", "start": "1.25", "end": "2.5", "body": "warm-up"}).status_code == 302
    # through the API, as a teammate: a function by its id (the explorer's focus), JSON
    r = bob.post(_api(capture), {"kind": "function", "function_id": world["functions"][INVOKE],
                                 "body": "inlined by gcc"}, content_type="application/json")
    assert r.status_code == 201, r.content
    assert r.json()["function"] == INVOKE and r.json()["author"] == "bob"
    # with a token, a range ending at the capture's last second
    r = Client().post(_api(capture), {"kind": "range", "start": 0, "end": 4.917,
                                      "body": "all of it"}, content_type="application/json",
                      HTTP_AUTHORIZATION=f"Token {world['keys']['bob']}")
    assert r.status_code == 201, r.content

    listed = alice.get(_api(capture)).json()
    assert [(c["author"], c["kind"], c["target"], c["explorer_query"], c["mine"])
            for c in listed] == [
        ("alice", "finding", "finding cpu-use", "", True),
        ("alice", "function", f"function {LOOP}", f"?focus={loop_id}", True),
        ("alice", "range", "1.250 s – 2.500 s", "?start=1.250&end=2.500", True),
        ("bob", "function", f"function {INVOKE}", f"?focus={world['functions'][INVOKE]}",
         False),
        ("bob", "range", "0.000 s – 4.917 s", "?start=0.000&end=4.917", False)]
    assert [c["body"] for c in listed] == ["1.0 CPUs busy is the load test",
                                           "the pool\nsleeps now", "warm-up",
                                           "inlined by gcc", "all of it"]
    assert listed[1]["function_id"] == loop_id and listed[2]["start"] == 1.25 and \
        listed[2]["end"] == 2.5 and listed[0]["finding"] == "cpu-use"
    times = [Comment.objects.get(pk=c["id"]).created_at for c in listed]
    assert [c["created_at"] for c in listed] == [t.isoformat() for t in times]

    # the page: every comment in the Comments card, the finding's under the finding
    page = _comments(alice.get(_page(capture)).content)
    card = page.lists["comment-list"]
    assert [(c["author"], c["target"], c["body"]) for c in card] == [
        (c["author"], c["target"], c["body"]) for c in listed]
    assert [c["id"] for c in card] == [f"comment-{c['id']}" for c in listed]
    assert [c["href"] for c in card] == [
        "#finding-cpu-use", f"?focus={loop_id}#explorer", "?start=1.250&end=2.500#explorer",
        f"?focus={world['functions'][INVOKE]}#explorer", "?start=0.000&end=4.917#explorer"]
    assert [c["time"] for c in card] == [t.strftime("%Y-%m-%d %H:%M UTC") for t in times]
    assert [c["delete"] for c in card] == [True, True, True, False, False]  # alice's own
    assert [(c["author"], c["body"]) for c in page.lists["finding:cpu-use"]] == [
        ("alice", "1.0 CPUs busy is the load test")]
    assert "finding:nothing-notable" not in page.lists
    assert any(s.endswith("js/capture/comments.js") for s in page.scripts)


def test_refused_comments_say_why(world):
    capture, alice = world["capture"], world["clients"]["alice"]
    n = len(world["functions"])
    cases = [
        ({"kind": "finding", "finding": "cpu-use", "body": "  "},
         "body", "Write something: the comment is empty."),
        ({"kind": "finding", "finding": "cpu-use", "body": "x" * 4001},
         "body", "A comment is at most 4,000 characters; this one has 4,001."),
        ({"kind": "finding", "finding": "cpu-use", "body": "a\x00b"},
         "body", "The comment holds a NUL character; remove it."),
        ({"body": "about nothing"},
         "kind", "Say what the comment is about: one of finding, function, range."),
        ({"kind": "finding", "finding": "spin-wait", "body": "b"}, "finding",
         "This capture has no finding 'spin-wait'; its findings are: cpu-use, hot-spot, "
         "nothing-notable."),
        ({"kind": "finding", "body": "b"}, "finding", "Pick one of the capture's findings."),
        ({"kind": "function", "function": "main", "body": "b"}, "function",
         "This capture has no function named 'main' (names are matched exactly, as the "
         "functions table shows them)."),
        ({"kind": "function", "body": "b"}, "function", "Name the function the comment is about."),
        ({"kind": "function", "function_id": str(n), "body": "b"}, "function",
         f"This capture has no function with id '{n}'."),
        ({"kind": "function", "function_id": "-1", "body": "b"}, "function",
         "This capture has no function with id '-1'."),
        ({"kind": "function", "function_id": str(world["functions"][LOOP]), "function": "main",
          "body": "b"}, "function",
         f"Function {world['functions'][LOOP]} of this capture is '{LOOP}', not 'main'."),
        ({"kind": "range", "start": "1", "end": "5", "body": "b"}, "end",
         "The capture lasts 4.917 s; the range must end by then, not at 5 s."),
        ({"kind": "range", "start": "2", "end": "2", "body": "b"}, "end",
         "The end (2 s) must come after the start (2 s)."),
        ({"kind": "range", "start": "-0.5", "end": "2", "body": "b"}, "start",
         "The start is at 0 s (the capture's first sample) or later."),
        ({"kind": "range", "start": "nan", "end": "2", "body": "b"}, "start",
         "The start must be a number of seconds, not 'nan'."),
        ({"kind": "range", "start": "1", "end": "soon", "body": "b"}, "end",
         "The end must be a number of seconds, not 'soon'."),
        ({"kind": "range", "end": "2", "body": "b"}, "start",
         "Give the range's start in seconds from the capture's start."),
    ]
    for data, field, message in cases:
        r = alice.post(_api(capture), data)  # multipart, as a form would send it
        assert r.status_code == 400, (data, r.content)
        assert r.json() == {field: message}, (data, r.json())
    # a JSON body that is no object
    r = alice.post(_api(capture), ["kind"], content_type="application/json")
    assert r.status_code == 400
    assert r.json() == {"detail": "send the comment's fields as an object"}
    # the page's form: the same sentence, the page again (400) with what was typed
    r = alice.post(f"{_page(capture)}comments/", {"kind": "range", "start": "1", "end": "9",
                                                  "body": "keep <this> text"})
    assert r.status_code == 400
    html = r.content.decode()
    assert '<li data-field="end">The capture lasts 4.917 s; the range must end by then, ' \
           'not at 9 s.</li>' in html
    assert ">keep &lt;this&gt; text</textarea>" in html
    assert '<option value="range" selected>' in html
    assert Comment.objects.count() == 0


def test_who_may_read_write_and_delete(world):
    capture, clients = world["capture"], world["clients"]
    alice, bob, mallory = clients["alice"], clients["bob"], clients["mallory"]
    r = alice.post(_api(capture), {"kind": "finding", "finding": "cpu-use", "body": "mine"})
    mine = r.json()["id"]
    body = {"kind": "finding", "finding": "cpu-use", "body": "from outside"}

    # an outsider: 404 on the page, the form, the delete and every API endpoint
    assert mallory.get(_page(capture)).status_code == 404
    assert mallory.post(f"{_page(capture)}comments/", body).status_code == 404
    assert mallory.post(f"{_page(capture)}comments/{mine}/delete/").status_code == 404
    assert mallory.get(_api(capture)).status_code == 404
    assert mallory.post(_api(capture), body).status_code == 404
    assert mallory.delete(f"{_api(capture)}{mine}/").status_code == 404
    token = {"HTTP_AUTHORIZATION": f"Token {world['keys']['mallory']}"}
    assert Client().get(_api(capture), **token).status_code == 404
    assert Client().post(_api(capture), body, **token).status_code == 404
    assert Client().delete(f"{_api(capture)}{mine}/", **token).status_code == 404
    # nobody signed in: the sign-in page, or 401/403 from the API
    anonymous = Client()
    r = anonymous.post(f"{_page(capture)}comments/", body)
    assert r.status_code == 302 and "/login/" in r["Location"]
    assert anonymous.get(_api(capture)).status_code in (401, 403)
    assert anonymous.post(_api(capture), body).status_code in (401, 403)

    # the share link: the comments, read-only (no form, no delete), POST refused
    token = world["link"].url_token
    shared = anonymous.get(f"/s/{token}/")
    assert shared.status_code == 200
    page = _comments(shared.content)
    assert [(c["author"], c["body"], c["delete"]) for c in page.lists["comment-list"]] == \
        [("alice", "mine", False)]
    assert b'id="comment-form"' not in shared.content and b"/comments/" not in shared.content
    assert anonymous.post(f"/s/{token}/", body).status_code == 405
    assert anonymous.post(f"/s/{token}/data/flame.json", body).status_code == 405
    # the link's secret is no API token
    r = Client().post(_api(capture), body, HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 401
    # signed in as a member, the shared page is read-only too
    assert b'id="comment-form"' not in alice.get(f"/s/{token}/").content

    # a teammate reads them but deletes only their own
    assert [c["body"] for c in bob.get(_api(capture)).json()] == ["mine"]
    r = bob.post(f"{_page(capture)}comments/{mine}/delete/")
    assert r.status_code == 403 and r.content == b"You can delete only your own comments."
    r = bob.delete(f"{_api(capture)}{mine}/")
    assert r.status_code == 403
    assert r.json() == {"detail": "you can delete only your own comments"}
    assert Comment.objects.filter(pk=mine).exists()
    # the form needs its CSRF token
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(world["alice"])
    assert csrf.post(f"{_page(capture)}comments/", body).status_code == 403
    assert csrf.post(f"{_page(capture)}comments/{mine}/delete/").status_code == 403
    assert csrf.post(_api(capture), body).status_code == 403  # the session needs it too
    assert Comment.objects.count() == 1
    # the author deletes: through the page, and (another one) through the API
    r = alice.post(f"{_page(capture)}comments/{mine}/delete/")
    assert r.status_code == 302 and r["Location"] == f"{_page(capture)}#comments"
    assert alice.post(f"{_page(capture)}comments/{mine}/delete/").status_code == 404
    again = alice.post(_api(capture), body).json()["id"]
    assert alice.delete(f"{_api(capture)}{again}/").status_code == 204
    assert alice.delete(f"{_api(capture)}{again}/").status_code == 404
    assert Comment.objects.count() == 0
    # a comment id of another capture is not found through this one
    other = Comment.objects.create(capture=capture, author=world["alice"], body="x",
                                   kind="finding", finding="cpu-use")
    assert alice.delete(f"/api/v1/captures/{capture.pk + 1000}/comments/{other.pk}/") \
        .status_code == 404
    # deleting the capture takes its comments with it
    assert alice.delete(f"/api/v1/captures/{capture.pk}/").status_code == 200
    assert Comment.objects.count() == 0


def test_names_and_bodies_are_text(world, django_user_model):
    capture = world["capture"]
    hostile = django_user_model.objects.create_user(IMG_NAME, password="pw-hostile-123")
    Membership.objects.create(team=capture.build.service.team, user=hostile)
    client = Client()
    client.force_login(hostile)
    for data in ({"kind": "finding", "finding": "nothing-notable", "body": SCRIPT},
                 {"kind": "function", "function": INVOKE, "body": SCRIPT}):
        assert client.post(f"{_page(capture)}comments/", data).status_code == 302
    assert get_user_model().objects.get(pk=hostile.pk).username == IMG_NAME
    for url in (_page(capture), f"/s/{world['link'].url_token}/"):
        r = client.get(url)
        html = r.content.decode()
        # no tag made of them: only the escaped text
        assert SCRIPT not in html and IMG_NAME not in html and INVOKE not in html, url
        assert "&lt;script&gt;alert(&quot;body&quot;)&lt;/script&gt; &amp; then" in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
        page = _comments(r.content)
        assert [(c["author"], c["body"], c["target"]) for c in page.lists["comment-list"]] == [
            (IMG_NAME, SCRIPT, "finding nothing-notable"),
            (IMG_NAME, SCRIPT, f"function {INVOKE}")]
        assert [(c["author"], c["body"]) for c in page.lists["finding:nothing-notable"]] == [
            (IMG_NAME, SCRIPT)]
        assert not [s for s in page.scripts if s.startswith("inline:")]  # no script of theirs
    # the API gives the text as it was written (JSON, no markup)
    listed = client.get(_api(capture)).json()
    assert [(c["author"], c["body"], c["function"]) for c in listed] == [
        (IMG_NAME, SCRIPT, None), (IMG_NAME, SCRIPT, INVOKE)]


def test_a_function_name_past_1000_characters_is_kept_whole(django_user_model):
    """Review M1: a comment stores the profile's name of its function, and C++ templates
    spell names of thousands of characters (the column held 1,000: a DataError, 500).
    Spinpool 1.1.0 busy's perf script with qualla::ThreadPool::loop renamed to a
    3,114-character template, uploaded as text and analysed."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from perfweb.captures import services
    from perfweb.captures.uploads import store_upload

    from .conftest import SPINPOOL
    team = Team.objects.create(name="inference")
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    Membership.objects.create(team=team, user=alice)
    long = LOOP + "<" + ", ".join(f"std::array<unsigned char, {n}>" for n in range(100)) \
        + ">"
    assert len(long) == 3114
    script = (SPINPOOL / "1.1.0-busy.truth-script.txt").read_text()
    assert script.count(LOOP) > 100
    capture, _ = store_upload(alice, team, {
        "service": "llm-api", "version": "1.1.0", "label": "busy",
        "capture": SimpleUploadedFile("busy.perf-script.txt",
                                      script.replace(LOOP, long).encode())})
    services.run_analysis(capture.pk)
    fid = next(f.id for f in stored_profile(capture).functions if f.name == long)
    token = {"HTTP_AUTHORIZATION": f"Token {create_token(alice, 't', ADMIN)}"}
    r = Client().post(_api(capture), {"kind": "function", "function_id": fid,
                                      "body": "by id"}, content_type="application/json",
                      **token)
    assert r.status_code == 201, r.content
    assert r.json()["function"] == long and r.json()["function_id"] == fid
    r = Client().post(_api(capture), {"kind": "function", "function": long, "body": "by name"},
                      content_type="application/json", **token)
    assert r.status_code == 201 and r.json()["function_id"] == fid
    assert [len(c.function) for c in Comment.objects.all()] == [3114, 3114]
