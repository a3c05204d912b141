"""Schema pieces shared by every resource."""

from datetime import UTC, date

import marshmallow as ma
from marshmallow import fields, post_dump

# The dates a client may send. Services add a day to a period's end or
# compare with a zone's offset applied: at the very edges of what Python's
# dates hold that overflows, and no real question needs year 1 or 9999.
EARLIEST_DATE = date(1970, 1, 1)
LATEST_DATE = date(9998, 12, 31)
DATE_RANGE = f"{EARLIEST_DATE.isoformat()} to {LATEST_DATE.isoformat()}"


def _check_date_range(day):
    if not EARLIEST_DATE <= day <= LATEST_DATE:
        raise ma.ValidationError(f"Must be a date from {DATE_RANGE} (UTC).")


class UtcDateTime(fields.DateTime):
    """Stored times are naive UTC; they are rendered ISO 8601 with a Z."""

    def _serialize(self, value, attr, obj, **kwargs):
        if value is None:
            return None
        return value.isoformat(timespec="microseconds") + "Z"

    def _deserialize(self, value, attr, data, **kwargs):
        parsed = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is not None:
            _check_date_range(parsed.date())  # before the offset can overflow
            parsed = parsed.astimezone(UTC)
        _check_date_range(parsed.date())
        return parsed.replace(tzinfo=None)


class BoundedDate(fields.Date):
    """A calendar date within the accepted range."""

    def _deserialize(self, value, attr, data, **kwargs):
        parsed = super()._deserialize(value, attr, data, **kwargs)
        _check_date_range(parsed)
        return parsed


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
