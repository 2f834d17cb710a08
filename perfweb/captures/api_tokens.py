"""Personal API tokens: shown once, stored as a SHA-256 digest, acting as their user (so
they see that user's teams only), revocable, and limited to a scope.

Scopes are nested, each allowing what the one before it does: read (debuginfod, the
API's GET: results, exports, downloads), upload (read, and what `perfweb upload` sends:
captures, symbol files, the services and builds they go to) and admin (everything the
user may do, deleting included). A token in a CI job or in DEBUGINFOD_URLS can then not
delete what it was only meant to read or add to."""
from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from .models import ApiToken

PREFIX = "pw_"
READ, UPLOAD, ADMIN = ApiToken.READ, ApiToken.UPLOAD, ApiToken.ADMIN
SCOPES = (READ, UPLOAD, ADMIN)  # each allows what those before it allow
#: least privilege that still lets `perfweb upload` work
DEFAULT_SCOPE = UPLOAD


def covers(scope: str, needed: str) -> bool:
    """Whether a token of `scope` may do what needs `needed`."""
    return scope in SCOPES and SCOPES.index(scope) >= SCOPES.index(needed)


def token_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_token(user, name: str, scope: str = DEFAULT_SCOPE) -> str:
    """The key, for showing once; only its digest is kept."""
    if scope not in SCOPES:
        raise ValueError(f"a token's scope is one of {', '.join(SCOPES)}, not {scope!r}")
    key = PREFIX + secrets.token_urlsafe(32)  # 256 random bits
    ApiToken.objects.create(user=user, name=name[:100] or "token", prefix=key[:8],
                            digest=token_digest(key), scope=scope)
    return key


def revoke_token(user, token_id) -> int:
    return ApiToken.objects.filter(user=user, pk=token_id, revoked_at=None).update(
        revoked_at=timezone.now())


def token_for_key(key: str) -> ApiToken | None:
    """The valid token of an active user (its `user` loaded), use recorded; else None."""
    if not key.startswith(PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(
        digest=token_digest(key), revoked_at=None).first()
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def user_for_token(key: str, needed: str):
    """The active user of a valid token whose scope allows `needed`, else None."""
    token = token_for_key(key)
    return token.user if token is not None and covers(token.scope, needed) else None
