"""Row counts SQLite keeps itself, so a listing's total is not a count.

COUNT(*) walks every index entry of the workspace: about half a million
instructions for a thousand rows, more than the rest of a page together, and
it grows with the table. A model that declares `COUNTED_BY` (a boolean or
integer column) has its rows counted per workspace and per value of that
column in `row_count`, by triggers in its migration: they run inside the
statement that changes the rows, so the count is exact in every transaction
and for every writer, the CLI included. tests/test_counts.py checks each
counted model's triggers against COUNT(*).
"""

from peewee import CharField, CompositeKey, ForeignKeyField, IntegerField, Model

from ..db import database
from .tenancy import Workspace


class RowCount(Model):
    table_name = CharField()
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE")
    subset = IntegerField()  # the row's value of its model's COUNTED_BY column
    rows = IntegerField()
    version = IntegerField(default=0)  # moved forward by every change of the subset's rows

    class Meta:
        database = database
        table_name = "row_count"
        primary_key = CompositeKey("table_name", "workspace", "subset")
        without_rowid = True


def counted_sql(model, equal):
    """SQL and parameters reading the number of `model`'s rows whose columns
    equal `equal` (field name -> value) from row_count, and the sum of their
    subsets' versions, or None when the counts cannot tell it (the model keeps
    none, or other columns are filtered)."""
    subset_column = getattr(model, "COUNTED_BY", None)
    if subset_column is None or "workspace" not in equal:
        return None
    if not set(equal) <= {"workspace", subset_column}:
        return None
    sql = (
        'SELECT coalesce(sum("rows"), 0), coalesce(sum("version"), 0) FROM "row_count"'
        ' WHERE "table_name" = ? AND "workspace_id" = ?'
    )
    params = [model._meta.table_name, equal["workspace"]]
    if subset_column in equal:
        sql += ' AND "subset" = ?'
        params.append(_subset(equal[subset_column]))
    return sql, params


def _subset(value):
    """A subset's stored value: the triggers store a boolean column's as 0
    or 1 (PostgreSQL compares a boolean with no integer)."""
    return int(value) if isinstance(value, bool) else value
