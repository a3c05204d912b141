"""Schema pieces shared by every resource."""

from datetime import UTC, datetime

import marshmallow as ma
from marshmallow import fields, post_dump, validate

from ... import formats

# Times a request may carry: a day's arithmetic either side stays a valid date.
EARLIEST = datetime(1970, 1, 1)
LATEST = datetime(9999, 12, 30, 23, 59, 59, 999999)
OUT_OF_RANGE = "Must be between 1970-01-01 and 9999-12-30 (UTC)."
# The range as documented patterns (OpenAPI has no bounds for dates). A time
# is documented from 1971 to 9998: with any UTC offset it falls in range.
DATE_PATTERN = r"^(?!9999-12-31)(19[7-9][0-9]|[2-9][0-9]{3})-"
TIME_PATTERN = r"^(197[1-9]|19[89][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-"
# One line of visible text: no control character (Unicode category Cc), not
# only spaces; the empty string is left to each field's length.
NAME_PATTERN = r"^(?!\s+$)[^\x00-\x1f\x7f-\x9f]*$"
MAX_URL = 2000


def _documented(kwargs, **doc):
    """kwargs with `doc` added to the field's OpenAPI metadata."""
    return {**kwargs, "metadata": {**doc, **kwargs.get("metadata", {})}}


class UtcDateTime(fields.DateTime):
    """Stored times are naive UTC; they are rendered ISO 8601 with a Z."""

    def __init__(self, **kwargs):
        super().__init__(**_documented(kwargs, pattern=TIME_PATTERN))

    def _serialize(self, value, attr, obj, **kwargs):
        if value is None:
            return None
        return value.isoformat(timespec="microseconds") + "Z"

    def _deserialize(self, value, attr, data, **kwargs):
        parsed = super()._deserialize(value, attr, data, **kwargs)
        try:
            if parsed.tzinfo is not None:
                parsed = parsed.astimezone(UTC)
        except OverflowError:
            parsed = None  # an offset past year 1 or 9999
        if parsed is None or not EARLIEST <= parsed.replace(tzinfo=None) <= LATEST:
            raise ma.ValidationError(OUT_OF_RANGE)
        return parsed.replace(tzinfo=None)


class UtcDate(fields.Date):
    """A whole UTC day, within the range of times."""

    def __init__(self, **kwargs):
        super().__init__(**_documented(kwargs, pattern=DATE_PATTERN))

    def _deserialize(self, value, attr, data, **kwargs):
        parsed = super()._deserialize(value, attr, data, **kwargs)
        if not EARLIEST.date() <= parsed <= LATEST.date():
            raise ma.ValidationError(OUT_OF_RANGE)
        return parsed


class LengthFirst:
    """A text field whose length is checked before its text is read: a
    name's characters, a URL's pattern took 20 to 60 ms a megabyte of the
    server's loop, for a value its length refuses anyway."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str):
            for length in (each for each in self.validators if isinstance(each, validate.Length)):
                length(value)
        return super()._deserialize(value, attr, data, **kwargs)


class Name(LengthFirst, fields.String):
    """A name people read: one line of visible text. Control characters
    (NUL, line breaks, tabs) and names of nothing but spaces are refused."""

    def __init__(self, **kwargs):
        super().__init__(**_documented(kwargs, pattern=NAME_PATTERN))

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        problem = formats.name_problem(text)
        if problem:
            raise ma.ValidationError(problem)
        return text


class HttpUrl(LengthFirst, fields.Url):
    """An http or https URL of at most MAX_URL characters."""

    def __init__(self, **kwargs):
        bound = validate.Length(max=MAX_URL)
        super().__init__(schemes={"http", "https"}, validate=bound, **kwargs)


class Bare(dict):
    """A dumped body that is sent as it is, not wrapped in {"data": ...}."""


class BareSchema(ma.Schema):
    """Base for bodies that carry their own envelope (lists, health, variants)."""

    @post_dump
    def mark_bare(self, data, **kwargs):
        return Bare(data)


# Documentation only (the error renderer writes the body): every field is
# always there, so `required` lets generated clients type them as given.
class ErrorDetailSchema(ma.Schema):
    code = fields.String(required=True, metadata={"description": "Stable machine-readable code"})
    message = fields.String(
        required=True, metadata={"description": "What went wrong, naming the field"}
    )
    status = fields.Integer(required=True, metadata={"description": "The HTTP status, repeated"})


class ErrorSchema(ma.Schema):
    error = fields.Nested(ErrorDetailSchema, required=True)
