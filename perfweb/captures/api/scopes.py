"""What scope of token each API request needs (api_tokens.py): reading (GET, HEAD,
OPTIONS) needs read; the actions a view names in `upload_actions` need upload; every
other request that changes something needs admin, so a new endpoint that writes is
admin-only until someone decides otherwise. Requests with the browser session have no
token and are not limited."""
from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from ..api_tokens import ADMIN, READ, UPLOAD, covers
from ..models import ApiToken


def needed_scope(request, view) -> str:
    if request.method in SAFE_METHODS:
        return READ
    action = getattr(view, "action", None) or request.method.lower()
    return UPLOAD if action in getattr(view, "upload_actions", ()) else ADMIN


class TokenScope(BasePermission):
    """403 with a sentence naming the scope a token lacks."""

    def has_permission(self, request, view) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        needed = needed_scope(request, view)
        if covers(token.scope, needed):
            return True
        self.message = (f"This token's scope is {token.scope}; {request.method} "
                        f"{request.path} needs a token with the {needed} scope "
                        f"(create one on the API tokens page).")
        return False
