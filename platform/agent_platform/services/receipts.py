"""What the networks say of messages already stored: delivery receipts of
the messages the platform sent, the contact's reactions and edits. Each is
idempotent and runs in one transaction; see the docstrings for the contract."""

from .. import formats
from ..channels.neutral import storable
from ..db import transaction
from ..events import emit
from ..formats import naive_utc
from ..models import Message
from ..models.base import utcnow
from .messages import render

# Forward order of outbound statuses; failed is reachable from all but read.
RANK = {"queued": 0, "sent": 1, "delivered": 2, "read": 3}
RECEIPT_STATUSES = ("sent", "delivered", "read", "failed")


def apply_status(channel, external_id, status, at=None, error=None, now=None, metadata=None):
    """Apply a delivery receipt for the outbound message `external_id` on `channel`.

    Contract for adapters: `status` is sent, delivered, read or failed; `at`
    the network's time (default now); `error` for failed a dict with code,
    title, details. Status only moves forward (queued → sent → delivered →
    read; failed from queued, sent or delivered): a move raises
    message.<status> once, in the transaction that stores it. A receipt that
    would move it backwards (delivered after read), repeats one, or comes
    after failed changes no status and raises nothing; its time is recorded
    when that status's time was still empty. `metadata` (network details
    such as pricing) is merged into the message's metadata whatever the
    status does. Returns the message, or None
    when no outbound message has this id on the channel (the receipt is
    ignored: it may belong to a message sent outside the platform).
    """
    if status not in RECEIPT_STATUSES:
        raise ValueError(f"unknown status {status!r}")
    now = now or utcnow()
    at = naive_utc(at) if at is not None else now
    with transaction():
        message = Message.by_external_id(channel.id, external_id)
        if message is None or message.direction != "outbound":
            return None
        noted = _noted(message, metadata)
        if _moves_forward(message.status, status):
            message.status = status
            setattr(message, f"{status}_at", at)
            if status == "failed":
                message.error = _error(error)
            message.lease_until = None
            message.updated_at = now
            message.save(keep_updated_at=True)
            emit(channel.workspace_id, f"message.{status}", render(message), now=now)
        else:
            changed = [Message.metadata] if noted else []
            late = status != "failed" and message.status != "failed"
            if late and getattr(message, f"{status}_at") is None:
                setattr(message, f"{status}_at", at)  # late, but its time is worth keeping
                changed.append(getattr(Message, f"{status}_at"))
            if changed:
                message.save(only=changed, keep_updated_at=True)
        return message


def apply_status_update(channel, update, now=None):
    """apply_status for a channels.StatusUpdate."""
    update = storable(update)
    return apply_status(
        channel, update.external_id, update.status, update.at, update.error, now, update.metadata
    )


def _noted(message, metadata):
    """Merge `metadata` into the message's; True when that changed it."""
    merged = {**message.metadata, **(metadata or {})}
    if merged == message.metadata:
        return False
    message.metadata = merged
    return True


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


def apply_reaction(channel, reaction, now=None):
    """The contact's reaction (a channels.Reaction) to a message of the chat.

    Kept on the target message (either direction) as metadata.reaction =
    {emoji, external_id, reacted_at}; a reaction without emoji removes it
    (emoji null). The newest reaction by network time wins, so a repeated or
    late delivery changes nothing. Raises no event (the catalog has none).
    Returns the target message, or None when the channel has no message
    with that id (a message sent outside the platform).
    """
    reaction, now = storable(reaction), now or utcnow()
    at = formats.jsonable(naive_utc(reaction.timestamp) if reaction.timestamp else now)
    with transaction():
        message = Message.by_external_id(channel.id, reaction.target_external_id)
        if message is None:
            return None
        current = message.metadata.get("reaction") or {}
        if current.get("external_id") == reaction.external_id or at < current.get("reacted_at", ""):
            return message
        value = {"emoji": reaction.emoji or None, "external_id": reaction.external_id}
        message.metadata = {**message.metadata, "reaction": {**value, "reacted_at": at}}
        message.updated_at = now
        message.save(only=[Message.metadata, Message.updated_at], keep_updated_at=True)
        return message


def apply_edit(channel, edit, now=None):
    """The contact edited a message they wrote (a channels.InboundEdit).

    The stored inbound message with edit.external_id gets the new text (or
    caption), its previous version appended to `edit_history` with the time
    it was replaced, and `edited_at`; an edit that changes nothing (a
    redelivery) is not recorded again. Raises no event (the catalog has
    none). Returns the message, or None when the channel has no inbound
    message with that id.
    """
    edit, now = storable(edit), now or utcnow()
    at = naive_utc(edit.timestamp) if edit.timestamp else now
    with transaction():
        message = Message.by_external_id(channel.id, edit.external_id)
        if message is None or message.direction != "inbound":
            return None
        field = "caption" if message.type != "text" else "text"
        value = edit.caption if field == "caption" else edit.text
        if value is None or value == getattr(message, field):
            return message
        message.keep_replaced(message.text, message.caption, at)
        setattr(message, field, value)
        message.edited_at, message.updated_at = at, now
        message.save(keep_updated_at=True)
        return message
