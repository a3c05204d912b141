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

# The event, and whether its workspace has an active webhook, in one statement:
# most workspaces have none, and asking apart cost a statement on every emit
# (about 18 k instructions of a stored WhatsApp message's 1.48 M).
_INSERT = (
    'INSERT INTO "event" ("id", "workspace_id", "name", "data", "created_at", "agent_id") '
    "VALUES (?, ?, ?, ?, ?, ?) "
    'RETURNING EXISTS (SELECT 1 FROM "webhook" WHERE "workspace_id" = ? AND "is_active" = 1)'
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
    values["agent_id"] = agent_of(data)
    event = fastsql.new(Event, values)
    if _inserted(event.__data__):
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


def _inserted(row):
    """INSERT the event's `row`; True when its workspace has an active webhook."""
    workspace_id = row["workspace"]
    params = (row["id"], workspace_id, row["name"], compact_json(row["data"]), row["created_at"])
    return fastsql.execute(_INSERT, *params, row["agent_id"], workspace_id).fetchone()[0] == 1


def agent_of(data):
    """The agent an event concerns: its data's `agent_id`, else the agent of
    its data's conversation at the time (message events), else None."""
    if not isinstance(data, dict):
        return None
    agent_id = data.get("agent_id")
    if agent_id is None and data.get("conversation_id") is not None:
        agent_id = fastsql.scalar(_CONVERSATION_AGENT, data["conversation_id"])
    return agent_id if isinstance(agent_id, str) else None


_CONVERSATION_AGENT = 'SELECT "agent_id" FROM "conversation" WHERE "id" = ?'
