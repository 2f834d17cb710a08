"""Comments on the capture page: team members add them (a form, POST with CSRF) and
delete their own; the page and share links show them read-only (the shared page has no
form, and its URLs take no POST). The API's endpoints are in api/views.py; both create
through services/comments.py."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from . import access
from .models import Comment
from .services.comments import CommentInvalid, create_comment


def author_name(comment) -> str:
    return comment.author.get_username() if comment.author is not None else \
        "a former member"


def explorer_query(comment) -> str:
    """The capture page's URL state that shows what the comment is about ("" for a
    finding, which is on the page itself)."""
    if comment.kind == Comment.FUNCTION and comment.function_id is not None:
        return "?" + urlencode({"focus": comment.function_id})
    if comment.kind == Comment.RANGE and comment.start is not None:
        return "?" + urlencode({"start": f"{comment.start:.3f}", "end": f"{comment.end:.3f}"})
    return ""


def target_label(comment) -> str:
    if comment.kind == Comment.FINDING:
        return f"finding {comment.finding}"
    if comment.kind == Comment.FUNCTION:
        return f"function {comment.function}"
    return f"{comment.start:.3f} s – {comment.end:.3f} s"


def comment_json(comment, user=None) -> dict:
    """A comment as the API gives it (and the page's data hooks read it)."""
    return {"id": comment.pk, "author": author_name(comment),
            "created_at": comment.created_at.isoformat(), "body": comment.body,
            "kind": comment.kind, "finding": comment.finding or None,
            "function": comment.function or None, "function_id": comment.function_id,
            "start": comment.start, "end": comment.end, "target": target_label(comment),
            "explorer_query": explorer_query(comment),
            "mine": user is not None and comment.author_id is not None and
            comment.author_id == getattr(user, "pk", None)}


def comments_context(capture, findings: list[dict] | None) -> dict:
    """The capture page's comments: every one, oldest first, with the author and what it
    is about, and each finding's own under it (`findings` gain a `comments` list)."""
    rows = []
    for c in capture.comments.select_related("author"):
        rows.append({"comment": c, "author": author_name(c), "target": target_label(c),
                     "query": explorer_query(c)})
    for f in findings or []:
        f["comments"] = [r for r in rows if r["comment"].kind == Comment.FINDING and
                         r["comment"].finding == f["rule"]]
    return {"comments": rows, "comment_kinds": Comment.KINDS,
            "comment_max": Comment.MAX_BODY}


@login_required
@require_POST
def comment_create(request, pk: int):
    capture = get_object_or_404(access.captures_of(request.user).select_related(
        "build__service__team"), pk=pk)
    try:
        comment = create_comment(capture, request.user, request.POST)
    except CommentInvalid as e:
        from .views import capture_page  # (views imports this module)
        return capture_page(request, capture, status=400, extra={
            "comment_errors": e.errors, "comment_data": request.POST})
    messages.info(request, "Comment added.")
    return redirect(f"{capture.get_absolute_url()}#comment-{comment.pk}")


@login_required
@require_POST
def comment_delete(request, pk: int, comment_id: int):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    comment = get_object_or_404(Comment, pk=comment_id, capture=capture)
    if comment.author_id != request.user.pk:
        return HttpResponseForbidden("You can delete only your own comments.",
                                     content_type="text/plain; charset=utf-8")
    comment.delete()
    messages.info(request, "Comment deleted.")
    return redirect(f"{capture.get_absolute_url()}#comments")
