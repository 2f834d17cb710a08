"""Personal API tokens: shown once, stored as a SHA-256 digest, acting as their user (so
they see that user's teams only), revocable."""
from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from .models import ApiToken

PREFIX = "pw_"


def token_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_token(user, name: str) -> str:
    """The key, for showing once; only its digest is kept."""
    key = PREFIX + secrets.token_urlsafe(32)  # 256 random bits
    ApiToken.objects.create(user=user, name=name[:100] or "token", prefix=key[:8],
                            digest=token_digest(key))
    return key


def revoke_token(user, token_id) -> int:
    return ApiToken.objects.filter(user=user, pk=token_id, revoked_at=None).update(
        revoked_at=timezone.now())


def user_for_token(key: str):
    """The active user of a valid token, else None."""
    if not key.startswith(PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(
        digest=token_digest(key), revoked_at=None).first()
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user
