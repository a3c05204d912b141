"""Messages: reading and writing a conversation, edits and soft deletes,
idempotent POSTs, the inbound path and delivery receipts for the channel
adapters, and the job that sends queued messages through each channel type's
sender."""

import hashlib
import json
import logging
from collections import namedtuple
from datetime import UTC, timedelta

from flask import current_app

from .. import scheduler
from ..channels import senders
from ..channels.neutral import INBOUND_TYPES
from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import emit
from ..models import Channel, Conversation, IdempotencyKey, Message, fastsql
from ..models.base import utcnow
from ..models.messages import INBOUND_STATUS
from . import contacts, conversations, formats

log = logging.getLogger("agent_platform.messages")

# Forward order of outbound statuses; failed is reachable from all but read.
RANK = {"queued": 0, "sent": 1, "delivered": 2, "read": 3}
RECEIPT_STATUSES = ("sent", "delivered", "read", "failed")
# A retryable send failure waits 5 s, 10 s, 20 s, ... at most this long.
MAX_RETRY_DELAY = timedelta(minutes=15)

InboundResult = namedtuple("InboundResult", "message duplicate")


def not_found(message_id):
    return NotFound(f"Message {message_id} not found.", code="MESSAGE_NOT_FOUND")


def get_message(workspace_id, message_id):
    return Message.get_in_workspace(workspace_id, message_id, not_found(message_id))


def list_messages(workspace_id, conversation_id, paging):
    conversation = conversations.get_conversation(workspace_id, conversation_id)
    return Message.page(conversation.id, paging)


def render(message):
    return formats.jsonable(message.as_dict())


# -- Writing through the API -------------------------------------------------


def post_message(
    workspace_id, conversation_id, values, idempotency_key=None, ttl_hours=24, now=None
):
    """Queue an outbound message (human or agent) in a conversation.

    With `idempotency_key`, the first request's message is returned for any
    repeat within `ttl_hours` (and nothing new is created); the same key with
    another body or conversation is 409 IDEMPOTENCY_KEY_REUSED.
    Returns (message, replayed).
    """
    now = now or utcnow()
    with transaction():
        conversation = conversations.get_conversation(workspace_id, conversation_id)
        if idempotency_key:
            fingerprint = _fingerprint(conversation.id, values)
            replay = _replay(workspace_id, idempotency_key, fingerprint, now)
            if replay is not None:
                return replay, True
        _check_can_send(conversation, values["sender_type"])
        message = _insert(
            conversation=conversation.id,
            channel=conversation.channel_id,
            contact_id=conversation.contact_id,
            direction="outbound",
            sender_type=values["sender_type"],
            status="queued",
            reply_to_id=_reply_to(conversation, values.get("reply_to_id")),
            **_content(values),
            metadata=values.get("metadata") or {},
            created_at=now,
            updated_at=now,
        )
        conversation.touch(now)
        if idempotency_key:
            IdempotencyKey.create(
                workspace=workspace_id,
                key=idempotency_key,
                fingerprint=fingerprint,
                resource_id=message.id,
                created_at=now,
                expires_at=now + timedelta(hours=ttl_hours),
            )
        return message, False


def _insert(**values):
    """A new message, stored with created_at and updated_at as given."""
    return fastsql.insert(Message(**values))


def _fingerprint(conversation_id, values):
    request = {"operation": "create_message", "conversation": conversation_id, "body": values}
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _replay(workspace_id, key, fingerprint, now):
    record = IdempotencyKey.get_or_none(
        IdempotencyKey.workspace == workspace_id, IdempotencyKey.key == key
    )
    if record is None:
        return None
    original = Message.get_or_none(Message.id == record.resource_id)
    if record.expires_at <= now or original is None:
        record.delete_instance()  # expired (or its message erased): the key is free again
        return None
    if record.fingerprint != fingerprint:
        raise Conflict(
            f"Idempotency-Key {key!r} was already used for a different request "
            f"in the last {_hours(record)} hours; use a new key.",
            code="IDEMPOTENCY_KEY_REUSED",
        )
    return original


def _hours(record):
    return round((record.expires_at - record.created_at).total_seconds() / 3600)


def _check_can_send(conversation, sender_type):
    if conversation.status == "closed":
        raise Conflict(
            f"Conversation {conversation.id} is closed; reopen it before writing.",
            code="CONVERSATION_CLOSED",
        )
    if conversation.status == "handoff" and sender_type == "agent":
        raise Conflict(
            f"Conversation {conversation.id} is in handoff: a human holds it and the agent "
            "is silent until the handoff is completed.",
            code="CONVERSATION_IN_HANDOFF",
        )
    channel = conversation.channel_id and Channel.get_or_none(Channel.id == conversation.channel_id)
    if not channel or not channel.is_active:
        raise Conflict(
            f"Conversation {conversation.id} has no active channel to send through.",
            code="CHANNEL_NOT_ACTIVE",
        )


def _content(values):
    kind = values.get("type", "text")
    if kind == "text":
        if not values.get("text"):
            raise ValidationError("text", "required for a text message", "MISSING_REQUIRED_FIELD")
        for name in ("caption", "media_url", "media_mime_type"):
            if values.get(name) is not None:
                raise ValidationError(name, "only media messages have it")
        return {"type": "text", "text": values["text"]}
    if not values.get("media_url"):
        raise ValidationError(
            "media_url", f"required for a {kind} message", "MISSING_REQUIRED_FIELD"
        )
    if values.get("text") is not None:
        raise ValidationError("text", f"a {kind} message has a caption, not text")
    return {
        "type": kind,
        "caption": values.get("caption"),
        "media_url": formats.http_url(values["media_url"], "media_url"),
        "media_mime_type": values.get("media_mime_type"),
    }


def _reply_to(conversation, reply_to_id):
    if reply_to_id is None:
        return None
    original = Message.get_or_none(
        Message.id == str(reply_to_id), Message.conversation == conversation.id
    )
    if original is None:
        raise ValidationError("reply_to_id", "no such message in this conversation")
    return original.id


def edit_message(workspace_id, message_id, changes, conversation_id=None, now=None):
    """Change the text (or a media message's caption) of an outbound message.

    The previous version goes to `edit_history` with the time it was
    replaced; `edited_at` is set. The edit is recorded in the platform; a
    message already sent is not changed on the network.
    """
    now = now or utcnow()
    with transaction():
        message = get_message(workspace_id, message_id)
        if conversation_id is not None and message.conversation_id != conversation_id:
            raise not_found(message_id)
        _check_editable(message, changes)
        if all(getattr(message, name) == value for name, value in changes.items()):
            return message
        previous = {"text": message.text, "caption": message.caption, "replaced_at": now}
        message.edit_history = message.edit_history + [formats.jsonable(previous)]
        for name, value in changes.items():
            setattr(message, name, value)
        message.edited_at = now
        message.updated_at = now
        message.save(keep_updated_at=True)
        return message


def _check_editable(message, changes):
    if message.deleted_at is not None:
        raise Conflict(f"Message {message.id} is deleted.", code="MESSAGE_NOT_EDITABLE")
    if message.direction != "outbound":
        raise Conflict(
            f"Message {message.id} is inbound: what the contact wrote cannot be edited.",
            code="MESSAGE_NOT_EDITABLE",
        )
    if message.type == "text" and "caption" in changes:
        raise ValidationError("caption", "a text message has text, not a caption")
    if message.type != "text" and "text" in changes:
        raise ValidationError("text", f"a {message.type} message has a caption, not text")


def delete_message(workspace_id, message_id, now=None):
    """Soft delete: text, caption, media and edit history are removed; the
    record stays with `deleted_at`. A message still queued is not sent: it
    fails with MESSAGE_DELETED. Deleting twice changes nothing."""
    now = now or utcnow()
    with transaction():
        message = get_message(workspace_id, message_id)
        if message.deleted_at is not None:
            return message
        message.text = message.caption = message.media_url = message.media_mime_type = None
        message.edit_history = []
        message.deleted_at = message.updated_at = now
        if message.status == "queued":
            message.status, message.failed_at = "failed", now
            message.error = {
                "code": "MESSAGE_DELETED",
                "title": "Deleted before it was sent",
                "details": None,
            }
            emit(workspace_id, "message.failed", render(message), now=now)
        message.save(keep_updated_at=True)
        return message


# -- The adapters' side ------------------------------------------------------


def receive_inbound(channel, inbound, now=None):
    """Store a message a contact wrote on `channel` (a models.Channel).

    Contract for adapters: call it once per network message, from anywhere,
    as often as the network redelivers. In ONE transaction it
    - returns the stored message untouched if (channel, inbound.external_id)
      is known already (duplicate=True, nothing else happens);
    - finds the contact by its identity on the network (channel type +
      inbound.sender_id), else by sender_phone / sender_email, else creates
      it (contact.created; contact.updated when an identity or name is added);
    - uses the contact's open or handoff conversation on the channel, else
      reopens the latest closed one (conversation.reopened), else starts one
      with the channel's agent (conversation.created);
    - stores the message (direction inbound, sender contact, status received)
      and raises message.received.
    Returns InboundResult(message, duplicate). An inactive channel is
    CHANNEL_NOT_FOUND; a malformed InboundMessage is ValueError.
    """
    _check_inbound(inbound)
    now = now or utcnow()
    with transaction():
        channel = Channel.active_by_id(channel.id)
        if channel is None:
            raise NotFound("The channel is not active.", code="CHANNEL_NOT_FOUND")
        existing_id = Message.id_by_external_id(channel.id, inbound.external_id)
        if existing_id is not None:
            return InboundResult(Message.get_by_id(existing_id), True)
        contact, change = contacts.identify(channel, inbound)
        if change:
            emit(channel.workspace_id, f"contact.{change}", contacts_render(contact), now=now)
        conversation = _conversation_for(channel, contact, now)
        message = _insert(
            conversation=conversation.id,
            channel=channel.id,
            contact_id=contact.id,
            direction="inbound",
            sender_type="contact",
            status=INBOUND_STATUS,
            external_id=inbound.external_id,
            reply_to_id=_reply_to_external(channel, inbound.reply_to_external_id),
            metadata=_inbound_metadata(inbound),
            created_at=now,
            updated_at=now,
            **_inbound_content(inbound),
        )
        conversation.touch(now)
        data = {**render(message), "contact": _contact_summary(contact)}
        emit(channel.workspace_id, "message.received", data, now=now)
        return InboundResult(message, False)


def contacts_render(contact):
    return formats.jsonable(contacts.render(contact))


def _check_inbound(inbound):
    if not inbound.external_id or not inbound.sender_id:
        raise ValueError("InboundMessage needs external_id and sender_id")
    if len(inbound.external_id) > 200:
        raise ValueError("InboundMessage.external_id is longer than 200 characters")


def _conversation_for(channel, contact, now):
    conversation = Conversation.current_for(channel.workspace_id, contact.id, channel.id)
    if conversation is None:
        return conversations.start(
            channel.workspace_id, contact.id, channel.id, channel.agent_id, now
        )
    if conversation.status == "closed":
        conversations.move(conversation, "reopen", now)
    if conversation.agent_id is None and channel.agent_id:
        conversation.agent = channel.agent_id
        conversation.save(only=[Conversation.agent], keep_updated_at=True)
    return conversation


def _inbound_content(inbound):
    kind = inbound.type if inbound.type in INBOUND_TYPES else "unsupported"
    return {
        "type": kind,
        "text": inbound.text,
        "caption": inbound.caption,
        "media_url": inbound.media_url,
        "media_mime_type": inbound.media_mime_type,
    }


def _inbound_metadata(inbound):
    metadata = dict(inbound.metadata or {})
    if inbound.timestamp is not None:
        metadata["network_timestamp"] = formats.jsonable(_naive_utc(inbound.timestamp))
    if inbound.type not in INBOUND_TYPES:
        metadata["network_type"] = inbound.type
    if inbound.reply_to_external_id:
        metadata["reply_to_external_id"] = inbound.reply_to_external_id
    return metadata


def _reply_to_external(channel, external_id):
    if not external_id:
        return None
    return Message.id_by_external_id(channel.id, external_id)


def _contact_summary(contact):
    return {"id": contact.id, "name": contact.name, "phone": contact.phone, "email": contact.email}


def _naive_utc(moment):
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def apply_status(channel, external_id, status, at=None, error=None, now=None):
    """Apply a delivery receipt for the outbound message `external_id` on `channel`.

    Contract for adapters: `status` is sent, delivered, read or failed; `at`
    the network's time (default now); `error` for failed a dict with code,
    title, details. Status only moves forward (queued → sent → delivered →
    read; failed from queued, sent or delivered): a move raises
    message.<status> once, in the transaction that stores it. A receipt that
    would move it backwards (delivered after read), repeats one, or comes
    after failed changes no status and raises nothing; its time is recorded
    when that status's time was still empty. Returns the message, or None
    when no outbound message has this id on the channel (the receipt is
    ignored: it may belong to a message sent outside the platform).
    """
    if status not in RECEIPT_STATUSES:
        raise ValueError(f"unknown status {status!r}")
    now = now or utcnow()
    at = _naive_utc(at) if at is not None else now
    with transaction():
        message = Message.by_external_id(channel.id, external_id)
        if message is None or message.direction != "outbound":
            return None
        if _moves_forward(message.status, status):
            message.status = status
            setattr(message, f"{status}_at", at)
            if status == "failed":
                message.error = _error(error)
            message.lease_until = None
            message.updated_at = now
            message.save(keep_updated_at=True)
            emit(channel.workspace_id, f"message.{status}", render(message), now=now)
        elif status != "failed" and message.status != "failed":
            if getattr(message, f"{status}_at") is None:
                setattr(message, f"{status}_at", at)  # late, but its time is worth keeping
                message.save(only=[getattr(Message, f"{status}_at")], keep_updated_at=True)
        return message


def apply_status_update(channel, update, now=None):
    """apply_status for a channels.StatusUpdate."""
    return apply_status(channel, update.external_id, update.status, update.at, update.error, now)


def _moves_forward(current, status):
    if current == "failed":
        return False
    if status == "failed":
        return current in ("queued", "sent", "delivered")
    return RANK[status] > RANK.get(current, 99)


def _error(error):
    error = error or {}
    return {
        "code": str(error.get("code", "UNKNOWN")),
        "title": error.get("title") or "The network reported a failure",
        "details": error.get("details"),
    }


# -- Sending -----------------------------------------------------------------


def send_queued(now=None, batch=20, lease_seconds=60, max_attempts=5):
    """Send queued outbound messages through their channel type's sender.

    Messages are claimed with a lease (so concurrent workers never send one
    twice while it is in flight), sent outside any transaction, and their
    outcome stored: sent (message.sent), failed (message.failed) for a
    permanent error or after `max_attempts`, else queued again after a
    growing delay. Channel types with no sender are not touched.
    Returns the number of messages attempted.
    """
    now = now or utcnow()
    claimed = _claim(now, batch, lease_seconds)
    for message in claimed:
        sender = senders.get_sender(message.channel.type)
        try:
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
    types = senders.registered_types()
    if not types:
        return []
    with transaction():
        claimed = list(Message.queued_batch(now, types, batch))
        if claimed:
            Message.update(
                lease_until=now + timedelta(seconds=lease_seconds),
                send_attempts=Message.send_attempts + 1,
            ).where(Message.id.in_([message.id for message in claimed])).execute()
        for message in claimed:
            message.send_attempts += 1
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
        emit(message.conversation.workspace_id, "message.sent", render(message), now=now)


def _record_failure(message_id, error, now, max_attempts):
    with transaction():
        message = Message.get_by_id(message_id)
        if message.status != "queued":
            return
        message.error = error.as_dict()
        if error.retryable and message.send_attempts < max_attempts:
            delay = timedelta(seconds=5 * 2 ** (message.send_attempts - 1))
            message.lease_until = now + min(delay, MAX_RETRY_DELAY)
            message.save(only=[Message.error, Message.lease_until], keep_updated_at=True)
            return
        message.status, message.failed_at, message.lease_until = "failed", now, None
        message.updated_at = now
        message.save(keep_updated_at=True)
        emit(message.conversation.workspace_id, "message.failed", render(message), now=now)


def purge_idempotency_keys(now=None):
    """Forget idempotency keys older than their time to live."""
    with transaction():
        return IdempotencyKey.purge_expired(now)


@scheduler.job("MESSAGES_SEND_POLL_SECONDS")
def send_queued_job(now=None):
    """The scheduled send: send_queued with the configured batch, lease and attempts."""
    config = current_app.config
    return send_queued(
        now,
        batch=config["MESSAGES_SEND_BATCH"],
        lease_seconds=config["MESSAGES_SEND_LEASE_SECONDS"],
        max_attempts=config["MESSAGES_SEND_MAX_ATTEMPTS"],
    )


@scheduler.job("MESSAGES_IDEMPOTENCY_PURGE_SECONDS")
def purge_idempotency_keys_job(now=None):
    return purge_idempotency_keys(now)
