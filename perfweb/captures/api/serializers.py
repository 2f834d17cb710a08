"""What the API reads and writes. Uploaded files are validated with the same size limit
as the upload page."""
from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .. import held_symbols
from ..models import Build, Capture, Service
from ..services import capture_kind
from ..services.history import parse_measurements
from ..uploads import UploadTooLarge, check_size


def _sized(f):
    try:
        check_size(f)
    except UploadTooLarge as e:
        raise serializers.ValidationError(str(e)) from None
    return f



@extend_schema_field({"oneOf": [{"type": "number"}, {"type": "string"},
                                 {"type": "array", "items": {"type": "number"}}]})
class RateField(serializers.Field):
    """A number, a list of numbers, or numbers in a string separated by commas: the
    measurements of one rate (analysis.compare.rates.parse_measurements)."""

    def to_internal_value(self, data):
        try:
            return parse_measurements(data)
        except ValueError as e:
            raise serializers.ValidationError(str(e)) from None

    def to_representation(self, value):
        return list(value)

class ServiceSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", required=False,
                                 help_text="team name; needed only for members of several")

    class Meta:
        model = Service
        fields = ["id", "name", "team", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = []  # (team, name) uniqueness is checked in the view, per team


class BuildSerializer(serializers.ModelSerializer):
    service = serializers.IntegerField(source="service_id", read_only=True)
    captures = serializers.IntegerField(source="captures.count", read_only=True)

    class Meta:
        model = Build
        fields = ["id", "service", "version", "git_revision", "notes", "created_at",
                  "captures"]
        read_only_fields = ["id", "created_at"]
        validators = []


class CaptureSerializer(serializers.ModelSerializer):
    service = serializers.CharField(source="build.service.name", read_only=True)
    version = serializers.CharField(source="build.version", read_only=True)
    build = serializers.IntegerField(source="build_id", read_only=True)
    finished = serializers.BooleanField(read_only=True)
    url = serializers.SerializerMethodField(help_text="the capture page")
    top_finding = serializers.SerializerMethodField()
    verdict = serializers.SerializerMethodField(
        help_text="the verdict of the comparison with the previous build's capture of the "
                  "same label: {verdict (regression, improvement, no significant change, "
                  "inconclusive), reason, before: {id, build, label}, url (the comparison "
                  "page)}; null until analysed, or when no previous build's capture was")

    class Meta:
        model = Capture
        fields = ["id", "service", "build", "version", "label", "notes", "rate", "rate_values",
                  "rate_unit",
                  "original_name",
                  "format", "size", "sha256", "status", "progress", "error", "finished",
                  "created_at", "finished_at", "url", "top_finding", "verdict"]
        read_only_fields = fields

    def get_url(self, capture) -> str:
        request = self.context.get("request")
        path = capture.get_absolute_url()
        return request.build_absolute_uri(path) if request else path

    def get_verdict(self, capture) -> dict | None:
        v = capture.verdict() if capture.status == Capture.Status.DONE else None
        if not v or not v.get("before"):
            return None
        request = self.context.get("request")
        path = reverse("compare", args=[v["before"]["id"], capture.pk])
        return dict(v, url=request.build_absolute_uri(path) if request else path)

    def get_top_finding(self, capture) -> dict | None:
        f = capture.top_finding() if capture.status == Capture.Status.DONE else None
        return None if f is None else {k: f[k] for k in ("rule", "title", "severity",
                                                           "summary")}


class CaptureUploadSerializer(serializers.Serializer):
    capture = serializers.FileField(help_text="perf.data, perf script or perf report text, "
                                              "folded stacks; gzip is fine")
    symbols = serializers.ListField(child=serializers.FileField(), required=False,
                                    default=list,
                                    help_text="symbol files or archives (repeat the field)")
    sources = serializers.ListField(child=serializers.FileField(), required=False,
                                    default=list,
                                    help_text="source archives of the build (.tar.gz, .zip): "
                                              "hot lines are shown in them")
    symbols_for_build = serializers.BooleanField(
        default=True, help_text="use the symbol files for every capture of the build")
    symbols_held = serializers.ListField(
        child=serializers.CharField(max_length=400), required=False, default=list,
        help_text="symbol files the team already holds, named DIGEST:NAME (the file's "
                  "SHA-256 and name) instead of sent: POST /api/v1/symbols/held/ says "
                  "which of your digests it holds; 409 with `missing` if one is gone")
    service = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=100)
    team = serializers.CharField(max_length=100, required=False, allow_blank=True)
    git_revision = serializers.CharField(max_length=64, required=False, allow_blank=True)
    label = serializers.CharField(max_length=100, required=False, allow_blank=True)
    notes = serializers.CharField(required=False, allow_blank=True)
    rate = RateField(required=False, allow_null=True,
                     help_text="the throughput measured while the capture was taken, e.g. "
                               "53556, or several runs' (a list, or \"7.5, 7.9, 8.1\"); "
                               "comparisons then judge by CPU per unit of work and the "
                               "runs' spread")
    rate_unit = serializers.CharField(max_length=32, required=False, allow_blank=True,
                                      default="req/s", help_text="e.g. req/s, rows/s, MB/s")

    def validate_capture(self, f):
        why = capture_kind.refusal(_sized(f))
        if why is not None:
            raise serializers.ValidationError(why)
        return f

    def validate_symbols(self, files):
        return [_sized(f) for f in files]

    def validate_sources(self, files):
        return [_sized(f) for f in files]

    def validate_symbols_held(self, entries):
        if len(entries) > held_symbols.MAX_DIGESTS:
            raise serializers.ValidationError(f"at most {held_symbols.MAX_DIGESTS} files")
        try:
            return [held_symbols.parse_entry(e) for e in entries]
        except ValueError as e:
            raise serializers.ValidationError(str(e)) from None


class HeldSymbolsSerializer(serializers.Serializer):
    sha256 = serializers.ListField(
        child=serializers.RegexField(held_symbols.DIGEST.pattern, max_length=64),
        max_length=held_symbols.MAX_DIGESTS,
        help_text="the SHA-256 digests of the symbol files you would send")
    team = serializers.CharField(max_length=100, required=False, allow_blank=True)
