"""The credit ledger: one row per consumption, written by whoever spends
credits (the reply engine). Rows are never changed or deleted by the API."""

from peewee import SQL, DateTimeField, FloatField, ForeignKeyField, fn

from .agents import Agent
from .base import BaseModel, utcnow
from .conversations import Conversation
from .dialect import engine
from .tenancy import Workspace


class CreditUsage(BaseModel):
    # Both are indexed with created_at below.
    workspace = ForeignKeyField(Workspace, backref="credit_usage", on_delete="CASCADE", index=False)
    # Agents are soft-deleted, so a deleted agent's history stays attached.
    agent = ForeignKeyField(Agent, backref="credit_usage", on_delete="CASCADE", index=False)
    conversation = ForeignKeyField(
        Conversation, null=True, backref="credit_usage", on_delete="SET NULL"
    )
    credits = FloatField()
    created_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "credit_usage"
        indexes = (
            (("agent", "created_at"), False),
            (("workspace", "created_at"), False),
        )

    @classmethod
    def used_by_workspace(cls, workspace_id, start, end):
        """Credits the workspace used in [start, end)."""

        total = (
            cls.select(fn.COALESCE(fn.SUM(cls.credits), 0))
            .where(cls.workspace == workspace_id, cls.created_at >= start, cls.created_at < end)
            .scalar()
        )
        return float(total or 0)

    @classmethod
    def daily_for_agent(cls, agent_id, start, end):
        """(date text, credits, distinct conversations) per day with usage in [start, end)."""

        day = _day(cls.created_at)
        return (
            cls.select(
                day.alias("day"),
                fn.SUM(cls.credits).alias("credits"),
                fn.COUNT(fn.DISTINCT(cls.conversation)).alias("conversations"),
            )
            .where(cls.agent == agent_id, cls.created_at >= start, cls.created_at < end)
            .group_by(day)
            .order_by(day)
            .tuples()
        )


def _day(column):
    """The date of a time column as text (YYYY-MM-DD), in each engine's spelling."""
    if engine.postgresql:
        # The format written into the SQL, not a parameter: GROUP BY and
        # SELECT must be the same expression there.
        return fn.to_char(column, SQL("'YYYY-MM-DD'"))
    return fn.strftime("%Y-%m-%d", column)
