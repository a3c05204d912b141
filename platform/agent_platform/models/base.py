"""Base model: UUID string ids, UTC timestamps, JSON columns, workspace scoping."""

import json
import uuid
from datetime import UTC, datetime

from peewee import CharField, DateTimeField, DoesNotExist, Model, TextField

from ..db import database


def utcnow():
    """Naive UTC now: every stored time is UTC, rendered with a trailing Z."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id():
    return str(uuid.uuid4())


def canonical_uuid(value):
    """The canonical string form of a UUID, or None when `value` is not one."""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


class JSONField(TextField):
    """A JSON document stored as text."""

    def db_value(self, value):
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def python_value(self, value):
        return None if value is None else json.loads(value)


class UtcDateTimeField(DateTimeField):
    """A stored UTC time, read with datetime.fromisoformat: peewee's own parse
    tries strptime formats in turn, which is the biggest cost of a page."""

    def python_value(self, value):
        if isinstance(value, str):
            return datetime.fromisoformat(value)
        return super().python_value(value)


class BaseModel(Model):
    id = CharField(primary_key=True, max_length=36, default=new_id)

    class Meta:
        database = database
        legacy_table_names = False


class TimestampedModel(BaseModel):
    created_at = UtcDateTimeField(default=utcnow)
    updated_at = UtcDateTimeField(default=utcnow)

    def save(self, *args, **kwargs):
        # An update moves updated_at; an insert keeps the one set with created_at.
        keep = kwargs.pop("keep_updated_at", False)
        if self._pk is not None and not kwargs.get("force_insert") and not keep:
            self.updated_at = utcnow()
        return super().save(*args, **kwargs)


class WorkspaceScoped:
    """Queries for models that belong to a workspace.

    `in_workspace` is the only way the API layer reaches these tables, so a
    row of another workspace is simply not found (404), never forbidden.
    """

    @classmethod
    def in_workspace(cls, workspace_id):
        return cls.select().where(cls.workspace == workspace_id)

    @classmethod
    def get_in_workspace(cls, workspace_id, object_id, not_found):
        """The row with `object_id` in the workspace, else raise `not_found`."""
        object_id = canonical_uuid(object_id)
        if object_id is None:
            raise not_found
        try:
            return cls.in_workspace(workspace_id).where(cls.id == object_id).get()
        except DoesNotExist:
            raise not_found from None
