"""The domain: teams own services, services have builds, builds have captures and the
symbol files every capture of the build uses, captures have their analysis results."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership",
                                     related_name="teams")
    #: captures older than this many days are purged (services/retention.py); null: kept
    #: for ever
    retention_days = models.PositiveIntegerField(null=True, blank=True)
    #: what the team's captures and symbol files may take in storage; null: the
    #: PERFWEB_TEAM_QUOTA_BYTES default
    quota_bytes = models.BigIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    #: may change the team's settings (retention, quota) on the team page
    admin = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership")]


class Service(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="services")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="service_name")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("service", args=[self.pk])


class Build(models.Model):
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="builds")
    version = models.CharField(max_length=100)
    git_revision = models.CharField(max_length=64, blank=True)
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["service", "version"],
                                               name="build_version")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.service.name} {self.version}"

    def get_absolute_url(self) -> str:
        return reverse("build", args=[self.pk])


def _upload_path(kind: str):
    def path(instance, filename: str) -> str:
        # our own name: the uploaded one is kept in original_name, never used as a path
        return f"{kind}/{uuid.uuid4().hex}"
    return path


def capture_path(instance, filename):
    return _upload_path("captures")(instance, filename)


def symbol_path(instance, filename):
    return _upload_path("symbols")(instance, filename)


def folded_path(instance, filename):
    return _upload_path("results")(instance, filename)


class Capture(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        PARSING = "parsing"
        SYMBOLIZING = "symbolizing"
        ANALYZING = "analyzing"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.PARSING, Status.SYMBOLIZING, Status.ANALYZING)

    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="captures")
    file = models.FileField(upload_to=capture_path)
    original_name = models.CharField(max_length=255)
    format = models.CharField(max_length=32, blank=True)
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.BigIntegerField()
    label = models.CharField(max_length=100, blank=True)
    notes = models.TextField(blank=True)
    #: the throughput measured while the capture was taken (e.g. 53556 "req/s"): with
    #: it, comparisons judge by CPU per unit of work
    rate = models.FloatField(null=True, blank=True)
    #: every measurement of the rate when it was measured several times (rate is their
    #: mean): their spread is the noise a change of throughput is judged against
    rate_values = models.JSONField(default=list, blank=True)
    rate_unit = models.CharField(max_length=32, blank=True)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                    on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    #: False when the file itself could not be read (the engine said why): analysing it
    #: again cannot help, so no Retry is offered (a new engine version still re-reads it)
    retryable = models.BooleanField(default=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    #: the token of the attempt that owns the capture while it is processed (claims.py);
    #: every write of that attempt is conditional on it, so a late one changes nothing
    claim = models.CharField(max_length=32, blank=True, default="")
    #: refreshed by the owning worker while it runs; the sweep takes back a stale one
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: its message could not be sent (the broker was down): the sweep sends it at once
    unsent = models.BooleanField(default=False)
    #: the Redis run id its message was sent under (pipeline.send): when the server's is
    #: another, a restart lost the message, and the sweep sends it again
    sent_run = models.CharField(max_length=40, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["build", "sha256"],
                                               name="one_capture_per_content")]

    def __str__(self) -> str:
        return f"{self.build} {self.label or self.original_name}"

    def get_absolute_url(self) -> str:
        return reverse("capture", args=[self.pk])

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    def latest_result(self) -> "AnalysisResult | None":
        """From `prefetch_related("results")` when the list was fetched that way (one
        query for a whole list of captures), else one query."""
        cached = getattr(self, "_prefetched_objects_cache", {}).get("results")
        if cached is not None:
            return max(cached, key=lambda r: r.created_at, default=None)
        return self.results.order_by("-created_at").first()

    def verdict(self) -> dict | None:
        """The verdict of the comparison with the previous build ({verdict, reason,
        before}), when there was one."""
        result = self.latest_result()
        cmp = result.comparison if result is not None else None
        return None if not cmp else {k: cmp.get(k) for k in ("verdict", "reason", "before")}

    def top_finding(self) -> dict | None:
        """The most important finding, for lists of captures."""
        result = self.latest_result()
        if result is None:
            return None
        findings = result.findings()
        notable = [f for f in findings if f["severity"] in ("high", "medium")]
        return (notable or findings or [None])[0]


class SymbolFile(models.Model):
    """Attached to a build (every capture of it uses the file) or to one capture. A
    source archive (kind "source") is no symbol file: the hot lines are shown in it."""
    SYMBOLS, SOURCE = "symbols", "source"
    build = models.ForeignKey(Build, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="symbol_files")
    capture = models.ForeignKey(Capture, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="symbol_files")
    file = models.FileField(upload_to=symbol_path)
    original_name = models.CharField(max_length=255)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                    on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    #: its build-ids are in BuildIdEntry; for a source archive: the worker has read it
    #: (its text files are in SourceMember, or it was refused)
    indexed = models.BooleanField(default=False)
    kind = models.CharField(max_length=16, default="symbols",
                            choices=[("symbols", "symbol file"), ("source", "source archive")])
    #: why the worker refused a source archive: a sentence shown in place of the source
    refused = models.TextField(blank=True, default="")

    class Meta:
        constraints = [models.CheckConstraint(
            condition=models.Q(build__isnull=False) | models.Q(capture__isnull=False),
            name="symbols_belong_somewhere")]
        # a team's files by digest (held_symbols), and the rows naming a stored file
        # (deletion removes a shared file with its last row)
        indexes = [models.Index(fields=["sha256"], name="symbolfile_sha256"),
                   models.Index(fields=["file"], name="symbolfile_file")]


class SourceMember(models.Model):
    """A text file of a source archive, as the worker read it once (services/
    source_index.py): a hot-lines request reads these rows, never the archive."""
    archive = models.ForeignKey(SymbolFile, on_delete=models.CASCADE,
                                related_name="source_members")
    name = models.TextField()  # its path in the archive
    basename = models.CharField(max_length=255)  # what a debug path must end in to match
    text = models.BinaryField()  # zlib-compressed, at most MAX_SOURCE_BYTES decompressed

    class Meta:
        indexes = [models.Index(fields=["archive", "basename"],
                                name="sourcemember_basename")]


class AnalysisResult(models.Model):
    """What the engine computed, kept per analysis version so a new engine can recompute
    without losing the old numbers."""
    capture = models.ForeignKey(Capture, on_delete=models.CASCADE, related_name="results")
    analysis_version = models.CharField(max_length=32)
    report = models.JSONField()  # the analysis JSON contract
    folded = models.FileField(upload_to=folded_path)
    #: the whole analyzed profile (analysis.profile_io), for views computed on demand
    profile = models.FileField(upload_to=folded_path, blank=True)
    #: the engine's comparison with the previous build's capture of the same label, as
    #: analysis.compare made it (verdict, reason, movers, regression finding), or null
    comparison = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["capture", "analysis_version"],
                                               name="one_result_per_version")]

    def findings(self) -> list[dict]:
        """The diagnosis, with the regression finding of the comparison with the previous
        build after the CPU headline: what the page, the API and the CLI show."""
        findings = list(self.report.get("findings") or [])
        regression = (self.comparison or {}).get("regression")
        if regression:
            at = 1 if findings and findings[0]["rule"] == "cpu-use" else 0
            findings.insert(at, regression)
        return findings


class ShareLink(models.Model):
    """A read-only link for people without an account: to one capture, or to the
    comparison of `capture` (before) with `compare_with` (after)."""
    capture = models.ForeignKey(Capture, on_delete=models.CASCADE, related_name="share_links")
    #: a link to a comparison: the capture after (None: a link to `capture` alone). It
    #: shows the comparison page, its data and exports, never either capture's explorer.
    compare_with = models.ForeignKey(Capture, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="compare_share_links")
    token = models.CharField(max_length=64, unique=True)  # 192 random bits, urlsafe
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    #: the explorer's view when the link was made (its URL query: zoom, focus, search,
    #: threads, time range), which the link opens with
    view = models.CharField(max_length=2000, blank=True, default="")

    def valid(self, now) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    @property
    def url_token(self) -> str:
        """What the link carries: the row's id (looked up) and the secret (compared in
        constant time), so response times say nothing about the secret."""
        return f"{self.pk}.{self.token}"


class ShareLinkUse(models.Model):
    """A share link's uses on one day (UTC): one row per link and day, counted in place
    (services/share_uses.py). A row per request grew without bound: every data request
    of a shared page is a use. An owner auditing a link sees per day how often it was
    used, when first and last, and from which addresses: the first ADDRESSES_KEPT
    distinct ones (`more_addresses` when others came), the last one with its user agent."""
    ADDRESSES_KEPT = 8
    link = models.ForeignKey(ShareLink, on_delete=models.CASCADE, related_name="uses")
    day = models.DateField()
    count = models.PositiveBigIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()
    last_address = models.CharField(max_length=64, blank=True)
    last_user_agent = models.CharField(max_length=255, blank=True)
    #: the day's first distinct addresses, each followed by a space after a leading one
    #: (" a b "), so a conditional UPDATE can ask whether one is in it
    addresses = models.CharField(max_length=ADDRESSES_KEPT * 46 + 1, default=" ")
    address_count = models.PositiveSmallIntegerField(default=0)  # of `addresses`
    more_addresses = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link", "day"],
                                               name="one_use_row_per_link_and_day")]

    def address_list(self) -> list[str]:
        return self.addresses.split()


class ApiToken(models.Model):
    """A personal API token: acts as its user, so it sees that user's teams only, and
    only within its scope (api_tokens.py). Only a hash is stored; the token is shown
    once."""
    READ, UPLOAD, ADMIN = "read", "upload", "admin"
    SCOPES = [(READ, "read: debuginfod, downloads, reading the API"),
              (UPLOAD, "upload: read, and upload captures and symbol files"),
              (ADMIN, "admin: everything your account may do, deleting included")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100)
    #: tokens made before scopes existed are admin (migration 0016_token_scopes), as they acted
    scope = models.CharField(max_length=8, choices=SCOPES, default=UPLOAD)
    prefix = models.CharField(max_length=8)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


class BuildIdEntry(models.Model):
    """Which stored symbol file (or member of it) holds an ELF with this build-id, for
    the debuginfod endpoints."""
    symbol_file = models.ForeignKey(SymbolFile, on_delete=models.CASCADE,
                                    related_name="build_ids")
    build_id = models.CharField(max_length=64, db_index=True)
    kind = models.CharField(max_length=16)  # debuginfo | executable
    member = models.CharField(max_length=1024, blank=True)  # path inside an archive


class Comment(models.Model):
    """A team member's note on a capture: on one of its findings (by rule), on a function
    of its profile (by name, with its id there for the explorer's focus), or on a time
    range (seconds since the capture's first sample, as the explorer's start/end)."""
    FINDING, FUNCTION, RANGE = "finding", "function", "range"
    KINDS = [(FINDING, "finding"), (FUNCTION, "function"), (RANGE, "time range")]
    MAX_BODY = 4000
    #: a name typed in (the profile's own names are stored whatever their length: C++
    #: templates spell functions of thousands of characters)
    MAX_FUNCTION = 65536

    capture = models.ForeignKey(Capture, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                               on_delete=models.SET_NULL, related_name="capture_comments")
    created_at = models.DateTimeField(auto_now_add=True)
    body = models.TextField(max_length=MAX_BODY)
    kind = models.CharField(max_length=16, choices=KINDS)
    finding = models.CharField(max_length=64, blank=True, default="")  # the finding's rule
    function = models.TextField(blank=True, default="")  # the profile's name of it
    function_id = models.IntegerField(null=True, blank=True)
    start = models.FloatField(null=True, blank=True)
    end = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]


class PurgedCapture(models.Model):
    """What is left of a capture the retention policy deleted, so that a page that still
    points at it (a comparison, a later capture's verdict) says what happened to it
    instead of "not found". Seen only by the team's members, like the capture was."""
    capture_id = models.BigIntegerField(unique=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="purged")
    service = models.CharField(max_length=100)
    build = models.CharField(max_length=100)
    label = models.CharField(max_length=100, blank=True)
    original_name = models.CharField(max_length=255)
    uploaded_at = models.DateTimeField()
    deleted_at = models.DateTimeField()
    retention_days = models.PositiveIntegerField()

    def __str__(self) -> str:
        return (f"capture {self.capture_id} was deleted on {self.deleted_at:%Y-%m-%d} by "
                f"the retention policy ({self.retention_days} "
                f"day{'s' if self.retention_days != 1 else ''})")

    @property
    def sentence(self) -> str:
        """The same as a sentence, for pages: "Capture 12 was deleted on ..."."""
        text = str(self)
        return text[0].upper() + text[1:] + "."


class Webhook(models.Model):
    """Where a service's regression verdicts are POSTed (Slack-compatible JSON,
    perfweb/captures/services/webhooks.py). Set on the service page by its team's
    members."""
    service = models.OneToOneField(Service, on_delete=models.CASCADE, related_name="webhook")
    #: http(s) only, checked by webhook_transport.check_url
    url = models.CharField(max_length=2000)
    #: the HMAC-SHA256 key of the X-Perfweb-Signature header (blank: unsigned); kept as
    #: given (a signature needs it), never shown back on the page
    secret = models.CharField(max_length=200, blank=True)
    #: the site's address as the member who set the webhook reached it (the payload's
    #: links), unless PERFWEB_SITE_URL is set
    site_url = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True,
                                   on_delete=models.SET_NULL)
    updated_at = models.DateTimeField(auto_now=True)


class WebhookNotification(models.Model):
    """One regression verdict to deliver, made in the transaction that stores the verdict:
    at most one per capture and previous capture, so a re-run of the analysis or a late
    attempt never notifies twice."""
    PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE,
                                related_name="notifications")
    capture = models.ForeignKey(Capture, on_delete=models.CASCADE,
                                related_name="webhook_notifications")
    before_id = models.IntegerField()  # the previous build's capture it was compared with
    payload = models.JSONField()
    status = models.CharField(max_length=16, default=PENDING,
                              choices=[(s, s) for s in (PENDING, DELIVERED, FAILED)])
    attempts = models.PositiveSmallIntegerField(default=0)
    #: an attempt before this time is a duplicate message (the retry is scheduled then)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["capture", "before_id"],
                                               name="one_notification_per_verdict")]


class WebhookDelivery(models.Model):
    """One attempt to POST a notification: the answer's status code, or the error."""
    notification = models.ForeignKey(WebhookNotification, on_delete=models.CASCADE,
                                     related_name="deliveries")
    attempt = models.PositiveSmallIntegerField()
    at = models.DateTimeField(auto_now_add=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-at", "-attempt"]
