"""Permissions of the variant address form: API keys a key creates for its
own workspace, never with a scope the creating key does not hold; listed
without their secrets, and revoked by a key that holds all their scopes."""

from ..db import transaction
from ..errors import Forbidden, NotFound
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
        return keys.create_key(api_key.workspace_id, name, scopes)


def list_permissions(api_key, paging, is_revoked=None):
    """A page of the caller's workspace's keys, every one however it was made."""
    return paginate(ApiKey.of_workspace(api_key.workspace_id, is_revoked), ApiKey, paging)


def revoke_permission(api_key, permission_id, now=None):
    """Revoke a key of the caller's workspace (again: unchanged); returns it.

    A key may revoke only keys whose every scope it holds, as it may create
    only those: a narrow key cannot lock out a broader one."""
    with transaction():
        key = ApiKey.in_workspace_by_id(api_key.workspace_id, permission_id)
        if key is None:
            raise NotFound(f"permission {permission_id} not found", code="PERMISSION_NOT_FOUND")
        _check_holds(api_key, key.scopes, "revoke a key with")
        if not key.is_revoked:
            key.revoke(now)
        return key


def _check_holds(api_key, scopes, action):
    beyond = sorted(set(scopes) - set(api_key.scopes))
    if beyond:
        raise Forbidden(
            f"This API key cannot {action} scopes it does not hold: {', '.join(beyond)}.",
            code="INSUFFICIENT_SCOPE",
        )
