"""The sales pipeline: its columns, the opportunities on them, their moves."""

from peewee import (
    CharField,
    CompositeKey,
    DateField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)

from ..db import database
from ..money import from_minor
from .base import BaseModel, TimestampedModel, UtcDateTimeField, WorkspaceScoped, utcnow
from .contacts import Contact
from .fastsql import execute, fetch_all
from .leads import Lead
from .tenancy import Workspace

# open columns hold deals in progress; won and lost ones close them.
COLUMN_KINDS = ("open", "won", "lost")


class PipelineColumn(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(
        Workspace, backref="pipeline_columns", on_delete="CASCADE", index=False
    )
    name = CharField(max_length=100)
    position = IntegerField()
    probability = IntegerField()  # percent, 0 to 100
    kind = CharField(max_length=10, default="open")

    class Meta:
        indexes = ((("workspace", "position"), False),)

    @classmethod
    def ordered(cls, workspace_id):
        sql = 'SELECT * FROM "pipeline_column" WHERE "workspace_id" = ? ORDER BY "position", "id"'
        return fetch_all(cls, sql, workspace_id)

    def as_dict(self):
        return {
            "id": self.id,
            "name": self.name,
            "position": self.position,
            "probability": self.probability,
            "kind": self.kind,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class Opportunity(TimestampedModel, WorkspaceScoped):
    """`value_minor` is the value in the currency's minor unit (money.py);
    `status` follows the kind of its column."""

    workspace = ForeignKeyField(
        Workspace, backref="opportunities", on_delete="CASCADE", index=False
    )
    title = CharField(max_length=200)
    contact = ForeignKeyField(Contact, null=True, on_delete="SET NULL")
    lead = ForeignKeyField(Lead, null=True, on_delete="SET NULL")
    value_minor = IntegerField(default=0)
    currency = CharField(max_length=3)
    # NO ACTION, checked at the end of the statement: a workspace deleted
    # with its columns and opportunities at once is not refused.
    column = ForeignKeyField(PipelineColumn, backref="opportunities")
    owner = CharField(max_length=200, null=True)
    expected_close_date = DateField(null=True)
    lost_reason = TextField(null=True)
    status = CharField(max_length=10, default="open")
    closed_at = UtcDateTimeField(null=True)

    class Meta:
        indexes = (
            (("workspace", "created_at", "id"), False),
            (("workspace", "updated_at", "id"), False),
        )

    def as_dict(self):
        return {
            "id": self.id,
            "title": self.title,
            "contact_id": self.contact_id,
            "lead_id": self.lead_id,
            "value": from_minor(self.value_minor, self.currency),
            "value_minor": self.value_minor,
            "currency": self.currency,
            "column_id": self.column_id,
            "status": self.status,
            "owner": self.owner,
            "expected_close_date": _day(self.expected_close_date),
            "lost_reason": self.lost_reason,
            "closed_at": self.closed_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    @classmethod
    def count_in(cls, column_id):
        sql = 'SELECT count(*) FROM "opportunity" WHERE "column_id" = ?'
        return execute(sql, column_id).fetchone()[0]


def _day(value):
    return None if value is None else value.isoformat()


class PipelineTotal(Model):
    """Count and value of a workspace's opportunities per column and
    currency, kept by triggers on opportunity (migration 0014) inside the
    statement that changes them, so the summary reads a few rows instead of
    every opportunity. The value is kept in two integer halves, the sums of
    each value's bits above 30 and of its low 30 bits: no sum of 15-digit
    values overflows SQLite's 64-bit integers (which would turn it into a
    float) and none goes through a float."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    column = ForeignKeyField(PipelineColumn, on_delete="CASCADE")
    currency = CharField(max_length=3)
    opportunities = IntegerField()
    value_high = IntegerField()
    value_low = IntegerField()

    class Meta:
        database = database
        table_name = "pipeline_total"
        primary_key = CompositeKey("workspace", "column", "currency")
        without_rowid = True


_SUMMARY = (
    'SELECT "column_id", "currency", "opportunities", "value_high", "value_low" '
    'FROM "pipeline_total" WHERE "workspace_id" = ? AND "opportunities" > 0'
)


def summary_rows(workspace_id):
    """(column id, currency, count, total minor units) per column and currency."""
    rows = execute(_SUMMARY, workspace_id).fetchall()
    return [(column, currency, n, (high << 30) + low) for column, currency, n, high, low in rows]


class OpportunityMove(BaseModel):
    """One move of an opportunity between columns (from None: its creation)."""

    opportunity = ForeignKeyField(Opportunity, backref="moves", on_delete="CASCADE", index=False)
    from_column_id = CharField(max_length=36, null=True)
    to_column_id = CharField(max_length=36)
    to_column_name = CharField(max_length=100)
    actor = CharField(max_length=200, null=True)
    moved_at = UtcDateTimeField(default=utcnow)

    class Meta:
        indexes = ((("opportunity", "moved_at", "id"), False),)

    def as_dict(self):
        return {
            "id": self.id,
            "from_column_id": self.from_column_id,
            "to_column_id": self.to_column_id,
            "to_column_name": self.to_column_name,
            "actor": self.actor,
            "moved_at": self.moved_at,
        }
