"""The events outbox: one row per event, written in the transaction of the
change that raised it, so an event exists exactly when its change does."""

from peewee import CharField, DateTimeField, ForeignKeyField

from .base import BaseModel, JSONField, utcnow
from .fastsql import execute, scalar
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

    @classmethod
    def last_rowid(cls):
        """The newest event's rowid (0 when there is none): where a reader
        of what happens from now on starts."""
        return scalar('SELECT coalesce(max(rowid), 0) FROM "event"')

    @classmethod
    def changes_after(cls, rowid, limit):
        """Events after `rowid`, oldest first, as (rowid, workspace_id, name,
        conversation_id, contact_id, channel_id, message_id); the ids are
        None for events that are not about a message or a conversation.

        SQLite takes one writer at a time and gives a new row the next
        rowid, so rowids are in commit order: a reader that has seen rowid
        N has seen every event committed before it. Only the few ids are
        read out of the JSON, in SQL (the data holds whole messages)."""
        return execute(_CHANGES_AFTER, rowid, limit).fetchall()


# Message events carry a rendered message; conversation.* and agent.* events
# a rendered conversation (its id is the conversation's).
_CHANGES_AFTER = """
SELECT "seq", "workspace_id", "name",
  CASE "kind" WHEN 'message' THEN json_extract("data", '$.conversation_id')
              WHEN 'conversation' THEN json_extract("data", '$.id') END,
  CASE WHEN "kind" IS NOT NULL THEN json_extract("data", '$.contact_id') END,
  CASE WHEN "kind" IS NOT NULL THEN json_extract("data", '$.channel_id') END,
  CASE "kind" WHEN 'message' THEN json_extract("data", '$.id') END
FROM (
  SELECT rowid AS "seq", "workspace_id", "name", "data",
    CASE WHEN "name" LIKE 'message.%' THEN 'message'
         WHEN "name" LIKE 'conversation.%' OR "name" LIKE 'agent.%' THEN 'conversation' END
      AS "kind"
  FROM "event" WHERE rowid > ? ORDER BY rowid LIMIT ?
) ORDER BY "seq"
"""
