"""The events outbox: one row per event, written in the transaction of the
change that raised it, so an event exists exactly when its change does."""

from peewee import CharField, DateTimeField, ForeignKeyField

from .base import BaseModel, JSONField, utcnow
from .tenancy import Workspace


class Event(BaseModel):
    """`id` is the event_id clients use to ignore repeated deliveries."""

    # The (workspace, created_at) index serves lookups by workspace too.
    workspace = ForeignKeyField(Workspace, backref="events", on_delete="CASCADE", index=False)
    name = CharField(max_length=64)
    data = JSONField()
    created_at = DateTimeField(default=utcnow)
    # The agent the event concerns (its data's agent_id, or its conversation's
    # agent then), for per-agent webhooks and the agent's history.
    agent_id = CharField(max_length=36, null=True)

    class Meta:
        indexes = ((("workspace", "created_at"), False), (("agent_id", "created_at"), False))

    @classmethod
    def of_agent(cls, agent_id, name=None):
        query = cls.select().where(cls.agent_id == agent_id)
        return query if name is None else query.where(cls.name == name)
