"""Idempotency keys: a client's retry of a POST returns the first result."""

from peewee import CharField, DateTimeField, ForeignKeyField

from ..db import database
from .base import BaseModel, utcnow
from .dialect import engine
from .tenancy import Workspace


class IdempotencyKey(BaseModel):
    """`fingerprint` is a hash of what was asked (operation, path, body), so
    reusing a key for a different request is detected; `resource_id` is what
    the first request created."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    key = CharField(max_length=255)
    fingerprint = CharField(max_length=64)
    resource_id = CharField(max_length=36)
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()

    class Meta:
        indexes = (
            (("workspace", "key"), True),
            (("expires_at",), False),
        )

    @classmethod
    def held(cls, workspace_id, key):
        """The key's record, if any, the key held to the end of the write
        transaction: a repeat sent at once waits for this one's commit, then
        finds its record. SQLite's write transaction holds the whole file
        already; on PostgreSQL, whose transactions see only committed rows,
        both would find none and the second fail on the unique key, so a
        lock on the key's name (pg_advisory_xact_lock) holds it there."""
        if engine.postgresql:
            database.execute_sql(_HOLD, (f"{workspace_id}:{key}",))
        return cls.get_or_none(cls.workspace == workspace_id, cls.key == key)

    @classmethod
    def live(cls, workspace_id, key, now=None):
        """The unexpired record of `key` in the workspace, if any."""
        return cls.get_or_none(
            cls.workspace == workspace_id, cls.key == key, cls.expires_at > (now or utcnow())
        )

    @classmethod
    def purge_expired(cls, now=None):
        return cls.delete().where(cls.expires_at <= (now or utcnow())).execute()


# Two keys (a namespace, the name): apart from db.claiming's one-key locks.
_HOLD = "SELECT pg_advisory_xact_lock(hashtext('idempotency'), hashtext(?))"
