"""`Authorization: Token pw_...` with the personal tokens of api_tokens.py. A subclass of
DRF's TokenAuthentication so the OpenAPI schema describes it as such."""
from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from ..api_tokens import user_for_token


class PersonalTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key):
        user = user_for_token(key)
        if user is None:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        return user, key
