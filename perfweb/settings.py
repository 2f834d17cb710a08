"""Settings, all from environment variables (django-environ), with a zero-setup default:
SQLite and Celery's filesystem broker under ./var when DATABASE_URL / REDIS_URL are not
set, PostgreSQL and Redis when they are."""
import os
from pathlib import Path

import environ

from perfweb import priorities

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

VAR_DIR = Path(env("PERFWEB_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env("SECRET_KEY", default="")
if not SECRET_KEY:
    # a per-checkout key, so a fresh clone runs without configuration; production sets one
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key
        key_file.write_text(get_random_secret_key())
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "axes",
    "perfweb.captures",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "perfweb.unavailable.DatabaseUnavailableMiddleware",
    "perfweb.captures.upload_limits.UploadLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "perfweb.middleware.ContentSecurityPolicyMiddleware",
    "axes.middleware.AxesMiddleware",
]

# sign-in throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is locked out for the cool-off time (429 + page)
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_HOURS", default=0.25)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_IPWARE_META_PRECEDENCE_ORDER = ["REMOTE_ADDR"]  # behind a proxy: X-Forwarded-For

ROOT_URLCONF = "perfweb.urls"
WSGI_APPLICATION = "perfweb.wsgi.application"

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [BASE_DIR / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]

DATABASES = {"default": env.db("DATABASE_URL",
                               default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # `make run`: the web server, the worker and its heartbeat thread write at once;
    # wait for the lock instead of failing with "database is locked", take it when a
    # transaction starts (no failed upgrade from reader to writer), and let readers
    # read while one writes (WAL)
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30, "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "perfweb.static_storage.PlotlyFinder",  # the plotly package's bundle: no CDN
]
#: where collectstatic writes (the Docker image: inside the image, not on the data volume)
STATIC_ROOT = Path(env("STATIC_ROOT", default=str(VAR_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# files collectstatic did not write (none ran: a checkout under gunicorn) are served from
# static/ and Plotly's package, under their plain names and uncompressed
WHITENOISE_USE_FINDERS = True
WHITENOISE_KEEP_ONLY_HASHED_FILES = True  # the pages ask for hashed names only
#: brotli's level for the copies collectstatic writes (11, its best, takes longest)
PERFWEB_BROTLI_QUALITY = env.int("PERFWEB_BROTLI_QUALITY", default=11)

# uploads: streamed to temporary files above 2.5 MB, stored through the storage API
MEDIA_ROOT = Path(env("MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_URL = "/media-not-served/"  # files are served by views that check permissions
FILE_UPLOAD_TEMP_DIR = env("FILE_UPLOAD_TEMP_DIR", default=None)
FILE_UPLOAD_PERMISSIONS = 0o640
FILE_UPLOAD_HANDLERS = ["perfweb.captures.upload_limits.SizeLimitedUploadHandler"]
if env("STORAGE_BACKEND", default="filesystem") == "s3":
    STORAGES = {
        # the bucket holds every file; web and workers may be on different hosts (README,
        # "Many hosts"); keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or boto3's
        # usual chain (instance roles)
        "default": {"BACKEND": "perfweb.object_storage.BucketStorage", "OPTIONS": {
            "bucket_name": env("AWS_STORAGE_BUCKET_NAME"),
            "endpoint_url": env("AWS_S3_ENDPOINT_URL", default=None),
            "region_name": env("AWS_S3_REGION_NAME", default=None),
            # "path" for MinIO and most S3-compatible servers
            "addressing_style": env("AWS_S3_ADDRESSING_STYLE", default=None),
            # a stored file read through the storage API (a download, a saved profile)
            # spools to a temporary file above this, not all in memory
            "max_memory_size": env.int("AWS_S3_MAX_MEMORY_SIZE", default=16 << 20),
            "file_overwrite": False,  # our names are uuids; never replace an object
            "default_acl": "private", "querystring_auth": True}},
        "staticfiles": {"BACKEND": "perfweb.static_storage.StaticStorage",
                        "OPTIONS": {"file_permissions_mode": 0o644}},
    }
else:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        # hashed names, gzip and brotli copies (perfweb/static_storage.py), readable by
        # the server's user whoever collected them (the image's build runs as root)
        "staticfiles": {"BACKEND": "perfweb.static_storage.StaticStorage",
                        "OPTIONS": {"file_permissions_mode": 0o644}},
    }

PERFWEB_MAX_UPLOAD_BYTES = env.int("PERFWEB_MAX_UPLOAD_BYTES", default=2 << 30)  # per file
PERFWEB_MAX_SYMBOL_FILES = env.int("PERFWEB_MAX_SYMBOL_FILES", default=32)  # per upload
#: files one request may carry (the capture, symbol files and source archives together):
#: Django stops reading a request at the next one and upload_limits.bad_request says so
DATA_UPLOAD_MAX_NUMBER_FILES = env.int("PERFWEB_MAX_UPLOAD_FILES", default=100)
#: what one user's captures and symbol files may take in storage, in total
PERFWEB_USER_QUOTA_BYTES = env.int("PERFWEB_USER_QUOTA_BYTES", default=50 << 30)
#: what one team's captures and symbol files may take, unless the team has its own quota
#: (Team.quota_bytes, set in the admin)
PERFWEB_TEAM_QUOTA_BYTES = env.int("PERFWEB_TEAM_QUOTA_BYTES", default=500 << 30)
#: address space an analysis may use beyond the worker's own (0: no limit)
PERFWEB_WORKER_MEMORY_MB = env.int("PERFWEB_WORKER_MEMORY_MB", default=8192)
PERFWEB_CACHE_DIR = env("PERFWEB_CACHE_DIR", default=str(VAR_DIR / "symbol-cache"))
os.environ["PERFWEB_CACHE_DIR"] = PERFWEB_CACHE_DIR  # the analysis library reads it
#: STORAGE_BACKEND=s3: the symbol files a host keeps downloaded in PERFWEB_CACHE_DIR/stored
#: (least recently used go first past this)
PERFWEB_STORED_CACHE_BYTES = env.int("PERFWEB_STORED_CACHE_BYTES", default=20 << 30)
#: a worker refreshes the heartbeat of the capture it analyses this often ...
PERFWEB_HEARTBEAT_S = env.float("PERFWEB_HEARTBEAT_S", default=10)
#: ... and the sweep takes back a capture whose heartbeat is older than this (its worker
#: died or hangs); with the sweep every PERFWEB_SWEEP_EVERY_S, within a minute
PERFWEB_HEARTBEAT_STALE_S = env.float("PERFWEB_HEARTBEAT_STALE_S", default=30)
#: a queued capture no worker picked up for this long is enqueued again (its message may
#: be lost; a message lost with a Redis restart is known sooner: pipeline.sweep)
PERFWEB_QUEUED_GRACE_S = env.int("PERFWEB_QUEUED_GRACE_S", default=5 * 60)
PERFWEB_MAX_ATTEMPTS = env.int("PERFWEB_MAX_ATTEMPTS", default=3)
#: analyzed profiles a web process keeps in memory for the explorer, by estimated size
PERFWEB_PROFILE_CACHE_BYTES = env.int("PERFWEB_PROFILE_CACHE_BYTES", default=128 << 20)
#: exports a web host keeps made in PERFWEB_CACHE_DIR/exports, and how long one stays
#: there unused (services/export_cache.py)
PERFWEB_EXPORT_CACHE_BYTES = env.int("PERFWEB_EXPORT_CACHE_BYTES", default=2 << 30)
PERFWEB_EXPORT_CACHE_IDLE_S = env.int("PERFWEB_EXPORT_CACHE_IDLE_S", default=24 * 3600)
#: test-only: seconds each pipeline stage waits, so a test can kill a worker mid-task
PERFWEB_STAGE_DELAY_S = env.float("PERFWEB_STAGE_DELAY_S", default=0.0)
#: service webhooks (perfweb/captures/services/webhooks.py): attempts per notification,
#: the wait before the second (doubling after), each attempt's lookup, connect and read
#: timeout (three of them in all), and how
#: overdue a pending one must be for the sweep to send it again
PERFWEB_WEBHOOK_MAX_ATTEMPTS = env.int("PERFWEB_WEBHOOK_MAX_ATTEMPTS", default=5)
PERFWEB_WEBHOOK_BACKOFF_S = env.float("PERFWEB_WEBHOOK_BACKOFF_S", default=15)
PERFWEB_WEBHOOK_TIMEOUT_S = env.float("PERFWEB_WEBHOOK_TIMEOUT_S", default=5)
PERFWEB_WEBHOOK_GRACE_S = env.int("PERFWEB_WEBHOOK_GRACE_S", default=120)
#: off: webhooks go to public addresses only (no loopback, private, link-local such as
#: 169.254.169.254, or reserved ranges); on for receivers inside your network
PERFWEB_WEBHOOK_ALLOW_PRIVATE = env.bool("PERFWEB_WEBHOOK_ALLOW_PRIVATE", default=False)
#: the site's address for links in webhook messages (default: as the member who set the
#: webhook reached it), e.g. https://perfweb.example
PERFWEB_SITE_URL = env("PERFWEB_SITE_URL", default="")

# Celery: Redis when REDIS_URL is set, otherwise a broker in files under ./var, which
# needs no server and works across processes on one machine
REDIS_URL = env("REDIS_URL", default="")
#: every key perfweb writes in Redis starts with this (the test suite names it per run, so
#: two suites can share one Redis server)
PERFWEB_REDIS_PREFIX = env("PERFWEB_REDIS_PREFIX", default="")
#: one capture's analysis may take this long; past it, that capture fails with a message
PERFWEB_ANALYSIS_TIME_LIMIT_S = env.int("PERFWEB_ANALYSIS_TIME_LIMIT_S", default=20 * 60)
#: ... and Celery kills a task still running this long after (code that never yields)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=30 * 60)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT = "perfweb.broker:Transport"  # survives Redis restarts
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # an unacknowledged task (its worker died) is delivered again after this long,
        # found by a scan every interval x throttle seconds
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT",
                                      default=CELERY_TASK_TIME_LIMIT + 60),
        "unacked_restore_interval": env.int("CELERY_UNACKED_RESTORE_INTERVAL", default=10),
        "unacked_restore_throttle": env.int("CELERY_UNACKED_RESTORE_THROTTLE", default=10),
    }
    if PERFWEB_REDIS_PREFIX:
        CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = PERFWEB_REDIS_PREFIX
else:
    _broker = VAR_DIR / "broker"
    for sub in ("out", "processed", "control"):
        (_broker / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "perfweb.broker:FilesystemTransport"  # with priorities
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker / "out"), "data_folder_out": str(_broker / "out"),
        "processed_folder": str(_broker / "processed"), "store_processed": False,
        "control_folder": str(_broker / "control")}  # not ./control in the checkout
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", default="perfweb")
#: every message has a priority; the sweep and what it sends again go first
#: (perfweb/priorities.py: kombu's Redis transport takes the lowest number first)
CELERY_TASK_DEFAULT_PRIORITY = priorities.NEW
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# the worker's stdout and stderr stay the process's own, not Celery's logging proxy: past
# PERFWEB_WORKER_MEMORY_MB, a generator closed while the MemoryError unwinds fails again
# in its finalizer, and Python writes that "unraisable" error to sys.stderr; through the
# proxy every write builds a log record, fails to allocate, and is reported again, which
# kept a worker at 100% CPU on that capture for minutes (test_limits_and_faults, memory)
CELERY_WORKER_REDIRECT_STDOUTS = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-captures": {"task": "perfweb.captures.tasks.sweep_captures",
                             "schedule": env.float("PERFWEB_SWEEP_EVERY_S", default=15),
                             "options": {"priority": priorities.FIRST}},
    "sweep-webhooks": {"task": "perfweb.captures.tasks.sweep_webhooks", "schedule": 60.0},
    # the teams' retention (services/retention.py; `manage.py purge_expired` for cron)
    "purge-expired-captures": {"task": "perfweb.captures.tasks.purge_expired_captures",
                               "schedule": env.float("PERFWEB_PURGE_EVERY_S", default=3600)},
}

# Rate limits of what anyone with a share link can make the server compute: the explorer's
# data (transforms and the stack chart among them) through a share link or the team's
# URLs, and exports (pages and API). Each scope counts, per window, the requests and the
# seconds web workers spent on them; a request past either gets 429 with Retry-After
# (perfweb/captures/rate_limits.py). Counted in the "limits" cache: Redis when REDIS_URL
# is set (shared by every gunicorn worker and host; while Redis is down nothing is
# limited and a line is logged), else this process's memory (`make run`: one server).
PERFWEB_RATE_WINDOW_S = env.int("PERFWEB_RATE_WINDOW_S", default=60)
#: scope -> (requests, seconds of work) per window: all visitors of one share link,
#: one client address on share links (an IPv6 /64), one signed-in user on the team's
#: URLs (a lighter limit: members are known); 0 turns that count off
PERFWEB_RATE_LIMITS = {
    "link": (env.int("PERFWEB_RATE_LINK_REQUESTS", default=600),
             env.float("PERFWEB_RATE_LINK_WORK_S", default=60)),
    "address": (env.int("PERFWEB_RATE_ADDRESS_REQUESTS", default=240),
                env.float("PERFWEB_RATE_ADDRESS_WORK_S", default=30)),
    "member": (env.int("PERFWEB_RATE_MEMBER_REQUESTS", default=1200),
               env.float("PERFWEB_RATE_MEMBER_WORK_S", default=120)),
}
#: requests computing explorer data or exports at once on one host (the others get 429
#: and the page asks again): fewer than the host's gunicorn workers, so a burst leaves
#: the others free for every other page; 0: no limit
PERFWEB_COMPUTE_SLOTS = env.int("PERFWEB_COMPUTE_SLOTS", default=2)
PERFWEB_COMPUTE_SLOTS_DIR = env("PERFWEB_COMPUTE_SLOTS_DIR",
                                default=str(VAR_DIR / "compute-slots"))
#: the proxies whose X-Forwarded-For is believed (addresses or networks, e.g.
#: 10.0.0.0/8); none by default: the client is REMOTE_ADDR
PERFWEB_TRUSTED_PROXIES = env.list("PERFWEB_TRUSTED_PROXIES", default=[])
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if REDIS_URL:
    CACHES["limits"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
        "KEY_PREFIX": PERFWEB_REDIS_PREFIX,
        # a Redis that does not answer costs a request half a second, not a hang
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}
else:
    CACHES["limits"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                        "LOCATION": "perfweb-limits"}

# the REST API: personal tokens (Authorization: Token pw_...) or the browser session
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "perfweb.captures.api.auth.PersonalTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # a token only within its scope (read, upload, admin: captures/api/scopes.py)
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated",
                                   "perfweb.captures.api.scopes.TokenScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser",
                               "rest_framework.parsers.MultiPartParser",
                               "rest_framework.parsers.FormParser"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"user": env("PERFWEB_API_RATE", default="1200/minute")},
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "perfweb API",
    "DESCRIPTION": "Upload perf captures with their symbol files, poll their analysis, read "
                   "findings, comparisons and exports.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the upload script reads it for its XHR
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=14 * 24 * 3600)
#: HTTPS=1 in production: secure cookies, redirect to https, HSTS (`check --deploy` clean);
#: behind a proxy that terminates TLS, set PROXY_SSL_HEADER=1 so https is recognised
HTTPS = env.bool("HTTPS", default=False)
if HTTPS:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^debuginfod/"]  # tools may be pointed at http on a LAN
if env.bool("PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# every handler scrubs API tokens and share-link secrets from what it writes
# (perfweb/token_scrub.py): Django logs the path of every 4xx and 5xx, and a debuginfod
# path holds a token. Django's own loggers are named here so that their default handlers
# (which would not scrub) are replaced; gunicorn's are in perfweb/gunicorn_conf.py,
# Celery's in perfweb/celery.py.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "scrub_tokens": {"()": "perfweb.token_scrub.ScrubTokens"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
    },
    "formatters": {
        "django.server": {"()": "django.utils.log.ServerFormatter",
                          "format": "[{server_time}] {message}", "style": "{"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["scrub_tokens"]},
        "django.server": {"class": "logging.StreamHandler", "formatter": "django.server",
                          "filters": ["scrub_tokens"]},
        # (sends nothing unless ADMINS is set)
        "mail_admins": {"class": "django.utils.log.AdminEmailHandler",
                        "filters": ["scrub_tokens", "require_debug_false"]},
    },
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django": {"handlers": ["mail_admins"], "level": "INFO", "propagate": True},
        "django.server": {"handlers": ["django.server"], "level": "INFO",
                          "propagate": False},
    },
}
# error reports (AdminEmailHandler's e-mails, the DEBUG 500 page) without tokens
DEFAULT_EXCEPTION_REPORTER = "perfweb.error_reports.TokenScrubbingExceptionReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "perfweb.error_reports.TokenScrubbingReporterFilter"
