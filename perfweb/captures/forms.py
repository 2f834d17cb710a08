"""The upload form: a capture, any number of symbol files, where it belongs."""
from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.safestring import mark_safe

from .services import capture_kind
from .services.history import parse_measurements
from .uploads import UploadTooLarge, check_size


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data if d]
        return [single(data, initial)] if data else []


def _check_size(f) -> None:
    try:
        check_size(f)
    except UploadTooLarge as e:
        raise forms.ValidationError(str(e)) from None


def _files_limit(field: forms.Field, what: str) -> None:
    """The help of a many-files field says how many files an upload may carry (Django
    stops reading a request past them: upload_limits.bad_request)."""
    field.help_text = (f"{field.help_text}; at most "
                       f"{settings.DATA_UPLOAD_MAX_NUMBER_FILES:,} files in one upload, "
                       f"{what}: put more in a .zip or .tar.gz")


class UploadForm(forms.Form):
    capture = forms.FileField(validators=[_check_size],
                              help_text=mark_safe(  # (our own text; Django does not escape help)
                                  "perf.data, <code>perf script</code> or <code>perf report "
                                  "--stdio</code> output, or folded stacks; gzip is fine"))
    symbols = MultipleFileField(required=False, validators=[_check_size],
                                help_text="ELF binaries or debug files, perf archive "
                                          "bundles, kallsyms, /proc/PID/maps, perf-PID.map, "
                                          "jit-PID.dump, or archives of them")
    sources = MultipleFileField(required=False, validators=[_check_size],
                                label="Source archive",
                                help_text="optional: a .tar.gz or .zip of the build's source "
                                          "tree; a function's hot lines are then shown in "
                                          "its source")
    symbols_for_build = forms.BooleanField(
        required=False, initial=True,
        label="Use these symbol files for every capture of this build")
    team = forms.ChoiceField(required=False)
    service = forms.CharField(max_length=100, help_text="e.g. llm-api")
    version = forms.CharField(max_length=100, label="Build version", help_text="e.g. 1.4.2")
    git_revision = forms.CharField(max_length=64, required=False)
    label = forms.CharField(max_length=100, required=False, help_text="e.g. idle, load test")
    rate = forms.CharField(required=False, max_length=2000, label="Throughput",
                           help_text="what the load generator measured while the capture "
                                     "was taken, e.g. 53556, or several runs, e.g. 7.5, "
                                     "7.9, 8.1: comparisons then judge by CPU per unit of "
                                     "work, and by the runs' spread")
    rate_unit = forms.CharField(max_length=32, required=False, initial="req/s",
                                label="Throughput unit", help_text="e.g. req/s, rows/s, MB/s")
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def clean_rate(self):
        """The measurements, or () when none was given."""
        text = self.cleaned_data.get("rate")
        if text in (None, ""):
            return ()
        try:
            return parse_measurements(text)
        except ValueError as e:
            raise forms.ValidationError(str(e)) from None

    def __init__(self, *args, teams=(), services=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.makes_own_team = not teams  # the page says so; the upload makes it
        _files_limit(self.fields["symbols"], "the capture included")
        # the teams' services, offered as the field is typed (upload.js warns before a
        # new service is made from a typo of one of them)
        self.known_services = sorted(set(services))
        self.fields["service"].widget.attrs["list"] = "known-services"
        self.fields["service"].widget.attrs["autocomplete"] = "off"
        self.fields["team"].choices = [(str(t.pk), t.name) for t in teams]
        if len(self.fields["team"].choices) <= 1:
            self.fields["team"].widget = forms.HiddenInput()

    def clean_capture(self):
        """A file of no format perfweb reads (a picture, an archive) is refused here,
        before a service, build or file is made for it."""
        f = self.cleaned_data["capture"]
        why = capture_kind.refusal(f)
        if why is not None:
            raise forms.ValidationError(why[0].upper() + why[1:] + ".")
        return f


class SymbolUploadForm(forms.Form):
    symbols = MultipleFileField(required=False, validators=[_check_size])
    sources = MultipleFileField(required=False, validators=[_check_size],
                                label="Source archive",
                                help_text="a .tar.gz or .zip of the build's source tree")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _files_limit(self.fields["symbols"], "source archives included")

    def clean(self):
        data = super().clean()
        if not data.get("symbols") and not data.get("sources"):
            raise forms.ValidationError("Choose symbol files or a source archive.")
        return data
