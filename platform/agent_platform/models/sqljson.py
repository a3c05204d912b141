"""A model's API form written by SQLite, for pages of rows.

A listing page can have SQLite write each row as JSON text, which the
response then carries as it is: no model instances, no dicts, no encoder
walking them. A row costs a few string operations in C instead of about a
hundred thousand Python instructions, most of a page's cost. Each row is
spelt by concatenation, not json_object(): that would parse every stored JSON
document again to embed it. The expression is derived from the model's
fields, so it writes each value as `as_dict()` and the JSON encoder do: times
in the API's form (ISO 8601, microseconds, Z), booleans as true/false, text
quoted by json_quote, stored JSON documents as they are. Values the same for
every row of a page (a company id) are bound as parameters. A test compares
both renderings.
"""

from functools import cache

from peewee import BooleanField, CharField, ForeignKeyField, IntegerField, TextField

from .base import JSONField, UtcDateTimeField


def _time(column):
    # Stored naive UTC as 'YYYY-MM-DD HH:MM:SS[.ffffff]'; whole seconds have no fraction.
    iso = f"""'"' || replace({column}, ' ', 'T')"""
    return (
        f"CASE WHEN {column} IS NULL THEN 'null'"
        f""" WHEN length({column}) = 19 THEN {iso} || '.000000Z"' ELSE {iso} || 'Z"' END"""
    )


def _boolean(column):
    return f"CASE WHEN {column} IS NULL THEN 'null' WHEN {column} THEN 'true' ELSE 'false' END"


# In this order: JSONField is a TextField, and is written as the document it holds.
_WRITERS = (
    (JSONField, "coalesce({}, 'null')".format),
    (UtcDateTimeField, _time),
    (BooleanField, _boolean),
    ((CharField, TextField, IntegerField), "json_quote({})".format),
)


def _value(field):
    stored = field.rel_field if isinstance(field, ForeignKeyField) else field
    column = f'"{field.column_name}"'
    for kinds, write in _WRITERS:
        if isinstance(stored, kinds):
            return write(column)
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
        self.expression = _object_expression(model, tuple(names), tuple(sorted(constants)))
        self.params = [constants[name] for name in names if name in constants]

    @staticmethod
    def read(rows):
        """Rows of one rendered column, as one JSON array."""
        return RawJson(f"[{','.join(row[0] for row in rows)}]")


@cache
def _object_expression(model, names, constant_names):
    fields = model._meta.fields
    parts = []
    for name in names:
        if not name.isidentifier():
            raise ValueError(f"{name!r} cannot be written as a JSON key here")
        value = "json_quote(?)" if name in constant_names else _value(fields[name])
        parts.append(f"""'"{name}":' || {value}""")
    return "'{' || " + " || ',' || ".join(parts) + " || '}'"
