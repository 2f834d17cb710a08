"""Comments on a capture: what a team member may say about one of its findings, a
function of its profile or a time range of its timeline, checked against the capture's
analysis (the page's form and the API create them here, with the same messages), and
how a comment is shown: the API's JSON and the capture page's rows (both views import
them from here)."""
from __future__ import annotations

import math
from urllib.parse import urlencode

from django.db import transaction

from ..ids import parse_id
from ..models import Capture, Comment, PurgedCapture
from .profiles import stored_profile
from .retention import purged_in

#: how far past the stated duration a range may end (the report rounds it)
DURATION_SLACK_S = 1e-3


class CommentInvalid(ValueError):
    """What is wrong, per field ("body", "kind", "finding", "function", "start", "end",
    or "capture" for the capture itself), in sentences a person can act on."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class CaptureGone(Exception):
    """The capture was deleted (`purged`: by the retention policy, else None) between the
    view's lookup and the comment's insert."""

    def __init__(self, purged: PurgedCapture | None):
        super().__init__(purged.sentence if purged is not None else "capture deleted")
        self.purged = purged


def _text(data, key: str) -> str:
    value = data.get(key)
    return "" if value is None else str(value)


def _seconds(data, key: str, errors: dict) -> float | None:
    raw = _text(data, key).strip()
    if not raw:
        errors[key] = f"Give the range's {key} in seconds from the capture's start."
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        errors[key] = f"The {key} must be a number of seconds, not {raw[:40]!r}."
        return None
    return value


def _function(capture, data, errors: dict) -> tuple[str, int | None]:
    """The function a comment names: by `function_id` (the explorer's focus) or by its
    name (as the flame graph and the functions table spell it), in the capture's
    stored profile."""
    name = _text(data, "function").strip()
    raw_id = _text(data, "function_id").strip()
    if not name and not raw_id:
        errors["function"] = "Name the function the comment is about."
        return "", None
    if len(name) > Comment.MAX_FUNCTION:
        errors["function"] = f"A function name is at most {Comment.MAX_FUNCTION:,} " \
                             "characters."
        return "", None
    profile = stored_profile(capture)
    if profile is None:
        errors["function"] = "The capture has no stored profile to find the function in; " \
                             "analyze it again."
        return "", None
    functions = profile.functions
    if raw_id:
        fid = parse_id(raw_id)
        if fid is None or fid >= len(functions):
            errors["function"] = f"This capture has no function with id {raw_id[:20]!r}."
            return "", None
        f = functions[fid]
        if name and name not in (f.name, f.system_name):
            errors["function"] = f"Function {fid} of this capture is {f.name!r}, " \
                                 f"not {name!r}."
            return "", None
        return f.name, f.id
    f = next((f for f in functions if f.name == name), None) or \
        next((f for f in functions if f.system_name == name), None)
    if f is None:
        errors["function"] = f"This capture has no function named {name!r} (names are " \
                             "matched exactly, as the functions table shows them)."
        return "", None
    return f.name, f.id


def create_comment(capture, author, data) -> Comment:
    """A new comment on `capture` (which the caller has checked `author` may see) from
    `data` (a form's or a request's fields: body, kind and the kind's target); raises
    CommentInvalid saying what is wrong."""
    errors: dict[str, str] = {}
    body = _text(data, "body").strip()
    if not body:
        errors["body"] = "Write something: the comment is empty."
    elif len(body) > Comment.MAX_BODY:
        errors["body"] = f"A comment is at most {Comment.MAX_BODY:,} characters; this one " \
                         f"has {len(body):,}."
    elif "\x00" in body:
        errors["body"] = "The comment holds a NUL character; remove it."
    kind = _text(data, "kind").strip()
    kinds = [k for k, _ in Comment.KINDS]
    if kind not in kinds:
        errors["kind"] = f"Say what the comment is about: one of {', '.join(kinds)}."
        raise CommentInvalid(errors)
    result = capture.latest_result()
    if result is None:
        errors["capture"] = "The capture is not analyzed yet; comment once its analysis " \
                            "is done."
        raise CommentInvalid(errors)
    target: dict = {}
    if kind == Comment.FINDING:
        rule = _text(data, "finding").strip()
        rules = [f["rule"] for f in result.findings()]
        if rule not in rules:
            errors["finding"] = (f"This capture has no finding {rule[:64]!r}; its findings "
                                 f"are: {', '.join(rules)}." if rules and rule else
                                 "Pick one of the capture's findings." if rules else
                                 "This capture has no findings to comment on.")
        target = {"finding": rule}
    elif kind == Comment.FUNCTION:
        name, fid = _function(capture, data, errors)
        target = {"function": name, "function_id": fid}
    else:
        start, end = _seconds(data, "start", errors), _seconds(data, "end", errors)
        duration = result.report.get("duration_s")
        if start is not None and end is not None:
            if duration is None:
                errors["start"] = "This capture's duration is not known, so it has no " \
                                  "time range to comment on."
            elif start < 0:
                errors["start"] = "The start is at 0 s (the capture's first sample) or later."
            elif end <= start:
                errors["end"] = f"The end ({end:g} s) must come after the start ({start:g} s)."
            elif end > duration + DURATION_SLACK_S:
                errors["end"] = f"The capture lasts {duration:.3f} s; the range must end " \
                                f"by then, not at {end:g} s."
        target = {"start": start, "end": end}
    if errors:
        raise CommentInvalid(errors)
    # the capture row locked while the comment goes in: a purge (or a Delete) of the
    # same capture waits, or has committed and the comment is refused (CaptureGone)
    with transaction.atomic():
        if not Capture.objects.select_for_update().filter(pk=capture.pk).exists():
            raise CaptureGone(purged_in(capture.build.service.team_id, capture.pk))
        return Comment.objects.create(capture=capture, author=author, body=body,
                                      kind=kind, **target)


# ---- how a comment is shown -------------------------------------------------------------


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
