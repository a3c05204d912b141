"""Permissions of the variant address form: API keys a key creates for its
own workspace, never with a scope the creating key does not hold."""

from ..db import transaction
from ..errors import Forbidden
from . import keys


def create_permission(api_key, name, scopes, workspace_id=None):
    """A new key in the caller's workspace; returns (ApiKey, raw key)."""
    if workspace_id is not None and str(workspace_id) != api_key.workspace_id:
        raise Forbidden(
            f"This API key has no access to workspace {workspace_id}.",
            code="WORKSPACE_ACCESS_DENIED",
        )
    beyond = sorted(set(scopes) - set(api_key.scopes))
    if beyond:
        raise Forbidden(
            f"This API key cannot grant scopes it does not hold: {', '.join(beyond)}.",
            code="INSUFFICIENT_SCOPE",
        )
    with transaction():
        return keys.create_key(api_key.workspace_id, name, scopes)
