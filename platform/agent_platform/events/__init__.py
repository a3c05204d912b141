"""Events: raised with `emit`, stored in the outbox, delivered by a job.

`emit` also queues one delivery per subscribed active webhook, in the same
transaction: a delivery exists exactly when its event does.
"""

from ..db import database
from ..models import Event, fastsql
from ..models.base import utcnow
from .catalog import EVENTS
from .delivery import queue_event


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
    event = fastsql.insert(fastsql.new(Event, values))
    queue_event(event)
    return event
