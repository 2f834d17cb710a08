"""`Authorization: Token pw_...` with the personal tokens of api_tokens.py. A subclass of
DRF's TokenAuthentication so the OpenAPI schema describes it as such. The token itself
becomes `request.auth`, for its scope (scopes.py)."""
from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from ..api_tokens import token_for_key


class PersonalTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key):
        token = token_for_key(key)
        if token is None:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        return token.user, token
