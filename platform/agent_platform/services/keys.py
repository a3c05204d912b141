"""API keys: creation (shown once), authentication, revocation, and the
tenancy records (companies, workspaces) keys belong to."""

import hashlib
import hmac
import secrets
from datetime import timedelta

from ..db import transaction
from ..errors import NotFound, Unauthorized, ValidationError
from ..models import ApiKey, Company, Workspace
from ..models.base import canonical_uuid, utcnow
from ..scopes import SCOPES, permissions, unknown_scopes
from .billing import new_workspace_terms

KEY_PREFIX = "apk_"
_LOOKUP_LENGTH = 12
# last_used_at is rewritten at most this often, so reads stay reads.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def hash_key(raw_key):
    return hashlib.sha256(raw_key.encode()).hexdigest()


def create_workspace(name, company_name=None):
    """A workspace in a new company (named after the workspace by default),
    on the configured plan and trial."""
    with transaction():
        company = Company.create(name=company_name or name)
        return Workspace.create(company=company, name=name, **new_workspace_terms())


def get_workspace(workspace_id):
    workspace = Workspace.get_or_none(Workspace.id == workspace_id)
    if workspace is None:
        raise NotFound(f"workspace {workspace_id} does not exist", code="WORKSPACE_NOT_FOUND")
    return workspace


def list_workspaces():
    return list(Workspace.select().order_by(Workspace.created_at, Workspace.id))


def create_key(workspace_id, name, scopes, parent=None):
    """Create a key; returns (ApiKey, raw key). The raw key is never stored.

    `parent`: the key minting this one (POST /workspaces/permissions); the
    new key shares its root, and so its rate-limit window, and is revoked
    with it. Without one (the CLI, the first start) the key is a root."""
    scopes = sorted(set(scopes))
    unknown = unknown_scopes(scopes)
    if unknown:
        raise ValidationError(
            "scopes",
            f"unknown scopes: {', '.join(unknown)}; the scopes are: {', '.join(sorted(SCOPES))}",
        )
    if not scopes:
        raise ValidationError("scopes", "at least one scope is required")
    lookup_id = secrets.token_hex(_LOOKUP_LENGTH // 2)
    raw_key = f"{KEY_PREFIX}{lookup_id}_{secrets.token_urlsafe(32)}"
    key = ApiKey.create(
        workspace=workspace_id,
        name=name,
        lookup_id=lookup_id,
        key_hash=hash_key(raw_key),
        scopes=scopes,
        parent=None if parent is None else parent.id,
        root=None if parent is None else parent.rate_limit_id,
    )
    return key, raw_key


def all_scopes():
    return sorted(SCOPES)


def authenticate(raw_key, now=None):
    """The live key for `raw_key`, or raise 401 INVALID_API_KEY."""
    lookup_id = _lookup_id(raw_key)
    return _live(ApiKey.by_lookup_id(lookup_id) if lookup_id else None, hash_key(raw_key), now)


def authenticate_counted(raw_key, limiter):
    """The live key for `raw_key` (else 401, nothing counted) and
    `limiter`'s decision on its hit, counted against the key's root. A
    limiter that counts by the database's clock (PostgreSQL) does it with
    the key's lookup in one statement: one round trip before the view."""
    if not limiter.counts_by_the_database:
        key = authenticate(raw_key)
        return key, limiter.hit(key.rate_limit_id)
    lookup_id, hashed = _lookup_id(raw_key), hash_key(raw_key)
    key, hit = (
        ApiKey.counted_by_lookup_id(lookup_id, hashed, limiter.database_window)
        if lookup_id
        else (None, None)
    )
    # No hit: the database found the hash not the key's, or the key revoked.
    return _live(key if hit else None, hashed), limiter.decided(hit)


def _live(key, hashed, now=None):
    """`key` when it is live and `hashed` (the hash of the secret the
    request carries) is its hash; else 401."""
    if key is None or key.is_revoked or not hmac.compare_digest(key.key_hash, hashed):
        raise Unauthorized("The API key is invalid or has been revoked.", code="INVALID_API_KEY")
    now = now or utcnow()
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        key.touch(now)
    return key


def _lookup_id(raw_key):
    """The lookup id `raw_key` names, or "" when it is not a key's form."""
    if not raw_key.startswith(KEY_PREFIX):
        return ""
    return raw_key[len(KEY_PREFIX) : len(KEY_PREFIX) + _LOOKUP_LENGTH]


def list_keys(workspace_id=None):
    """Every key, or a workspace's (which must exist)."""
    query = ApiKey.select().order_by(ApiKey.created_at)
    if workspace_id is not None:
        query = query.where(ApiKey.workspace == get_workspace(workspace_id))
    return list(query)


def revoke_key(key_id, now=None):
    """Revoke a key (again: unchanged) and every key minted from it, in one
    transaction; returns (key, how many minted keys were revoked now)."""
    with transaction():
        key = ApiKey.get_or_none(ApiKey.id == key_id)
        if key is None:
            raise NotFound(f"API key {key_id} does not exist", code="API_KEY_NOT_FOUND")
        return key, key.revoke(now)


def revoke_workspace_key(workspace_id, key_id, now=None):
    """revoke_key for a key of this workspace only (another's is 404);
    returns (key, how many minted keys were revoked now)."""
    with transaction():
        key_uuid = canonical_uuid(key_id)
        key = key_uuid and ApiKey.in_workspace_by_id(workspace_id, key_uuid)
        if not key:
            raise NotFound(f"API key {key_id} does not exist", code="API_KEY_NOT_FOUND")
        return key, key.revoke(now)


def ensure_first_admin_key():
    """On an empty database, create a default company, workspace and one
    admin key with every scope; returns the raw key, or None if not empty."""
    with transaction():
        if Company.select().exists():
            return None
        workspace = create_workspace("Default workspace", "Default company")
        _, raw_key = create_key(workspace.id, "admin", all_scopes())
        return raw_key


def describe_key(api_key):
    """What GET /v1/me tells about the calling key."""
    return {
        "key_name": api_key.name,
        "company_id": api_key.company_id,
        "workspace_id": api_key.workspace_id,
        "scopes": api_key.scopes,
        "permissions": permissions(api_key.scopes),
    }
