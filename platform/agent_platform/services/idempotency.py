"""Idempotency-Key: a create repeated with the same key within its lifetime
returns what the first request created and creates nothing; the same key
with a different request is 409 IDEMPOTENCY_KEY_REUSED. One record per key
and workspace, whatever the operation (models/idempotency.py)."""

import hashlib
import json
from datetime import timedelta

from ..errors import Conflict
from ..models import IdempotencyKey


def fingerprint(operation, target_id, body):
    """A hash of what was asked: the operation, what it acts on, the body."""
    request = {"operation": operation, "target": target_id, "body": body}
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def replay(workspace_id, key, asked, now, find):
    """What the key's first request created (`find(resource_id)`), or None
    when the key is free: never used, expired, or its creation since erased.
    Call inside the write transaction, so two repeats cannot both create."""
    record = IdempotencyKey.held(workspace_id, key)
    if record is None:
        return None
    if record.expires_at <= now:
        record.delete_instance()
        return None
    if record.fingerprint != asked:
        raise Conflict(
            f"Idempotency-Key {key!r} was already used for a different request "
            f"in the last {_hours(record)} hours; use a new key.",
            code="IDEMPOTENCY_KEY_REUSED",
        )
    return _original(record, find)


def remember(workspace_id, key, asked, resource_id, now, ttl_hours):
    """Keep the key's answer for `ttl_hours` (in the creating transaction)."""
    IdempotencyKey.create(
        workspace=workspace_id,
        key=key,
        fingerprint=asked,
        resource_id=resource_id,
        created_at=now,
        expires_at=now + timedelta(hours=ttl_hours),
    )


def _original(record, find):
    original = find(record.resource_id)
    if original is None:
        record.delete_instance()  # its creation was erased: the key is free again
    return original


def _hours(record):
    return round((record.expires_at - record.created_at).total_seconds() / 3600)
