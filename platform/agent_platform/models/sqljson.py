"""A model's API form written by SQLite, for pages of rows.

A listing page can have SQLite write each row as JSON text, which the
response then carries as it is: no model instances, no dicts, no encoder
walking them. A row costs a few string operations in C instead of about a
hundred thousand Python instructions, most of a page's cost.

Each row is one printf() whose format holds the keys and punctuation, and
whose arguments are the values already written as JSON: that is a third
cheaper than concatenating the pieces (each `||` allocates a new string),
and far cheaper than json_object(), which would parse every stored JSON
document again to embed it. The expression is derived from the model's
fields, so it writes each value as `as_dict()` and the JSON encoder do: times
in the API's form (ISO 8601, microseconds, Z), booleans as true/false, text
quoted by json_quote, stored JSON documents as they are; a column declared
NOT NULL skips the test for NULL. Values the same for every row of a page
(a company id) are written as JSON here and bound as parameters. A test
compares both renderings.

On PostgreSQL the same object is written by format() (its %s is printf's),
with PostgreSQL's functions for each value (_POSTGRESQL_WRITERS).
"""

import json
from functools import cache

from peewee import BooleanField, CharField, ForeignKeyField, IntegerField, TextField

from .base import JSONField, UtcDateTimeField
from .dialect import engine


def _time(column, nullable):
    # Stored naive UTC as 'YYYY-MM-DD HH:MM:SS[.ffffff]' (by the service's own
    # adapter: never a character JSON must escape); whole seconds have no fraction.
    iso = f"replace({column}, ' ', 'T') || iif(length({column}) = 19, '.000000Z', 'Z')"
    if nullable:
        return "%s", f"""iif({column} IS NULL, 'null', '"' || {iso} || '"')"""
    return '"%s"', iso


def _boolean(column, nullable):
    if nullable:
        return (
            "%s",
            f"CASE WHEN {column} IS NULL THEN 'null' WHEN {column} THEN 'true' ELSE 'false' END",
        )
    return "%s", f"iif({column}, 'true', 'false')"


def _document(column, nullable):
    return "%s", f"coalesce({column}, 'null')" if nullable else column


def _integer(column, nullable):
    return "%s", f"coalesce({column}, 'null')" if nullable else column


def _text(column, nullable):
    # json_quote(NULL) is null.
    return "%s", f"json_quote({column})"


# In this order: JSONField is a TextField, and is written as the document it holds.
_WRITERS = (
    (JSONField, _document),
    (UtcDateTimeField, _time),
    (BooleanField, _boolean),
    (IntegerField, _integer),
    ((CharField, TextField), _text),
)


def _pg_time(column, nullable):
    iso = f"""to_char({column}, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
    return "%s", f"""coalesce('"' || {iso} || '"', 'null')"""


def _pg_boolean(column, nullable):
    return _boolean(column, nullable=True)  # CASE: iif() is SQLite's


def _pg_integer(column, nullable):
    return "%s", f"coalesce({column}::text, 'null')"


def _pg_text(column, nullable):
    return "%s", f"coalesce(to_json({column})::text, 'null')"


_POSTGRESQL_WRITERS = (
    (JSONField, _document),
    (UtcDateTimeField, _pg_time),
    (BooleanField, _pg_boolean),
    (IntegerField, _pg_integer),
    ((CharField, TextField), _pg_text),
)


def _value(field, postgresql):
    """The printf conversion and the argument that write the field's value."""
    stored = field.rel_field if isinstance(field, ForeignKeyField) else field
    for kinds, write in _POSTGRESQL_WRITERS if postgresql else _WRITERS:
        if isinstance(stored, kinds):
            return write(f'"{field.column_name}"', field.null)
    raise TypeError(f"{type(stored).__name__} {field.name} has no JSON form in SQL")


class RawJson:
    """JSON text already written (by SQLite): the response carries it as it is."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class JsonForm:
    """The JSON object of `names`, in order: each a field of `model`, or a
    value given in `constants` (the same for every row)."""

    def __init__(self, model, names, **constants):
        self.expression = _object_expression(
            model, tuple(names), tuple(sorted(constants)), engine.postgresql
        )
        self.params = [json.dumps(constants[name]) for name in names if name in constants]

    @staticmethod
    def read(rows):
        """Rows of one rendered column, as one JSON array."""
        return RawJson(f"[{','.join(row[0] for row in rows)}]")


@cache
def _object_expression(model, names, constant_names, postgresql):
    fields = model._meta.fields
    members, arguments = [], []
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"{name!r} cannot be written as a JSON key here")
        if name in constant_names:  # typed: PostgreSQL's format() takes "any"
            conversion, argument = "%s", "?::text" if postgresql else "?"
        else:
            conversion, argument = _value(fields[name], postgresql)
        members.append(f'"{name}":{conversion}')
        arguments.append(argument)
    function = "format" if postgresql else "printf"
    return f"{function}('{{{','.join(members)}}}', {', '.join(arguments)})"
