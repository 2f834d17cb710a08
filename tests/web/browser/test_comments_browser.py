"""Comments on the capture page in Chromium: one added through the form shows with its
author, its time and its body as text (a <script> body runs nothing), a hostile author
name is text too, a range or function left empty takes the explorer's, and a click on a
comment brings the explorer to its function (focused) or its range (the flame graph's
total for it)."""
import re

import pytest

from perfweb.captures.models import Comment, Membership, Team
from perfweb.captures.services.profiles import stored_profile

from ..conftest import spinpool

pytestmark = pytest.mark.django_db(transaction=True)

LOOP = "qualla::ThreadPool::loop"
SCRIPT = '<script>alert("body")</script> & <b>bold</b>'
IMG_NAME = "<img src=x onerror=alert(1)>"


def test_comment_added_on_the_page(page, django_user_model):
    team = Team.objects.get(name="inference")
    alice = django_user_model.objects.get(username="alice")
    capture = spinpool(alice, "1.1.0", "busy")
    hostile = django_user_model.objects.create_user(IMG_NAME, password="pw-hostile-123")
    Membership.objects.create(team=team, user=hostile)
    Comment.objects.create(capture=capture, author=hostile, body="first", kind="finding",
                           finding="cpu-use")

    # the explorer on a range (as a drag on the timeline leaves it), then a comment on it
    url = page.base + capture.get_absolute_url()
    page.goto(url + "?start=1.000&end=2.500")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    page.select_option("#comment-kind", "range")
    assert page.is_visible("#comment-start") and not page.is_visible("#comment-function")
    page.fill("#comment-body", SCRIPT)
    page.click("#comment-submit")
    page.wait_for_url(re.compile(r"#comment-\d+$"))
    comment = Comment.objects.get(author__username="alice")
    assert (comment.kind, comment.start, comment.end, comment.body) == \
        ("range", 1.0, 2.5, SCRIPT)
    item = f"#comment-{comment.pk}"
    assert page.text_content(f"{item} .comment-author") == "alice"
    assert page.text_content(f"{item} .comment-time") == \
        comment.created_at.strftime("%Y-%m-%d %H:%M UTC")
    assert page.text_content(f"{item} .comment-body") == SCRIPT  # as typed, as text
    assert page.text_content(f"{item} .comment-target") == "1.000 s – 2.500 s"
    assert page.eval_on_selector_all("#comments script, #comments b, #comments img",
                                     "els => els.length") == 0
    # the other member's name: text, under the finding and in the list
    assert page.eval_on_selector_all(".comment-author", "els => els.map(e => e.textContent)") \
        == [IMG_NAME, IMG_NAME, "alice"]
    assert page.text_content("#finding-cpu-use .comment-body") == "first"

    # a function comment with the name left empty: the explorer's focused function
    loop = next(f for f in stored_profile(capture).functions if f.name == LOOP)
    page.goto(url + f"?focus={loop.id}")
    page.wait_for_selector("#explorer[data-flame-total]", state="attached", timeout=30000)
    page.select_option("#comment-kind", "function")
    assert page.is_visible("#comment-function") and not page.is_visible("#comment-start")
    page.fill("#comment-body", "the pool")
    page.click("#comment-submit")
    page.wait_for_url(re.compile(r"#comment-\d+$"))
    on_loop = Comment.objects.get(kind="function")
    assert (on_loop.function, on_loop.function_id, on_loop.author.username) == \
        (LOOP, loop.id, "alice")
    assert page.text_content(f"#comment-{on_loop.pk} .comment-target") == f"function {LOOP}"

    # on the whole capture (where the form sent us), a click on a comment brings the
    # explorer to its function, then to its range
    page.wait_for_selector("#explorer[data-flame-total='154']", state="attached",
                           timeout=30000)
    page.click(f"#comment-{on_loop.pk} .comment-target")
    # a function, not an expression: Playwright evaluates an expression's text in the
    # page, which the page's Content-Security-Policy (no 'unsafe-eval') refuses
    page.wait_for_function("(name) => document.getElementById('focus-label').textContent "
                           "=== name && !document.getElementById('callers-box').hidden",
                           arg=LOOP, timeout=30000)
    assert page.url.endswith(f"{capture.get_absolute_url()}?focus={loop.id}")
    r = page.answer(f"{page.base}/captures/{capture.pk}/data/flame.json"
                         "?start=1.0&end=2.5")
    in_range = r.json()["total"]
    assert 0 < in_range < 154
    page.click(f"{item} .comment-target")
    page.wait_for_selector(f"#explorer[data-flame-total='{in_range}']", state="attached",
                           timeout=30000)
    assert page.url.endswith(f"{capture.get_absolute_url()}?start=1.000&end=2.500")
    assert page.text_content("#selection-total") == str(in_range)
    assert page.dialogs == [] and page.errors == []
