"""Pages and downloads. Every object is looked up through access.py, so members of other
teams get 404 everywhere."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from . import access, pipeline, rate_limits
from .services import deletion, retention
from .services.comments import comments_context
from .services.history import previous_capture
from .services.share_uses import link_uses
from .share_links import share_url
from .explore_views import DATA
from .exports import export_response
from .forms import SymbolUploadForm, UploadForm
from .models import Service
from .own_teams import teams_for_upload
from .upload_limits import STORAGE_FULL, storage_full
from .uploads import (QuotaExceeded, StorageFull, human_size, store_build_symbols,
                      store_upload)


@login_required
def home(request):
    services = access.services_of(request.user).prefetch_related("builds__captures__results")
    return render(request, "captures/home.html", {"services": services})


@login_required
def upload(request):
    """Reading the page creates nothing: a user without a team is told that their first
    upload makes one of their own, and store_upload makes it (team None)."""
    teams = teams_for_upload(request.user)
    services = Service.objects.filter(team__in=teams).values_list("name", flat=True)
    form = UploadForm(request.POST or None, request.FILES or None, teams=teams,
                      services=services,
                      initial={"team": str(teams[0].pk)} if teams else None)
    if request.method == "POST" and storage_full(request):
        form = UploadForm(teams=teams, services=services)
        form.add_error(None, STORAGE_FULL)
        return _upload_refused(request, form, status=507)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        team = next((t for t in teams if str(t.pk) == d.get("team")), teams[0]) \
            if teams else None
        try:
            capture, created = store_upload(request.user, team, d)
        except (QuotaExceeded, StorageFull) as e:
            form.add_error(None, str(e))
            return _upload_refused(request, form,
                                   status=507 if isinstance(e, StorageFull) else 400)
        if not created:
            messages.info(request, "This exact file was already uploaded to this build; "
                                   "here is that capture.")
        if request.headers.get("Accept") == "application/json":
            return JsonResponse({"capture": capture.pk, "url": capture.get_absolute_url(),
                                 "duplicate": not created})
        return redirect(capture)
    if request.method == "POST":
        return _upload_refused(request, form)
    return render(request, "captures/upload.html", {"form": form})


def _upload_refused(request, form, status: int = 400):
    if request.headers.get("Accept") == "application/json":
        return JsonResponse({"errors": form.errors.get_json_data()}, status=status)
    return render(request, "captures/upload.html", {"form": form}, status=status)


@login_required
def capture_detail(request, pk: int):
    capture, purged = retention.capture_or_purged(request.user, pk, access.captures_of(
        request.user).select_related("build__service__team"))
    if capture is None:
        return capture_gone(request, purged)
    return capture_page(request, capture)


def capture_gone(request, purged):
    """A capture that is not there: the page saying when the retention policy deleted it
    (410, `purged` being of the user's team, so not an outsider), or 404."""
    if purged is None:
        raise Http404()
    return render(request, "captures/capture_purged.html", {"p": purged}, status=410)


def capture_page(request, capture, status: int = 200, extra: dict | None = None):
    """The page for a team member (`extra`: a refused comment's errors and fields)."""
    context = capture_context(capture)
    links = list(capture.share_links.filter(compare_with=None).order_by("-created_at"))
    uses = link_uses(links, timezone.now().date())
    context["share_links"] = [(link, share_url(request, link), uses[link.pk])
                              for link in links]
    context.update(extra or {})
    return render(request, "captures/capture.html", context, status=status)


def capture_context(capture, share_token: str | None = None) -> dict:
    """The capture page's context, for team members, or read-only through a share link
    (then its data comes from the link's URLs and nothing team-only is shown)."""
    result = capture.latest_result()
    report = result.report if result else None
    shared = share_token is not None
    if shared:
        urls = {kind: reverse("shared-data", args=[share_token, kind])
                for kind in (*DATA, "status")}
    else:
        urls = {kind: reverse(f"data-{kind}", args=[capture.pk]) for kind in DATA}
        urls["status"] = reverse("capture-status", args=[capture.pk])
    context = {"capture": capture, "report": report, "shared": shared, "urls": urls,
               "size": human_size(capture.size),
               "symbol_files": [] if shared else list(capture.build.symbol_files.all()) +
               list(capture.symbol_files.all())}
    if report:
        context["meta"] = report["metadata"]
        context["findings"] = [dict(f, focus_query=_focus_query(f))
                               for f in result.findings()]
        context["comparison"] = result.comparison
        before_id = ((result.comparison or {}).get("before") or {}).get("id")
        # the capture compared with, if the retention policy deleted it since (said next
        # to the verdict and, on the share link's page too, under the regression finding)
        context["before_purged"] = None if before_id is None else \
            retention.purged_in(capture.build.service.team_id, before_id)
        # a link to compare only where there is a capture to compare with
        context["previous"] = None if shared else previous_capture(capture)
    context.update(comments_context(capture, context.get("findings")))
    return context


#: findings about time off the CPU: their evidence is in the off-CPU view
OFF_CPU_RULES = ("blocked-time", "waiting-for-cpu")


def _focus_query(finding: dict) -> str:
    """The flame graph URL state that shows a finding's evidence."""
    focus = finding.get("focus") or {}
    params = ["time=off-cpu"] if finding.get("rule") in OFF_CPU_RULES and focus else []
    if focus.get("functions"):
        params.append(f"focus={int(focus['functions'][0]['id'])}")
    if focus.get("threads"):
        params.append("tids=" + ",".join(str(int(t)) for t in focus["threads"]))
    return "?" + "&".join(params) if params else ""


@login_required
def capture_status(request, pk: int):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    return JsonResponse(status_payload(capture))


def status_payload(capture) -> dict:
    return {"status": capture.status, "progress": capture.progress, "error": capture.error,
            "finished": capture.finished}


@login_required
def capture_download(request, pk: int):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    return FileResponse(capture.file.open("rb"), as_attachment=True,
                        filename=capture.original_name)


@login_required
def capture_folded(request, pk: int):
    """The folded stacks of the event and view the page shows (`?event=`, `?view=`),
    made from the saved profile, limited as the other exports are."""
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    return rate_limits.limited(request, rate_limits.member_scopes(request),
                               lambda: export_response(capture, "folded", request),
                               json=False)


@login_required
def capture_result(request, pk: int):
    """The analysis JSON contract of the capture."""
    result = get_object_or_404(access.captures_of(request.user), pk=pk).latest_result()
    if result is None:
        raise Http404("no result yet")
    return JsonResponse(result.report)


@login_required
@require_POST
def capture_retry(request, pk: int):
    capture = get_object_or_404(access.captures_of(request.user), pk=pk)
    if not capture.retryable:
        messages.error(request, "This file cannot be read as a capture; analysing it again "
                                "would fail the same way. Upload the capture again.")
    elif capture.finished:
        pipeline.retry(capture)
        messages.info(request, "The capture is queued for analysis again.")
    return redirect(capture)


def _confirm_delete(request, what: str, name: str, plan, back: str):
    return render(request, "captures/delete.html",
                  {"what": what, "name": name, "plan": plan, "back": back,
                   "size": human_size(plan.bytes)})


@login_required
def capture_delete(request, pk: int):
    """GET: what would go; POST: delete it (and its build, when nothing else is in it,
    and the service, when that build was all it had: then to the services page)."""
    capture = get_object_or_404(access.captures_of(request.user).select_related(
        "build__service"), pk=pk)
    if request.method != "POST":
        return _confirm_delete(request, "capture", str(capture),
                               deletion.plan_capture(capture), capture.get_absolute_url())
    build, service = capture.build, capture.build.service
    done = deletion.delete_capture(capture)
    messages.info(request, f"Deleted {done.summary()}.")
    if done.services:
        return redirect("home")
    return redirect(service if done.builds else build)


@login_required
def build_delete(request, pk: int):
    build = get_object_or_404(access.builds_of(request.user).select_related("service"),
                              pk=pk)
    if request.method != "POST":
        return _confirm_delete(request, "build", str(build), deletion.plan_build(build),
                               build.get_absolute_url())
    service = build.service
    messages.info(request, f"Deleted {deletion.delete_build(build).summary()}.")
    return redirect(service)


@login_required
def service_delete(request, pk: int):
    service = get_object_or_404(access.services_of(request.user), pk=pk)
    if request.method != "POST":
        return _confirm_delete(request, "service", service.name,
                               deletion.plan_service(service),
                               reverse("service", args=[service.pk]))
    messages.info(request, f"Deleted {deletion.delete_service(service).summary()}.")
    return redirect("home")


@login_required
def build_detail(request, pk: int):
    build = get_object_or_404(access.builds_of(request.user).select_related("service"),
                              pk=pk)
    form = SymbolUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            store_build_symbols(form.cleaned_data["symbols"] or [], request.user, build,
                                form.cleaned_data["sources"] or [])
        except (QuotaExceeded, StorageFull) as e:
            form.add_error(None, str(e))
        else:
            messages.info(request, "Symbol files added. Re-analyze the captures to use them.")
            return redirect(build)
    return render(request, "captures/build.html",
                  {"build": build, "form": form, "captures": build.captures.prefetch_related("results"),
                   "symbol_files": build.symbol_files.all()},
                  status=400 if form.errors else 200)


@login_required
@require_POST
def build_reanalyze(request, pk: int):
    build = get_object_or_404(access.builds_of(request.user), pk=pk)
    with transaction.atomic():
        n = pipeline.reanalyze_build(build)
    messages.info(request, f"{n} capture(s) queued for analysis again.")
    return redirect(build)


@login_required
def symbol_download(request, pk: int):
    sf = get_object_or_404(access.symbol_files_of(request.user), pk=pk)
    return FileResponse(sf.file.open("rb"), as_attachment=True, filename=sf.original_name)
