"""The loop every adapter's channel-task job shares (models.channel_tasks):
claim the due tasks of its kinds with a lease, run each outside any
transaction, and hand a failure to the adapter, which decides between a
retry and giving up (its network's errors say whether a retry can help)."""

from datetime import timedelta

from ..db import claiming
from ..models import ChannelTask, Message

LEASE = timedelta(minutes=10)


def run_due(handlers, failed, now, batch):
    """Run up to `batch` due tasks whose kind `handlers` maps to a function
    (task, now); `failed(task, error, now)` gets any exception one raises.
    Returns how many were attempted."""
    with claiming("channel_tasks"):
        claimed = ChannelTask.claim(now, tuple(handlers), batch, LEASE)
    for task in claimed:
        try:
            handlers[task.kind](task, now)
        except Exception as error:  # one task's failure must not stop the others
            failed(task, error, now)
    return len(claimed)


def live_message(task):
    """The task's message, or None when it was deleted meanwhile."""
    message = Message.get_or_none(Message.id == task.message_id)
    return None if message is None or message.deleted_at is not None else message


def retry_delay(task, delays):
    """Seconds before the next try after the task's latest failed attempt:
    `delays[n - 1]` after the n-th, the last one after any later."""
    return delays[min(task.attempts, len(delays)) - 1]
