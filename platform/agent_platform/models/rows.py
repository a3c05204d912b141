"""New rows for the per-message path (a stored message, its event), made
and inserted without peewee's per-field machinery.

`Model(**values)` computes every default, then sets each value through a
descriptor that also marks it dirty; inserting then adapts every field.
That is a fifth of the Python a received WhatsApp message costs in
`receive_inbound`. `new` leaves behind the same instance (the values given,
the fields' defaults for the rest) and `insert` writes it with one cached
statement, converting only the fields whose stored form differs (JSON).
"""

from datetime import datetime
from functools import cache

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from ..db import database
from .base import JSONField

# Fields whose Python value SQLite takes as it is (peewee's db_value returns
# it unchanged for these types of value; others still go through it).
_PLAIN_FIELDS = (CharField, TextField, IntegerField, DateTimeField)
_PLAIN_VALUES = (str, int, float, datetime)


@cache
def _plan(model):
    fields = model._meta.sorted_fields
    columns = ", ".join(f'"{field.column_name}"' for field in fields)
    marks = ", ".join("?" for _ in fields)
    sql = f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES ({marks})'
    defaults = tuple((field.name, field.default) for field in fields)
    converters = tuple((field.name, _converter(field)) for field in fields)
    return sql, defaults, converters, frozenset(field.name for field in fields)


def _converter(field):
    plain = field.rel_field if isinstance(field, ForeignKeyField) else field
    if isinstance(plain, _PLAIN_FIELDS) and not isinstance(plain, JSONField):
        return None
    return field.db_value


def new(model, values):
    """An instance of `model` with `values` (by field name) and the fields'
    defaults for the rest, as `model(**values)` makes it; nothing is stored."""
    _, defaults, _, names = _plan(model)
    unknown = values.keys() - names
    if unknown:
        raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    data = {}
    for name, default in defaults:
        if name in values:
            data[name] = values[name]
        elif callable(default):
            data[name] = default()
        else:
            data[name] = default
    instance = model.__new__(model)
    instance.__data__ = data
    instance._dirty = set()
    instance.__rel__ = {}
    return instance


def insert(instance):
    """INSERT `instance` as it is (no save() hooks); returns it."""
    sql, _, converters, _ = _plan(type(instance))
    data = instance.__data__
    params = []
    for name, convert in converters:
        value = data[name]
        if value is not None and (convert is not None or type(value) not in _PLAIN_VALUES):
            value = (convert or type(instance)._meta.fields[name].db_value)(value)
        params.append(value)
    database.execute_sql(sql, params)
    return instance
