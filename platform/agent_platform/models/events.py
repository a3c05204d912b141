"""The events outbox: one row per event, written in the transaction of the
change that raised it, so an event exists exactly when its change does."""

from peewee import CharField, DateTimeField, ForeignKeyField

from .base import BaseModel, JSONField, utcnow
from .dialect import engine
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
    def newest_mark(cls):
        """Where a reader of what happens from now on starts (0 when there
        is no event): a mark only changes_after reads."""
        if engine.postgresql:
            return tuple(execute(_PG_START_MARK).fetchone())
        return scalar('SELECT coalesce(max(rowid), 0) FROM "event"')

    @classmethod
    def changes_after(cls, mark, limit):
        """Events committed after `mark`, in commit order, as (mark,
        workspace_id, name, conversation_id, contact_id, channel_id,
        message_id), each row's mark where a reader that has seen it goes
        on from; the ids are None for events that are not about a message
        or a conversation. Only the few ids are read out of the JSON, in SQL
        (the data holds whole messages).

        SQLite takes one writer at a time and gives a new row the next
        rowid, so rowids are in commit order: the mark is a rowid. On
        PostgreSQL it is the (transaction, place in it) of the event
        (migration 0025), and only events of transactions below the
        snapshot's xmin are read: every one of those has ended, so no
        event committed later can come before the mark. (One still open
        holds the events after its start back until it ends.)"""
        if engine.postgresql:
            rows = execute(_PG_CHANGES_AFTER, *mark, limit).fetchall()
            return [((tx, seq), *change) for tx, seq, *change in rows]
        return execute(_CHANGES_AFTER, mark, limit).fetchall()


# Message events carry a rendered message; conversation.* and agent.* events
# a rendered conversation (its id is the conversation's).
_KIND = """CASE WHEN "name" LIKE 'message.%' THEN 'message'
         WHEN "name" LIKE 'conversation.%' OR "name" LIKE 'agent.%' THEN 'conversation' END
      AS "kind"
"""

_CHANGES_AFTER = f"""
SELECT "seq", "workspace_id", "name",
  CASE "kind" WHEN 'message' THEN json_extract("data", '$.conversation_id')
              WHEN 'conversation' THEN json_extract("data", '$.id') END,
  CASE WHEN "kind" IS NOT NULL THEN json_extract("data", '$.contact_id') END,
  CASE WHEN "kind" IS NOT NULL THEN json_extract("data", '$.channel_id') END,
  CASE "kind" WHEN 'message' THEN json_extract("data", '$.id') END
FROM (
  SELECT rowid AS "seq", "workspace_id", "name", "data", {_KIND}
  FROM "event" WHERE rowid > ? ORDER BY rowid LIMIT ?
) ORDER BY "seq"
"""

# Transaction ids (xid8) travel as text.
_PG_START_MARK = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, 0"

_PG_CHANGES_AFTER = f"""
SELECT "tx"::text, "seq", "workspace_id", "name",
  CASE "kind" WHEN 'message' THEN "data"::jsonb ->> 'conversation_id'
              WHEN 'conversation' THEN "data"::jsonb ->> 'id' END,
  CASE WHEN "kind" IS NOT NULL THEN "data"::jsonb ->> 'contact_id' END,
  CASE WHEN "kind" IS NOT NULL THEN "data"::jsonb ->> 'channel_id' END,
  CASE "kind" WHEN 'message' THEN "data"::jsonb ->> 'id' END
FROM (
  SELECT "tx", "seq", "workspace_id", "name", "data", {_KIND}
  FROM "event"
  WHERE ("tx", "seq") > (?::xid8, ?)
    AND "tx" < pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY "tx", "seq" LIMIT ?
) AS "changes" ORDER BY "tx", "seq"
"""
