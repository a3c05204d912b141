"""Plain-SQL helpers for the hot paths (receiving messages, listing them).

Building a query with peewee costs about a millisecond of Python per
statement here (every column is rendered each time), far more than SQLite
needs to run it. The few statements on the per-message path are therefore
written once as SQL text and executed with parameters; rows still come back
as model instances, so callers see no difference.
"""

from datetime import datetime
from functools import cache

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField, TextField
from peewee import __exception_wrapper__ as _peewee_errors

from ..db import database
from ..db_postgresql import postgresql_statement
from ..long_statements import executed
from .base import JSONField
from .dialect import engine
from .encrypted import EncryptedCharField


def execute(sql, *params):
    """`database.execute_sql(sql, params)` without its per-statement debug
    logging and query hooks (the service sets none): a cursor of the
    thread's connection, raising peewee's error types all the same."""
    if engine.postgresql:
        sql = postgresql_statement(sql)
    with _peewee_errors, database.turn_for(sql):
        cursor = database.cursor()
        if engine.postgresql:  # its driver yields while the server works
            return cursor.execute(sql, params)
        return executed(cursor, sql, params)


def fetch_one(model, sql, *params):
    """The first row of `sql` (selecting the model's columns) as a `model`, or None."""
    cursor = execute(sql, *params)
    row = cursor.fetchone()
    return None if row is None else _instance(model, _layout_of(model, cursor.description), row)


def read_apart(sql, *params):
    """(description, rows) of a read, on SQLite's connection for reads
    apart outside a transaction (db.read_apart): what a request reads
    before its view, or instead of it, then takes no pooled connection."""
    if engine.postgresql:
        cursor = execute(sql, *params)
        return cursor.description, cursor.fetchall()
    return database.read_apart(sql, params)


def fetch_one_apart(model, sql, *params):
    """fetch_one, read apart (read_apart)."""
    description, rows = read_apart(sql, *params)
    return _instance(model, _layout_of(model, description), rows[0]) if rows else None


def fetch_all(model, sql, *params):
    """Every row of `sql` as `model` instances."""
    cursor = execute(sql, *params)
    rows = cursor.fetchall()
    if not rows:  # often: no webhook to queue an event for (every emit asks)
        return []
    layout = _layout_of(model, cursor.description)
    return [_instance(model, layout, row) for row in rows]


def from_rows(model, columns, rows):
    """`model` instances from rows whose first values are the model's
    `columns`, in that order (values after them are left out)."""
    layout, count = _layout(model, tuple(columns)), len(columns)
    return [_instance(model, layout, row[:count]) for row in rows]


def _layout_of(model, description):
    return _layout(model, tuple(column[0] for column in description))


@cache
def _layout(model, columns):
    """The field names of the selected columns, (name, reader) of those
    whose stored value needs converting, and the positions of the model's
    columns when the table holds others too (None when it does not):
    PostgreSQL's event keeps its commit order (migration 0025)."""
    fields = {field.column_name: field for field in model._meta.sorted_fields}
    kept = tuple(position for position, column in enumerate(columns) if column in fields)
    selected = [fields[columns[position]] for position in kept]
    readers = ((field.name, _reader(field)) for field in selected)
    names = tuple(field.name for field in selected)
    others = len(kept) < len(columns)
    return names, tuple(pair for pair in readers if pair[1]), kept if others else None


# SQLite already hands these back as the Python type the field holds.
_AS_STORED = (CharField, TextField, IntegerField)


def _reader(field):
    """The field's conversion of a stored value, or None when there is none to make."""
    if isinstance(field, ForeignKeyField):
        field = field.rel_field
    return None if type(field) in _AS_STORED else field.python_value


def _instance(model, layout, row):
    names, readers, kept = layout
    if kept is not None:
        row = [row[position] for position in kept]
    data = dict(zip(names, row, strict=True))
    for name, read in readers:
        value = data[name]
        if value is not None:
            data[name] = read(value)
    return _with_data(model, data)


def _with_data(model, data):
    # What peewee's Model.__init__ leaves behind, without its per-field
    # descriptor calls (they dominate the cost of a page of rows).
    instance = model.__new__(model)
    instance.__data__ = data
    instance._dirty = set()
    instance.__rel__ = {}
    return instance


class Listing:
    """The rows of one table whose columns equal the given values (a None
    value filters nothing), as SQL text: what a listing with only such
    filters needs, without building a peewee query on every request.
    `paginate` pages it; iterating it yields every row."""

    def __init__(self, model, **equal):
        fields = model._meta.fields
        # The stored values of the filters given (None filters nothing), by field name.
        self.equal = {
            name: fields[name].db_value(value) for name, value in equal.items() if value is not None
        }
        conditions = [f'"{fields[name].column_name}" = ?' for name in self.equal]
        self.params = list(self.equal.values())
        self.model = model
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        self.text = f'SELECT * FROM "{model._meta.table_name}"{where}'
        self.form = None

    def rendered(self, form):
        """Have pages of this listing rendered by SQLite in `form` (a
        sqljson.JsonForm): only of rows counted.counted_sql can count, for
        `paginate` takes their total and version from the counts."""
        self.form = form
        return self

    def sql(self):
        return self.text, self.params

    def __iter__(self):
        return iter(fetch_all(self.model, self.text, *self.params))


def scalar(sql, *params):
    row = execute(sql, *params).fetchone()
    return row[0] if row else None


@cache
def _insert_plan(model):
    fields = model._meta.sorted_fields
    columns = ", ".join(f'"{field.column_name}"' for field in fields)
    marks = ", ".join("?" for _ in fields)
    sql = f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES ({marks})'
    defaults = tuple((field.name, field.default) for field in fields)
    writers = tuple((field.name, _writer(field)) for field in fields)
    return sql, defaults, writers, frozenset(field.name for field in fields)


# Fields whose Python value SQLite takes as it is (peewee's db_value returns
# values of these types unchanged for them; other values still go through it).
_PLAIN_FIELDS = (CharField, TextField, IntegerField, DateTimeField)
_PLAIN_VALUES = (str, int, float, datetime)


def _writer(field):
    plain = field.rel_field if isinstance(field, ForeignKeyField) else field
    if isinstance(plain, _PLAIN_FIELDS) and not isinstance(plain, (JSONField, EncryptedCharField)):
        return None
    return field.db_value


def new(model, values):
    """An instance of `model` with `values` (by field name) and the fields'
    defaults for the rest, as `model(**values)` makes it, without its
    per-field descriptor calls; nothing is stored."""
    _, defaults, _, names = _insert_plan(model)
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
    return _with_data(model, data)


def insert(instance):
    """INSERT `instance` (built with all its values) as it is: no save() hooks,
    so created_at and updated_at stay what the caller set. One cached
    statement; only the values whose stored form differs are converted."""
    sql, _, writers, _ = _insert_plan(type(instance))
    fields = type(instance)._meta.fields
    data = instance.__data__
    params = []
    for name, write in writers:
        value = data.get(name)
        if value is not None and (write is not None or type(value) not in _PLAIN_VALUES):
            value = (write or fields[name].db_value)(value)
        params.append(value)
    execute(sql, *params)
    instance._dirty.clear()
    return instance
