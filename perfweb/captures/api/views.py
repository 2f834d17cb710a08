"""API endpoints. Every object is looked up through access.py, so another team's object
is "not found" (404), exactly as on the pages."""
from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import (APIException, NotFound, PermissionDenied,
                                       ValidationError)
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import access, held_symbols, rate_limits
from ..ids import ID_PATTERN, parse_id
from ..compare_exports import COMPARE_EXPORTS, compare_export_response
from ..exports import EXPORTS, export_response
from ..services.explore import functions_page
from ..services.history import comparison, history, previous_capture
from ..services import deletion, retention
from ..services.comments import CaptureGone, CommentInvalid, comment_json, create_comment
from ..services.profiles import stored_profile
from ..models import Build, Capture, Comment, Service
from ..upload_limits import STORAGE_FULL, storage_full
from ..own_teams import team_for_first_upload, teams_for_upload
from ..uploads import QuotaExceeded, StorageFull, store_upload
from .serializers import (BuildSerializer, CaptureSerializer, CaptureUploadSerializer,
                          HeldSymbolsSerializer, ServiceSerializer)


class NotReady(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "not_ready"


class Purged(APIException):
    """A capture of the user's team that the retention policy deleted."""
    status_code = status.HTTP_410_GONE
    default_code = "purged"


def _purged_or_404(user, pk, detail: str | None = None) -> None:
    """Raise Purged (410) for a capture the retention deleted, NotFound otherwise."""
    purged = retention.purged_of(user, pk)
    if purged is not None:
        raise Purged(purged.sentence)
    raise NotFound(detail)


def _team_for(user, name: str | None):
    """The team named, or the user's only team; None for a user in no team yet (the
    request that creates something makes them a team of their own)."""
    teams = teams_for_upload(user)
    if name:
        team = next((t for t in teams if t.name == name), None)
        if team is None:
            raise ValidationError({"team": f"you are not a member of a team named {name!r}"})
        return team
    if len(teams) > 1:
        raise ValidationError({"team": "you are in several teams; say which: "
                                       + ", ".join(t.name for t in teams)})
    return teams[0] if teams else None


def _finished(capture: Capture):
    if capture.status == Capture.Status.FAILED:
        raise NotReady(f"processing failed: {capture.error}")
    result = capture.latest_result()
    if result is None:
        raise NotReady(f"the capture is {capture.status}; poll /api/v1/captures/"
                       f"{capture.pk}/ until finished is true")
    return result


DELETED = inline_serializer("Deleted", {
    "deleted": inline_serializer("DeletedCounts", {
        "services": serializers.IntegerField(), "builds": serializers.IntegerField(),
        "captures": serializers.IntegerField(), "files": serializers.IntegerField()}),
    "summary": serializers.CharField()})


def _destroy(delete, row) -> Response:
    """What deletion.py removed (the rows, then their files once that commits), the
    same service and the same answer as the delete pages. A row another request deleted
    between the lookup and the lock is gone: 404, as the next DELETE gets."""
    try:
        done = delete(row)
    except ObjectDoesNotExist:
        raise NotFound() from None
    return Response({"deleted": {"services": done.services, "builds": done.builds,
                                 "captures": done.captures, "files": len(done.files)},
                     "summary": done.summary()})


class ServiceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                     mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Services of your teams. Creating one that exists returns it (200)."""
    lookup_value_regex = ID_PATTERN
    upload_actions = ("create", "builds")  # what an upload names (scopes.py)
    serializer_class = ServiceSerializer

    def get_queryset(self):
        return access.services_of(self.request.user).select_related("team").order_by("id")

    def create(self, request, *args, **kwargs):
        s = self.get_serializer(data=request.data)
        s.is_valid(raise_exception=True)
        team = _team_for(request.user, s.validated_data.get("team", {}).get("name"))
        with transaction.atomic():
            service, created = Service.objects.get_or_create(
                team=team or team_for_first_upload(request.user),
                name=s.validated_data["name"].strip())
        return Response(ServiceSerializer(service).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses={200: DELETED})
    def destroy(self, request, *args, **kwargs):
        """Delete the service with its builds, captures and every file they own."""
        return _destroy(deletion.delete_service, self.get_object())

    @extend_schema(request=BuildSerializer, responses=BuildSerializer(many=True))
    @action(detail=True, methods=["get", "post"])
    def builds(self, request, pk=None):
        """The service's builds, oldest first; POST creates one (or returns it, 200)."""
        service = self.get_object()
        if request.method == "POST":
            s = BuildSerializer(data=request.data)
            s.is_valid(raise_exception=True)
            build, created = Build.objects.get_or_create(
                service=service, version=s.validated_data["version"].strip(),
                defaults={"git_revision": s.validated_data.get("git_revision", ""),
                          "notes": s.validated_data.get("notes", "")})
            return Response(BuildSerializer(build).data,
                            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
        builds = service.builds.order_by("created_at")
        page = self.paginate_queryset(builds)
        return self.get_paginated_response(BuildSerializer(page, many=True).data)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True)
    def history(self, request, pk=None):
        """Chart data across builds: one point per analyzed capture, per-build shares of the
        top functions and of each finding's rule."""
        return Response(history(self.get_object()))


class BuildViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A build of your teams' services (list them under /services/{id}/builds/)."""
    lookup_value_regex = ID_PATTERN
    serializer_class = BuildSerializer

    def get_queryset(self):
        return access.builds_of(self.request.user).order_by("id")

    @extend_schema(responses={200: DELETED})
    def destroy(self, request, *args, **kwargs):
        """Delete the build with its captures, symbol files and every file they own."""
        return _destroy(deletion.delete_build, self.get_object())


@extend_schema(parameters=[
    OpenApiParameter("service", str, description="service name"),
    OpenApiParameter("version", str, description="build version"),
    OpenApiParameter("label", str)])
class CaptureViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                     viewsets.GenericViewSet):
    """Captures of your teams' services: upload, poll, read the analysis."""
    lookup_value_regex = ID_PATTERN
    upload_actions = ("create",)  # (scopes.py)
    serializer_class = CaptureSerializer

    def get_queryset(self):
        qs = access.captures_of(self.request.user).select_related("build__service") \
            .prefetch_related("results")
        params = self.request.query_params
        if params.get("service"):
            qs = qs.filter(build__service__name=params["service"])
        if params.get("version"):
            qs = qs.filter(build__version=params["version"])
        if "label" in params:
            qs = qs.filter(label=params["label"])
        return qs.order_by("-created_at")

    def get_object(self):
        """A capture of the user's team that the retention policy deleted is a 410 with
        the sentence saying when and why; any other missing capture a 404."""
        capture, _ = retention.capture_or_purged(
            self.request.user, self.kwargs.get(self.lookup_field), self.get_queryset())
        if capture is None:
            _purged_or_404(self.request.user, self.kwargs.get(self.lookup_field),
                           "No Capture matches the given query.")  # (as DRF says it)
        self.check_object_permissions(self.request, capture)
        return capture

    @extend_schema(request={"multipart/form-data": CaptureUploadSerializer},
                   responses={201: CaptureSerializer, 200: CaptureSerializer})
    def create(self, request, *args, **kwargs):
        """Upload a capture with its symbol files (multipart; files stream to disk). The
        service and build are created on first use; the same file uploaded again to the
        same build returns the existing capture (200)."""
        s = CaptureUploadSerializer(data=request.data)
        if storage_full(request._request):
            return Response({"detail": STORAGE_FULL}, status=507)
        s.is_valid(raise_exception=True)
        d = dict(s.validated_data)
        team = _team_for(request.user, d.pop("team", ""))
        try:
            capture, created = store_upload(request.user, team, d)
        except IntegrityError:
            raise ValidationError("the upload conflicts with another one; retry") from None
        except QuotaExceeded as e:
            raise ValidationError({"detail": str(e)}) from None
        except StorageFull as e:
            return Response({"detail": e.strerror}, status=507)
        except held_symbols.NotHeld as e:  # deleted since the client asked: send them
            return Response({"detail": str(e), "missing": e.missing},
                            status=status.HTTP_409_CONFLICT)
        data = CaptureSerializer(capture, context={"request": request}).data
        data["duplicate"] = not created
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses={200: DELETED})
    def destroy(self, request, *args, **kwargs):
        """Delete the capture with its symbol files and results, and its build when
        nothing else is in it (as the capture page's Delete)."""
        return _destroy(deletion.delete_capture, self.get_object())

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True)
    def result(self, request, pk=None):
        """The analysis JSON contract (409 while processing or after a failure)."""
        return Response(_finished(self.get_object()).report)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True)
    def findings(self, request, pk=None):
        """The diagnosis findings, most important first, with the regression finding of
        the comparison with the previous build when there is one."""
        return Response(_finished(self.get_object()).findings())

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[
        OpenApiParameter("offset", int, description="the first row (default 0)"),
        OpenApiParameter("limit", int, description="rows, at most 1000 (default 100)"),
        OpenApiParameter("dso", str, description="only the functions of this DSO")])
    @action(detail=True)
    def functions(self, request, pk=None):
        """The whole top-functions table (self and total samples), a page at a time:
        the result lists only the notable functions, `functions_rest` counts the rest."""
        capture = self.get_object()
        _finished(capture)
        try:
            offset = int(request.query_params.get("offset", 0))
            limit = int(request.query_params.get("limit", 100))
        except ValueError:
            raise ValidationError({"offset": "whole numbers", "limit": "whole numbers"})

        def serve():
            profile = stored_profile(capture)
            if profile is None:
                raise NotReady("the capture has no stored profile; analyze it again")
            return Response(functions_page(profile, offset, limit,
                                           request.query_params.get("dso") or None))
        return rate_limits.limited(request, rate_limits.member_scopes(request), serve,
                                   api=True)

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
                   parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH,
                                                enum=list(EXPORTS))])
    @action(detail=True, url_path=r"export/(?P<fmt>[a-z-]+)")
    def export(self, request, pk=None, fmt=None):
        """Folded stacks, speedscope JSON, perf script text, pprof (profile.proto,
        gzipped) or Firefox Profiler's Gecko format (gzipped JSON); the last two of the
        explorer's selection when given its parameters (tids, start, end, event, view,
        tf: the capture page's data endpoints')."""
        capture = self.get_object()
        _finished(capture)
        if fmt not in EXPORTS:
            raise ValidationError({"fmt": f"one of {', '.join(EXPORTS)}"})
        return rate_limits.limited(request, rate_limits.member_scopes(request),
                                   lambda: export_response(capture, fmt, request, api=True),
                                   api=True)

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[
        OpenApiParameter("with", int, description="the capture to compare against; by "
                         "default the previous build's capture with the same label"),
        OpenApiParameter("tree", bool, description="include the differential tree")])
    @action(detail=True)
    def compare(self, request, pk=None):
        """This capture against an earlier one: the verdict (regression, improvement, no
        significant change, inconclusive) and its reason, rates and CPU per unit of work,
        CPUs busy, top movers (functions and DSOs, shares before/after), slow paths,
        findings that appeared or went away, the regression finding."""
        before, after = self._compared(request)
        data = comparison(before, after,
                          tree=request.query_params.get("tree") in ("1", "true", "yes"))
        if data is None:
            raise NotReady("a capture has no stored profile; analyze it again")
        return Response(data)

    def _compared(self, request):
        """(before, after): this capture and the one `?with=` names, or by default the
        previous build's capture with the same label; both analyzed."""
        after = self.get_object()
        _finished(after)
        other = request.query_params.get("with")
        if other:
            if parse_id(other) is None:
                raise ValidationError({"with": "a capture id"})
            before, _ = retention.capture_or_purged(request.user, other,
                                                    self.get_queryset())
            if before is None:
                _purged_or_404(request.user, other)
        else:
            before = previous_capture(after)
            if before is None:
                raise NotReady("no earlier build of this service has an analyzed capture "
                               f"labelled {after.label!r}; pass ?with=ID")
        _finished(before)
        return before, after

    @extend_schema(responses={(200, "*/*"): OpenApiTypes.BINARY}, parameters=[
        OpenApiParameter("with", int, description="the capture to compare against; by "
                         "default the previous build's capture with the same label"),
        OpenApiParameter("fmt", str, OpenApiParameter.PATH,
                         enum=list(COMPARE_EXPORTS))])
    @action(detail=True, url_path=r"compare/export/(?P<fmt>[a-z-]+)")
    def compare_export(self, request, pk=None, fmt=None):
        """The comparison as a file: `json` (what /compare/ answers), `csv` (the movers
        with their noise), `markdown` (a summary for a ticket or a pull request) or
        `diff-folded` (`stack before after` lines for FlameGraph's flamegraph.pl)."""
        if fmt not in COMPARE_EXPORTS:
            raise ValidationError({"fmt": f"one of {', '.join(COMPARE_EXPORTS)}"})
        before, after = self._compared(request)
        return rate_limits.limited(request, rate_limits.member_scopes(request),
                                   lambda: compare_export_response(before, after, fmt),
                                   api=True)

    @extend_schema(responses=OpenApiTypes.OBJECT, request=inline_serializer("NewComment", {
        "body": serializers.CharField(max_length=Comment.MAX_BODY),
        "kind": serializers.ChoiceField([k for k, _ in Comment.KINDS]),
        "finding": serializers.CharField(required=False, help_text="a finding's rule"),
        "function": serializers.CharField(required=False, help_text="a function's name"),
        "function_id": serializers.IntegerField(required=False,
                                                help_text="or its id (the explorer's focus)"),
        "start": serializers.FloatField(required=False, help_text="s from the first sample"),
        "end": serializers.FloatField(required=False)}))
    @action(detail=True, methods=["get", "post"])
    def comments(self, request, pk=None):
        """The capture's comments, oldest first; POST adds one on a finding (its rule), a
        function (its name or id) or a time range (start and end, seconds from the first
        sample, within the capture's duration). Share links cannot comment."""
        capture = self.get_object()
        if request.method == "POST":
            if not hasattr(request.data, "get"):
                raise ValidationError({"detail": "send the comment's fields as an object"})
            try:
                comment = create_comment(capture, request.user, request.data)
            except CaptureGone as e:  # purged (or deleted) since get_object
                if e.purged is not None:
                    raise Purged(e.purged.sentence) from None
                raise NotFound() from None
            except CommentInvalid as e:
                raise ValidationError(e.errors) from None
            return Response(comment_json(comment, request.user),
                            status=status.HTTP_201_CREATED)
        return Response([comment_json(c, request.user)
                         for c in capture.comments.select_related("author")])

    @extend_schema(responses={204: None})
    @action(detail=True, methods=["delete"], url_path=r"comments/(?P<comment_id>%s)" % ID_PATTERN)
    def comment(self, request, pk=None, comment_id=None):
        """Delete one of your own comments (another member's: 403)."""
        capture = self.get_object()
        comment = get_object_or_404(Comment, pk=parse_id(comment_id), capture=capture)
        if comment.author_id != request.user.pk:
            raise PermissionDenied("you can delete only your own comments")
        comment.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class HeldSymbolsView(APIView):
    """Which of these symbol files (by SHA-256) your team holds already: name them in
    the upload as `symbols_held` (DIGEST:NAME) instead of sending them again. Only your
    team's own files count; a digest another team holds is not held."""
    upload_actions = ("post",)  # asked by `perfweb upload` (scopes.py)

    @extend_schema(request=HeldSymbolsSerializer, responses=inline_serializer(
        "HeldSymbols", {"held": serializers.ListField(child=serializers.CharField())}))
    def post(self, request):
        s = HeldSymbolsSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        team = _team_for(request.user, s.validated_data.get("team", ""))
        return Response({"held": held_symbols.held(team, s.validated_data["sha256"])})
