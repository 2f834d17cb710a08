"""Comments on the capture page: team members add them (a form, POST with CSRF) and
delete their own; the page and share links show them read-only (the shared page has no
form, and its URLs take no POST). The API's endpoints are in api/views.py; both create
through services/comments.py, which also says how a comment is shown (comment_json,
comments_context)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from . import access
from .models import Comment
from .services import retention
from .services.comments import CaptureGone, CommentInvalid, create_comment
from .views import capture_gone, capture_page


@login_required
@require_POST
def comment_create(request, pk: int):
    capture, purged = retention.capture_or_purged(request.user, pk, access.captures_of(
        request.user).select_related("build__service__team"))
    if capture is None:
        return capture_gone(request, purged)
    try:
        comment = create_comment(capture, request.user, request.POST)
    except CaptureGone as e:  # purged (or deleted) since it was looked up
        return capture_gone(request, e.purged)
    except CommentInvalid as e:
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
