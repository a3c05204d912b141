"""The send job: queued outbound messages leave through the sender registered
for their channel's type (channels.senders), claimed with a lease."""

import logging
from datetime import timedelta

from flask import current_app

from .. import formats, scheduler
from ..channels import adapters, senders
from ..db import claiming, transaction
from ..events import emit
from ..models import Message
from ..models.base import utcnow
from ..models.metrics import count_send_error
from ..nul_text import nul_replaced

log = logging.getLogger("agent_platform.sending")

# A retryable send failure waits 5 s, 10 s, 20 s, ... at most this long.
MAX_RETRY_DELAY = timedelta(minutes=15)


def send_queued(now=None, batch=20, lease_seconds=60, max_attempts=5):
    """Send queued outbound messages through their channel type's sender.

    Messages are claimed with a lease (so concurrent workers never send one
    twice while it is in flight), sent outside any transaction, and their
    outcome stored: sent (message.sent), failed (message.failed) for a
    permanent error or after `max_attempts`, else queued again after a
    growing delay. A message whose channel type has no sender fails at once.
    Returns the number of messages attempted.
    """
    now = now or utcnow()
    claimed = _claim(now, batch, lease_seconds)
    for message in claimed:
        sender = senders.get_sender(message.channel.type)
        try:
            if sender is None:
                refusal = adapters.send_refusal(message.channel)
                raise senders.SendError("CHANNEL_CANNOT_SEND", refusal)
            result = sender.send(message.channel, message)
        except senders.SendError as error:
            _record_failure(message.id, error, now, max_attempts)
        except Exception as error:  # a bug in a sender must not stop the others
            log.exception("sender for %s failed on message %s", message.channel.type, message.id)
            failure = senders.SendError(
                "SENDER_ERROR", str(error) or type(error).__name__, retryable=True
            )
            _record_failure(message.id, failure, now, max_attempts)
        else:
            _record_sent(message.id, result, now)
    return len(claimed)


def _claim(now, batch, lease_seconds):
    with claiming("messages.send"):
        claimed = list(Message.queued_batch(now, batch))
        if claimed:
            Message.update(
                lease_until=now + timedelta(seconds=lease_seconds),
                send_attempts=Message.send_attempts + 1,
            ).where(Message.id.in_([message.id for message in claimed])).execute()
        return claimed


def _record_sent(message_id, result, now):
    with transaction():
        message = Message.get_by_id(message_id)
        if message.status != "queued":
            return  # deleted or failed while in flight
        message.status, message.sent_at, message.lease_until = "sent", now, None
        message.external_id = result.external_id
        message.metadata = {**message.metadata, **(result.metadata or {})}
        message.error = None
        message.updated_at = now
        message.save(keep_updated_at=True)
        emit(message.conversation.workspace_id, "message.sent", _rendered(message), now=now)


def _record_failure(message_id, error, now, max_attempts):
    with transaction():
        message = Message.get_by_id(message_id)
        if message.status != "queued":
            return
        # A network's own words, kept as text PostgreSQL can hold.
        message.error = nul_replaced(error.as_dict())
        message.metadata = {**message.metadata, **nul_replaced(error.metadata or {})}
        _log_failure(message, error, max_attempts)
        channel_type = message.channel.type if message.channel_id else "none"
        count_send_error(message.conversation.workspace_id, channel_type)
        if error.retryable and message.send_attempts < max_attempts:
            delay = min(timedelta(seconds=5 * 2 ** (message.send_attempts - 1)), MAX_RETRY_DELAY)
            if error.retry_after:  # the network's wait, when longer than ours
                delay = max(delay, timedelta(seconds=error.retry_after))
            message.lease_until = now + delay
            # Only what a retry changes: updated_at stays the last change a reader saw.
            message.save(only=[Message.error, Message.metadata, Message.lease_until])
            return
        message.status, message.failed_at, message.lease_until = "failed", now, None
        message.updated_at = now
        message.save(keep_updated_at=True)
        emit(message.conversation.workspace_id, "message.failed", _rendered(message), now=now)


def _log_failure(message, error, max_attempts):
    final = not error.retryable or message.send_attempts >= max_attempts
    log.log(
        logging.ERROR if final else logging.WARNING,
        "message %s (conversation %s, channel %s) %s: %s %s",
        message.id,
        message.conversation_id,
        message.channel_id,
        "failed" if final else f"not sent, attempt {message.send_attempts} of {max_attempts}",
        error.code,
        error.title,
        extra={
            "workspace_id": message.conversation.workspace_id,
            "channel_id": message.channel_id,
            "conversation_id": message.conversation_id,
            "message_id": message.id,
            "attempt": message.send_attempts,
            "code": error.code,
            "reason": error.title,
        },
    )


@scheduler.job("MESSAGES_SEND_POLL_SECONDS", in_every_process=True)
def send_queued_job(now=None):
    """The scheduled send: send_queued with the configured batch, lease and attempts."""
    config = current_app.config
    return send_queued(
        now,
        batch=config["MESSAGES_SEND_BATCH"],
        lease_seconds=config["MESSAGES_SEND_LEASE_SECONDS"],
        max_attempts=config["MESSAGES_SEND_MAX_ATTEMPTS"],
    )


def _rendered(message):
    return formats.jsonable(message.as_dict())
