"""Updates of a Telegram channel, from the webhook or from long polling,
stored the same way: each update once (by update_id), in one transaction
with what it carries.

A message and an edit are handed up to the intake service
(adapters.hand_up: contact, conversation, message.received, the agent's
reply job), anything ignored (group chats, other update kinds) into the
channel's event log. An update that fails to store is logged and written to
the event log, and still counted as received: redelivering it would only
fail again (and hold back every update after it in polling).
"""

import logging

from ... import formats, storage
from ...db import conflicted
from ...errors import NotFound, ValidationError
from ...models import Channel, ChannelEvent, ContactIdentity
from ...models.base import canonical_uuid, utcnow
from ...models.telegram import TelegramUpdate
from ..adapters import callback_json, hand_up
from ..group_commit import GroupCommit
from ..neutral import InboundEdit, InboundMessage, senders
from . import tasks
from .parser import Ignored, parse

log = logging.getLogger("agent_platform.telegram")

# Old update ids are forgotten when an update id is a multiple of this
# (update ids grow by one per update of the bot): not a DELETE per update.
PRUNE_EVERY = 100
OUTCOMES = ("messages", "duplicates", "statuses", "reactions", "notices", "failed")


def telegram_channel(channel_id):
    """The active Telegram channel `channel_id`, else 404 CHANNEL_NOT_FOUND."""
    canonical = canonical_uuid(channel_id)
    channel = canonical and Channel.active_by_id(canonical)
    if not channel or channel.type != "telegram":
        raise NotFound(f"No active Telegram channel {channel_id}.", code="CHANNEL_NOT_FOUND")
    return channel


def decoded(body):
    """A webhook body as an Update object, else 400 naming the body."""
    update = callback_json(body)
    if not is_update(update):
        raise ValidationError("body", "is not a Telegram Update (an object with update_id)")
    return update


# Telegram's update ids are positive and fit 64 bits; one past them was a
# 500 (a column holds 64 bits), and true or false are no ids.
_UPDATE_IDS = range(0, 2**63)


def is_update(update):
    """Whether `update` (decoded JSON) is an Update this channel can store."""
    update_id = update.get("update_id") if isinstance(update, dict) else None
    return type(update_id) is int and update_id in _UPDATE_IDS


def store(channel, updates, now=None):
    """Store `updates` (decoded Update objects) on `channel`; the count of
    each outcome. Returns once they are committed, in a transaction shared
    with the callbacks arriving at the same moment (see GroupCommit)."""
    now = now or utcnow()
    items = [parse(update) for update in updates]
    holds = senders(channel, items)
    return _group.run(lambda: _store(channel, updates, items, now), holds)


def _store(channel, updates, items, now):
    """Runs inside the group's transaction."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for update, item in zip(updates, items, strict=True):
        counts[_stored(channel, update, item, now)] += 1
    if any(update["update_id"] % PRUNE_EVERY == 0 for update in updates):
        TelegramUpdate.prune(channel.id)
    return counts


_group = GroupCommit(hold=ContactIdentity.hold_in_order)


def _stored(channel, update, item, now):
    # No savepoint of its own: the claim is one statement, and what follows
    # is atomic in the service (a savepoint inside the group's transaction).
    if not TelegramUpdate.claim(channel.id, update["update_id"], now):
        return "duplicates"
    try:
        return APPLY[type(item)](channel, item, now)
    except Exception as error:
        if storage.cause_of(error) or conflicted(error):
            raise  # nothing is stored: 503, and Telegram sends the update again
        log.exception(
            "Telegram update %s not stored on channel %s", update["update_id"], channel.id
        )
        payload = {"reason": f"{type(error).__name__}: {error}", "update": update}
        ChannelEvent.record(channel.id, "item_failed", payload, True, now)
        return "failed"


def _message(channel, message, now):
    result = hand_up(channel, message, now)
    if result.duplicate:
        return "duplicates"
    tasks.queue_tasks(channel, result.message, now)
    return "messages"


def _edit(channel, edit, now):
    if hand_up(channel, edit, now) is None:
        log.info("edit of unknown message %s ignored", edit.external_id)
    return "messages"


def _ignored(channel, ignored, now):
    payload = formats.jsonable({"reason": ignored.reason, **ignored.payload})
    ChannelEvent.record(channel.id, "skipped", payload, False, now)
    return "notices"


APPLY = {InboundMessage: _message, InboundEdit: _edit, Ignored: _ignored}
