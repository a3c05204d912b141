"""Events: raised with `emit`, stored in the outbox, delivered by a job.

`emit` also queues one delivery per subscribed active webhook, in the same
transaction: a delivery exists exactly when its event does. The outbox is
also what live subscribers hear of (events.live).

Both are told at once of what a request or job of this process committed:
`flush`, when its app context ends, wakes the live watcher and the delivery
job; other processes' events reach them by their polls.
"""

from ..db import database
from ..models import Event, fastsql
from ..models.base import compact_json, utcnow
from . import live
from .catalog import EVENTS
from .delivery import queue_event, wake_if_queued

# The event, the agent it concerns and whether its workspace has an active
# webhook, in one statement: most workspaces have none, and asking apart cost
# a statement on every emit (about 18 k instructions of a stored WhatsApp
# message's 1.48 M); a message's event names its conversation, whose agent
# was another statement (a round trip on PostgreSQL).
_INSERT = (
    'INSERT INTO "event" ("id", "workspace_id", "name", "data", "created_at", "agent_id") '
    'VALUES (?, ?, ?, ?, ?, COALESCE(?, (SELECT "agent_id" FROM "conversation" WHERE "id" = ?))) '
    'RETURNING "agent_id", '
    'EXISTS (SELECT 1 FROM "webhook" WHERE "workspace_id" = ? AND "is_active" = 1)'
)


class UnknownEvent(ValueError):
    """A programming error: every event must be in the catalog."""


def emit(workspace_id, name, data, now=None):
    """Record event `name` for the workspace in the caller's transaction.

    Call it inside the transaction of the change that caused it: if that
    transaction rolls back, the event never existed (nor its deliveries).
    """
    if name not in EVENTS:
        raise UnknownEvent(f"{name} is not in the event catalog")
    if not database.in_transaction():
        raise RuntimeError("emit() must run inside the transaction of its change")
    values = {"workspace": workspace_id, "name": name, "data": data, "created_at": now or utcnow()}
    event = fastsql.new(Event, values)
    if _inserted(event.__data__, *_agent_named(data)):
        queue_event(event)
    live.published()
    return event


def flush():
    """Wake who waits for what this thread's committed transactions emitted:
    the live subscribers, the delivery job. Call it after the commit."""
    live.flush()
    wake_if_queued()


def init_app(app):
    """Flush when a request ends (its transactions are committed by then),
    and when a job's app context does."""
    app.teardown_request(lambda exc: flush())
    app.teardown_appcontext(lambda exc: flush())


def _inserted(row, agent_id, conversation_id):
    """INSERT the event's `row`, its agent set (see _agent_named); True when
    its workspace has an active webhook."""
    workspace_id = row["workspace"]
    params = (row["id"], workspace_id, row["name"], compact_json(row["data"]), row["created_at"])
    cursor = fastsql.execute(_INSERT, *params, agent_id, conversation_id, workspace_id)
    row["agent_id"], watched = cursor.fetchone()
    return watched == 1


def _agent_named(data):
    """(agent id, conversation id) to find the agent an event concerns by:
    its data's `agent_id`, else the agent of its data's conversation at the
    time (message events), else none."""
    if not isinstance(data, dict):
        return None, None
    agent_id = data.get("agent_id")
    if agent_id is None:
        return None, data.get("conversation_id")
    return (agent_id if isinstance(agent_id, str) else None), None
