"""Pages around captures: a service's history across builds, comparisons, share links,
personal API tokens, exports and the debuginfod endpoints."""
from __future__ import annotations

import hmac
import re
import secrets
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST


from . import access, rate_limits
from .ids import parse_id
from .api_tokens import DEFAULT_SCOPE, READ, SCOPES, create_token, revoke_token, \
    user_for_token
from .client_address import client_address
from .explore_views import data_response, load_profile
from .compare_exports import COMPARE_EXPORTS, compare_export_response
from .exports import export_response
from .services import buildids
from .services.history import comparison, history, previous_capture
from .services.share_uses import link_uses, record_use
from .share_links import share_url, view_query
from .templatetags.numbers import of_percent, points, signed_percent
from .models import ApiToken, BuildIdEntry, Capture, Membership, ShareLink
from .services import retention
from .uploads import exact_size, team_quota, team_usage
from .views import capture_context, capture_gone, capture_page, status_payload

BUILD_ID = re.compile(r"[0-9a-fA-F]{2,64}")


# ---- history ------------------------------------------------------------------------------
@login_required
def service_detail(request, pk: int):
    service = get_object_or_404(access.services_of(request.user), pk=pk)
    builds = service.builds.order_by("created_at").prefetch_related("captures__results")
    done = Capture.objects.filter(build__service=service, status=Capture.Status.DONE) \
        .select_related("build").order_by("build__created_at", "created_at")
    return render(request, "captures/service.html",
                  {"service": service, "builds": builds, "done": done})


@login_required
def service_history(request, pk: int):
    service = get_object_or_404(access.services_of(request.user), pk=pk)
    return JsonResponse(history(service))


# ---- comparisons ------------------------------------------------------------------------------
class Purged(Exception):
    """A side of a comparison is gone: the retention policy deleted it."""
    def __init__(self, purged: list, before, after):
        super().__init__(purged)
        self.purged, self.before, self.after = purged, before, after


def _pair(request, a: int, b: int):
    """Two analyzed captures the user may see, and their comparison."""
    before, after = _pair_captures(request, a, b)
    data = comparison(before, after, tree=True)
    if data is None:
        raise Http404("no result yet")
    return before, after, data


def _purged_sides(user, a: int, b: int) -> None:
    """Raise Purged when a side the user's team had was deleted by the retention policy
    (the other side still there, or purged too); otherwise nothing."""
    mine = access.captures_of(user).select_related("build__service")
    sides, gone = zip(*(retention.capture_or_purged(user, pk, mine) for pk in (a, b)))
    if any(gone) and all(c is not None or p is not None for c, p in zip(sides, gone)):
        raise Purged([p for p in gone if p is not None], *sides)


def _compare_purged(request, e: Purged):
    """The comparison cannot be computed again; what the later capture's analysis said
    of it when both were there is still shown."""
    stored = None
    if e.after is not None and e.before is None:
        result = e.after.latest_result()
        cmp = result.comparison if result is not None else None
        if cmp and (cmp.get("before") or {}).get("id") == e.purged[0].capture_id:
            stored = {"verdict": cmp.get("verdict"), "reason": cmp.get("reason")}
    rows = [{"p": p, "sentence": p.sentence} for p in e.purged]
    return render(request, "captures/compare_purged.html",
                  {"purged": rows, "before": e.before, "after": e.after, "stored": stored},
                  status=410)


def _purged_json(e: Purged):
    return JsonResponse({"detail": " ".join(p.sentence for p in e.purged),
                         "purged": [{"capture": p.capture_id,
                                     "deleted_at": p.deleted_at.isoformat(),
                                     "retention_days": p.retention_days}
                                    for p in e.purged]}, status=410)


@login_required
def compare_page(request, a: int, b: int):
    try:
        before, after, data = _pair(request, a, b)
    except Purged as e:
        return _compare_purged(request, e)
    context = _compare_context(before, after, data)
    links = list(ShareLink.objects.filter(capture=before, compare_with=after)
                 .order_by("-created_at"))
    uses = link_uses(links, timezone.now().date())
    context["share_links"] = [(link, share_url(request, link), uses[link.pk])
                              for link in links]
    context["sharing"] = True  # (a share link's visitor makes no links)
    context["share_error"] = request.GET.get("share_error") == "days" and \
        "Expires after: a whole number of days from 1 to 365, or empty for a link that " \
        "does not expire."
    return render(request, "captures/compare.html", context)


def _compare_context(before: Capture, after: Capture, data: dict, token: str = "") -> dict:
    """What the compare page shows, for the team or (`token`) a share link's visitor."""
    context = {"before": before, "after": after, "cmp": data, "token": token,
               "exports": [(fmt, reverse("shared-compare-export", args=[token, fmt])
                            if token else reverse("compare-export",
                                                  args=[before.pk, after.pk, fmt]))
                           for fmt in COMPARE_EXPORTS]}
    per = data.get("cpu_per_unit") or {}
    if "change" in per:
        context.update(cpu_ms_before=f"{1e3 * per['before']:.4g}",
                       cpu_ms_after=f"{1e3 * per['after']:.4g}",
                       per_unit_change=signed_percent(per["change"]))
    context["blocked_rows"] = blocked_rows(data.get("blocked") or [])
    context["blocked_unit"] = next((r["unit"] for r in context["blocked_rows"]
                                    if r["unit"]), "")
    return context


#: points of the threads' time a benign kind (waiting for work) must move to be shown
BLOCKED_SHOWN_PP = 1.0


def _seconds_per_second(value: float) -> str:
    return f"{value:.2f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2g}"


def _per_unit(before: float, after: float) -> tuple[str, str, str]:
    """Both seconds per unit of work in one scale (ms, or µs / s at the ends)."""
    big = max(abs(before), abs(after))
    scale, name = (1, "s") if big >= 10 else (1e6, "µs") if 0 < big < 1e-4 else (1e3, "ms")
    return f"{before * scale:.3g}", f"{after * scale:.3g}", name


def blocked_rows(rows: list[dict]) -> list[dict]:
    """The comparison's blocked-time kinds the compare page shows, formatted as the
    movers are (numbers.py): every kind that is not waiting for work, and those that are
    if they moved a point or more.
    Older comparisons have no `blocked`: nothing."""
    out = []
    for r in rows:
        benign = bool(r.get("benign"))
        change = r.get("change") or 0.0
        if benign and abs(change) < BLOCKED_SHOWN_PP:
            continue
        row = {"kind": r.get("kind", ""), "benign": benign,
               "where": (r.get("under") or [""])[0],
               "before": of_percent(r.get("before") or 0.0),
               "after": of_percent(r.get("after") or 0.0),
               "change": points(change),
               "per_second_before": _seconds_per_second(r.get("per_second_before") or 0.0),
               "per_second_after": _seconds_per_second(r.get("per_second_after") or 0.0),
               "unit": "", "per_unit": None}
        if r.get("per_unit_before") is not None and r.get("per_unit_after") is not None:
            row["unit"] = r.get("unit") or "unit"
            row["per_unit"] = _per_unit(r["per_unit_before"], r["per_unit_after"])
        out.append(row)
    return out


@login_required
def compare_data(request, a: int, b: int):
    try:
        return JsonResponse(_pair(request, a, b)[2])
    except Purged as e:
        return _purged_json(e)


def _pair_captures(request, a: int, b: int, done: bool = True) -> tuple[Capture, Capture]:
    """The two captures the user may see, analyzed (`done`) or not (Purged when a side
    was purged), without comparing them."""
    _purged_sides(request.user, a, b)
    qs = access.captures_of(request.user)
    if done:
        qs = qs.filter(status=Capture.Status.DONE)
    return get_object_or_404(qs, pk=a), get_object_or_404(qs, pk=b)


@login_required
def compare_export(request, a: int, b: int, fmt: str):
    try:
        before, after = _pair_captures(request, a, b)
    except Purged as e:
        return _purged_json(e)
    return rate_limits.limited(request, rate_limits.member_scopes(request),
                               lambda: compare_export_response(before, after, fmt),
                               json=False)


@login_required
@require_POST
def compare_share_create(request, a: int, b: int):
    """A read-only link to this comparison (its page, data and exports); the user must
    see both captures (one being analyzed again keeps its last result meanwhile)."""
    try:
        before, after = _pair_captures(request, a, b, done=False)
    except Purged as e:
        return _compare_purged(request, e)
    expires, bad = _expiry(request.POST.get("days", ""))
    if bad:
        return redirect(f"{reverse('compare', args=[a, b])}?share_error=days#sharing")
    with transaction.atomic():  # as share_create: a purge of either side waits, or won
        if Capture.objects.select_for_update().filter(pk__in=[a, b]).count() != 2:
            raise Http404("a capture is gone")
        ShareLink.objects.create(capture=before, compare_with=after,
                                 token=secrets.token_urlsafe(24), created_by=request.user,
                                 expires_at=expires)
    messages.info(request, "Share link created: it is the first in the list below.")
    return redirect(f"{reverse('compare', args=[a, b])}#sharing")


@login_required
@require_POST
def compare_share_revoke(request, a: int, b: int, link_id: int):
    before, after = (get_object_or_404(access.captures_of(request.user), pk=pk)
                     for pk in (a, b))
    ShareLink.objects.filter(pk=link_id, capture=before, compare_with=after,
                             revoked_at=None).update(revoked_at=timezone.now())
    messages.info(request, "Share link revoked.")
    return redirect(f"{reverse('compare', args=[a, b])}#sharing")


def _expiry(raw: str):
    """(expiry or None, refused): days from 1 to 365, or empty for a link that does not
    expire."""
    raw = raw.strip()
    days = parse_id(raw)
    if raw and (days is None or not 0 < days <= 365):
        return None, True
    return (timezone.now() + timedelta(days=days) if days else None), False


@login_required
@require_GET
def compare_pick(request):
    a, b = parse_id(request.GET.get("a")), parse_id(request.GET.get("b"))
    if a is None or b is None:
        raise Http404("pick two captures")
    return redirect("compare", a=a, b=b)


@login_required
def compare_previous(request, pk: int):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    prev = previous_capture(capture)
    if prev is None:
        messages.info(request, "No earlier build of this service has a capture labelled "
                               f"“{capture.label}” to compare with.")
        return redirect(capture)
    return redirect("compare", a=prev.pk, b=capture.pk)


# ---- exports ---------------------------------------------------------------------------------
@login_required
def capture_export(request, pk: int, fmt: str):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    return rate_limits.limited(request, rate_limits.member_scopes(request),
                               lambda: export_response(capture, fmt, request), json=False)


# ---- share links --------------------------------------------------------------------------------
@login_required
@require_POST
def share_create(request, pk: int):
    capture, purged = retention.capture_or_purged(request.user, pk)
    if capture is None:
        return capture_gone(request, purged)
    if capture.latest_result() is None:  # (a failed or unfinished analysis: no page)
        return capture_page(request, capture, status=400, extra={
            "share_error": "This capture has no analysis to share: it has not finished, "
                           "or it failed."})
    raw = request.POST.get("days", "").strip()
    expires, bad = _expiry(raw)
    if bad:
        return capture_page(request, capture, status=400, extra={
            "share_error": "Expires after: a whole number of days from 1 to 365, or empty "
                           f"for a link that does not expire (not {raw[:20]!r})."})
    view = view_query(request.POST.get("view", ""))
    # the capture row locked while the link goes in: a purge of the same capture waits
    # (and then keeps it, the link being live), or has committed: 410 or 404
    with transaction.atomic():
        if not Capture.objects.select_for_update().filter(pk=capture.pk).exists():
            return capture_gone(request, retention.purged_of(request.user, capture.pk))
        ShareLink.objects.create(capture=capture, token=secrets.token_urlsafe(24),
                                 created_by=request.user, expires_at=expires, view=view)
    messages.info(request, "Share link created: it is the first in the list below.")
    # back to the same view, at the Share card with the new link in it
    return redirect(f"{capture.get_absolute_url()}{'?' + view if view else ''}#sharing")


@login_required
@require_POST
def share_revoke(request, pk: int, link_id: int):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    ShareLink.objects.filter(pk=link_id, capture=capture, compare_with=None,
                             revoked_at=None).update(revoked_at=timezone.now())
    messages.info(request, "Share link revoked.")
    return redirect(capture)


def _shared(request, token: str) -> ShareLink | None:
    """The valid link a URL token names; None otherwise."""
    raw, _, secret = token.partition(".")
    pk = parse_id(raw)
    if pk is None or not secret:
        return None
    link = ShareLink.objects.select_related("capture__build__service").filter(
        pk=pk).first()
    if link is None or not hmac.compare_digest(link.token.encode(), secret.encode()) or \
            not link.valid(timezone.now()):
        return None
    return link


def _served_shared(request, link: ShareLink, serve, json: bool, compute: bool = True):
    """`serve()` within the link's and the client's rate limits, its use counted (a
    refused request is not a use: a flood of them writes nothing)."""
    def counted():
        record_use(link, client_address(request), request.META.get("HTTP_USER_AGENT", ""),
                   timezone.now())
        return serve()
    return rate_limits.limited(request, rate_limits.share_scopes(request, link), counted,
                               json=json, compute=compute)


def _gone(request):
    return render(request, "captures/link_invalid.html", status=410)


@require_GET
def shared_capture(request, token: str):
    link = _shared(request, token)
    if link is None:
        return _gone(request)
    if link.compare_with_id is not None:
        return _served_shared(request, link, lambda: _shared_compare_page(
            request, link, token), json=False)
    return _served_shared(request, link, lambda: render(
        request, "captures/capture.html", capture_context(link.capture, token)), json=False,
        compute=False)


@require_GET
def shared_data(request, token: str, kind: str):
    link = _shared(request, token)
    if link is None:
        return JsonResponse({"error": "link no longer valid"}, status=410)
    if link.compare_with_id is not None:  # a comparison's link: its data, nothing else
        if kind != "compare":
            return JsonResponse({"error": "not found"}, status=404)
        return _served_shared(request, link, lambda: _shared_comparison_json(link),
                              json=True)
    if kind == "status":
        return _served_shared(request, link, lambda: JsonResponse(
            status_payload(link.capture)), json=True, compute=False)
    return _served_shared(request, link, lambda: data_response(
        request, load_profile(link.capture), kind, link.capture), json=True)


def _shared_compare_page(request, link: ShareLink, token: str):
    data = comparison(link.capture, link.compare_with, tree=True)
    if data is None:
        return _gone(request)
    return render(request, "captures/compare.html",
                  _compare_context(link.capture, link.compare_with, data, token))


def _shared_comparison_json(link: ShareLink):
    data = comparison(link.capture, link.compare_with)
    if data is None:
        return JsonResponse({"error": "no result yet"}, status=404)
    return JsonResponse(data)


@require_GET
def shared_compare_export(request, token: str, fmt: str):
    """A comparison link's exports (a capture's link has none)."""
    link = _shared(request, token)
    if link is None:
        return _gone(request)
    if link.compare_with_id is None:
        raise Http404("not a comparison")
    return _served_shared(request, link, lambda: compare_export_response(
        link.capture, link.compare_with, fmt), json=False)


# ---- teams ------------------------------------------------------------------------------------
class RetentionForm(forms.Form):
    retention_days = forms.IntegerField(
        required=False, min_value=1, max_value=36500, label="Keep captures (days)",
        help_text="Empty: keep them for ever.")


@login_required
def teams(request):
    return render(request, "captures/teams.html", {
        "memberships": Membership.objects.filter(user=request.user)
        .select_related("team").order_by("team__name")})


@login_required
def team_detail(request, pk: int):
    team = get_object_or_404(access.teams_of(request.user), pk=pk)
    form = RetentionForm(initial={"retention_days": team.retention_days})
    return _team_page(request, team, form)


@login_required
@require_POST
def team_settings(request, pk: int):
    """A team admin sets the retention; other members see it and are refused (403), and
    outsiders do not find the team (404)."""
    team = get_object_or_404(access.teams_of(request.user), pk=pk)
    form = RetentionForm(request.POST)
    if not Membership.objects.filter(team=team, user=request.user, admin=True).exists():
        form = RetentionForm(initial={"retention_days": team.retention_days})
        return _team_page(request, team, form, status=403,
                          refused="Only the team's admins may change its settings.")
    if not form.is_valid():
        return _team_page(request, team, form, status=400)
    team.retention_days = form.cleaned_data["retention_days"]
    team.save(update_fields=["retention_days"])
    messages.info(request, "Captures are now kept for ever." if team.retention_days is None
                  else f"Captures are now kept {_days(team.retention_days)}; older ones are "
                       f"deleted by the next purge, except those a live share link shows.")
    return redirect("team", pk=team.pk)


def _days(n: int) -> str:
    return f"{n} day{'s' if n != 1 else ''}"


def _team_page(request, team, form, status: int = 200, refused: str = ""):
    now = timezone.now()
    used, quota = team_usage(team), team_quota(team)
    memberships = team.membership_set.select_related("user").order_by("user__username")
    return render(request, "captures/team.html", {
        "team": team, "form": form, "memberships": memberships,
        "is_admin": any(m.user_id == request.user.pk and m.admin for m in memberships),
        "used": exact_size(used), "quota": exact_size(quota),
        "used_percent": f"{100 * used / quota:.1f}" if quota else "",
        "own_quota": team.quota_bytes is not None,
        "retention": None if team.retention_days is None else _days(team.retention_days),
        "pinned": retention.pinned(team, now).count(),
        "expired": retention.expired(team, now).count(),
        "purged": team.purged.order_by("-deleted_at", "-capture_id")[:50],
        "purged_count": team.purged.count(), "refused": refused}, status=status)


# ---- API tokens ------------------------------------------------------------------------------
@login_required
def tokens(request):
    new_key, new_scope, error = None, None, None
    if request.method == "POST":
        if "revoke" in request.POST:
            token_id = parse_id(request.POST["revoke"])
            if token_id is None:
                raise Http404("no such token")
            revoke_token(request.user, token_id)
        else:
            new_scope = request.POST.get("scope", DEFAULT_SCOPE)
            if new_scope in SCOPES:
                new_key = create_token(request.user, request.POST.get("name", "").strip(),
                                       new_scope)
            else:
                error = f"Choose the token's scope: {', '.join(SCOPES)}."
    return render(request, "captures/tokens.html", {
        "tokens": request.user.api_tokens.order_by("-created_at"), "new_key": new_key,
        "new_scope": new_scope, "error": error, "scopes": ApiToken.SCOPES,
        "default_scope": DEFAULT_SCOPE}, status=400 if error else 200)


# ---- debuginfod --------------------------------------------------------------------------------
@require_GET
def debuginfod(request, key: str, build_id: str, kind: str):
    """The debuginfod protocol for the symbol files a token's teams uploaded:
    DEBUGINFOD_URLS=https://perfweb.example/debuginfod/<token>, a token of any scope
    (read is enough: every scope allows reading)."""
    user = user_for_token(key, READ)
    if user is None or kind not in ("debuginfo", "executable") or \
            not BUILD_ID.fullmatch(build_id):
        raise Http404()
    entry = BuildIdEntry.objects.filter(
        build_id=build_id.lower(), kind=kind,
        symbol_file__in=access.symbol_files_of(user)).first()
    if entry is None:
        raise Http404()
    f = buildids.open_member(entry)  # that member alone, never the whole bundle
    if f is None:
        raise Http404()
    return FileResponse(f, content_type="application/octet-stream")

