"""Schema pieces shared by every resource."""

from datetime import UTC

import marshmallow as ma
from marshmallow import fields, post_dump


class UtcDateTime(fields.DateTime):
    """Stored times are naive UTC; they are rendered ISO 8601 with a Z."""

    def _serialize(self, value, attr, obj, **kwargs):
        if value is None:
            return None
        return value.isoformat(timespec="microseconds") + "Z"

    def _deserialize(self, value, attr, data, **kwargs):
        parsed = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC)
        return parsed.replace(tzinfo=None)


class Bare(dict):
    """A dumped body that is sent as it is, not wrapped in {"data": ...}."""


class BareSchema(ma.Schema):
    """Base for bodies that carry their own envelope (lists, health, variants)."""

    @post_dump
    def mark_bare(self, data, **kwargs):
        return Bare(data)


class ErrorDetailSchema(ma.Schema):
    code = fields.String(metadata={"description": "Stable machine-readable code"})
    message = fields.String(metadata={"description": "What went wrong, naming the field"})
    status = fields.Integer(metadata={"description": "The HTTP status, repeated"})


class ErrorSchema(ma.Schema):
    error = fields.Nested(ErrorDetailSchema)
