"""The callback URL of a WhatsApp channel: subscription check (GET) and
events (POST), from the raw bytes to stored messages in one transaction.

POST: the channel's app secret checks X-Hub-Signature-256 over the raw body
before anything parses it; then the per-channel bound; then every item of
the payload is applied in ONE transaction (a batch costs little more than a
single message, and POSTs arriving together share it: see GroupCommit):
messages, reactions, number changes and statuses handed up to the intake
service (adapters.hand_up: idempotent on the network's id),
and everything else into the channel's event log. Each item is atomic (the
service functions are transactions of their own, savepoints inside the
group's): one that fails is logged and written to the event log with its
content, the others are kept, and the network still gets its 200 (a 500
would only make it redeliver the same batch for days). Media downloads and
read receipts are queued as channel tasks in the same transaction, for the
job in `tasks`. The POST is answered only after the COMMIT.
"""

import dataclasses
import hmac
import logging
import re

from ... import formats, storage
from ...db import conflicted, transaction
from ...errors import Forbidden, NotFound, Unauthorized
from ...events import emit
from ...models import Channel, ChannelEvent, ChannelTask, ContactIdentity
from ...models.base import canonical_uuid, utcnow
from ..adapters import callback_json, check_bound, hand_up
from ..group_commit import GroupCommit
from ..neutral import IdentityChange, InboundMessage, Reaction, StatusUpdate, senders
from .parser import Notice, parse
from .signature import signature_matches

log = logging.getLogger("agent_platform.whatsapp")

OUTCOMES = ("messages", "duplicates", "statuses", "reactions", "notices", "failed")
# A channel id as the platform writes it (the form of every callback URL it gives out).
CANONICAL_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def whatsapp_channel(channel_id):
    """The active WhatsApp channel `channel_id`, else 404 CHANNEL_NOT_FOUND."""
    canonical = channel_id if CANONICAL_ID.fullmatch(channel_id) else canonical_uuid(channel_id)
    channel = canonical and Channel.active_by_id(canonical)
    if not channel or channel.type != "whatsapp":
        raise NotFound(f"No active WhatsApp channel {channel_id}.", code="CHANNEL_NOT_FOUND")
    return channel


def verify_subscription(channel_id, mode, token, challenge):
    """Meta's subscription check: the challenge back when `mode` is subscribe
    and `token` is the channel's verify token; 403 VERIFICATION_FAILED else."""
    expected = whatsapp_channel(channel_id).settings.get("verify_token")
    if (
        mode != "subscribe"
        or challenge is None
        or not expected
        or not hmac.compare_digest(str(token or "").encode(), expected.encode())
    ):
        raise Forbidden(
            "Subscription not verified: hub.mode must be subscribe and hub.verify_token "
            "the channel's verify token.",
            code="VERIFICATION_FAILED",
        )
    return challenge


def receive(channel_id, body, signature, bound=None, now=None):
    """One signed POST: check, parse, store. Returns the count of each outcome.

    `bound(channel_id)` is the per-channel rate limiter's hit (a Decision).
    """
    channel = whatsapp_channel(channel_id)
    if not signature:
        raise Unauthorized("The X-Hub-Signature-256 header is missing.", code="MISSING_SIGNATURE")
    if not signature_matches(body, signature, channel.settings.get("app_secret")):
        raise Unauthorized(
            "X-Hub-Signature-256 does not match the body signed with the channel's app "
            "secret (or the channel has no app_secret).",
            code="INVALID_SIGNATURE",
        )
    if bound is not None:
        check_bound(bound(channel.id), "events")
    payload = callback_json(body)
    return store(channel, parse(payload, channel.settings.get("phone_number_id")), now)


def store(channel, items, now=None):
    """Apply parsed items to `channel` in one transaction, each atomically.

    Returns once that transaction is committed; it may be shared with other
    POSTs arriving at the same moment (see GroupCommit)."""
    now = now or utcnow()
    holds = senders(channel, items)
    return _group.run(lambda: _store(channel, items, now), holds)


def _store(channel, items, now):
    """Runs inside the group's transaction."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for item in items:
        counts[_applied(channel, item, now)] += 1
    return counts


_group = GroupCommit(hold=ContactIdentity.hold_in_order)


def _applied(channel, item, now):
    # No savepoint here: each service call below is one transaction (a
    # savepoint inside the group's) of its own, so a failing item has
    # already rolled back; the tasks queued after a stored message are
    # single INSERTs.
    try:
        return APPLY[type(item)](channel, item, now)
    except Exception as error:
        if storage.cause_of(error) or conflicted(error):
            raise  # nothing is stored: 503, and Meta sends the callback again
        log.exception("WhatsApp item not stored on channel %s", channel.id)
        payload = {
            "reason": f"{type(error).__name__}: {error}",
            "item_type": type(item).__name__,
            "item": formats.jsonable(dataclasses.asdict(item)),
        }
        ChannelEvent.record(channel.id, "item_failed", payload, True, now)
        return "failed"


def _message(channel, message, now):
    result = hand_up(channel, message, now)
    if result.duplicate:
        return "duplicates"
    stored = result.message
    media = message.metadata.get("media") or {}
    if media.get("id"):
        payload = {
            "media_id": media["id"],
            "sha256": media.get("sha256"),
            "mime_type": media.get("mime_type"),
        }
        ChannelTask.add(channel.id, stored.id, "media_download", payload, now)
    if channel.settings.get("mark_read"):
        payload = {"external_id": message.external_id}
        ChannelTask.add(channel.id, stored.id, "mark_read", payload, now)
    return "messages"


def _identity_change(channel, change, now):
    result = hand_up(channel, change, now)
    return "duplicates" if result.duplicate else "messages"


def _reaction(channel, reaction, now):
    if hand_up(channel, reaction, now) is None:
        log.info("reaction to unknown message %s ignored", reaction.target_external_id)
    return "reactions"


def _status(channel, update, now):
    hand_up(channel, update, now)
    return "statuses"


def _notice(channel, notice, now):
    with transaction():
        return _logged(channel, notice, now)


def _logged(channel, notice, now):
    if notice.kind in ("skipped", "malformed"):
        reason = notice.payload.get("reason")
        log.warning("WhatsApp channel %s: item %s: %s", channel.id, notice.kind, reason)
    ChannelEvent.record(channel.id, notice.kind, notice.payload, notice.is_error, now)
    if notice.is_error:
        error = notice.payload.get("error") or {
            "code": notice.kind.upper(),
            "title": notice.payload.get("reason", notice.kind),
            "details": None,
        }
        data = {**formats.jsonable(channel.as_dict()), "error": error, "source": "webhook"}
        emit(channel.workspace_id, "channel.error", data, now=now)
    return "notices"


APPLY = {
    InboundMessage: _message,
    IdentityChange: _identity_change,
    Reaction: _reaction,
    StatusUpdate: _status,
    Notice: _notice,
}
