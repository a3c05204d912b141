"""Idempotency keys: a client's retry of a POST returns the first result."""

from peewee import CharField, DateTimeField, ForeignKeyField

from .base import BaseModel, utcnow
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
    def live(cls, workspace_id, key, now=None):
        """The unexpired record of `key` in the workspace, if any."""
        return cls.get_or_none(
            cls.workspace == workspace_id, cls.key == key, cls.expires_at > (now or utcnow())
        )

    @classmethod
    def purge_expired(cls, now=None):
        return cls.delete().where(cls.expires_at <= (now or utcnow())).execute()
