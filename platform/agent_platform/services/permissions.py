"""Permissions of the variant address form: API keys a key creates for its
own workspace, never with a scope the creating key does not hold; listed
without their secrets, and revoked by a key that holds all their scopes.

A minted key is the child of the key that minted it: revoking a key revokes
its children, theirs, and so on, and all of them share the rate-limit window
of the chain's root (see ApiKey)."""

from ..db import transaction
from ..errors import Forbidden, NotFound, Unauthorized
from ..models import ApiKey
from ..models.pagination import paginate
from . import keys


def create_permission(api_key, name, scopes, workspace_id=None):
    """A new key in the caller's workspace; returns (ApiKey, raw key)."""
    if workspace_id is not None and str(workspace_id) != api_key.workspace_id:
        raise Forbidden(
            f"This API key has no access to workspace {workspace_id}.",
            code="WORKSPACE_ACCESS_DENIED",
        )
    _check_holds(api_key, scopes, "grant")
    with transaction():
        # Read again under the write lock: a key revoked since the request
        # was admitted must not leave a live child behind.
        if ApiKey.select().where((ApiKey.id == api_key.id) & ApiKey.revoked_at.is_null()).exists():
            return keys.create_key(api_key.workspace_id, name, scopes, parent=api_key)
    raise Unauthorized("The API key is invalid or has been revoked.", code="INVALID_API_KEY")


def list_permissions(api_key, paging, is_revoked=None):
    """A page of the caller's workspace's keys, every one however it was made."""
    return paginate(ApiKey.of_workspace(api_key.workspace_id, is_revoked), ApiKey, paging)


def revoke_permission(api_key, permission_id, now=None):
    """Revoke a key of the caller's workspace (again: unchanged) and every
    key minted from it, in one transaction; returns the key.

    A key may revoke only keys whose every scope it holds, as it may create
    only those: a narrow key cannot lock out a broader one. The keys minted
    from it hold at most its scopes, so the caller holds theirs too."""
    with transaction():
        key = ApiKey.in_workspace_by_id(api_key.workspace_id, permission_id)
        if key is None:
            raise NotFound(f"permission {permission_id} not found", code="PERMISSION_NOT_FOUND")
        _check_holds(api_key, key.scopes, "revoke a key with")
        key.revoke(now)
        return key


def _check_holds(api_key, scopes, action):
    beyond = sorted(set(scopes) - set(api_key.scopes))
    if beyond:
        raise Forbidden(
            f"This API key cannot {action} scopes it does not hold: {', '.join(beyond)}.",
            code="INSUFFICIENT_SCOPE",
        )
