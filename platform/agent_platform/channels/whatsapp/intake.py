"""The callback URL of a WhatsApp channel: subscription check (GET) and
events (POST), from the raw bytes to stored messages in one transaction.

POST: the channel's app secret checks X-Hub-Signature-256 over the raw body
before anything parses it; then the per-channel bound; then every item of
the payload is applied in ONE transaction (a batch costs little more than a
single message, and POSTs arriving together share it: see GroupCommit):
messages through services.inbound.receive_inbound (idempotent on the
network's id), reactions, number changes, statuses through apply_status,
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
import threading

from ... import safejson
from ...db import transaction
from ...errors import Forbidden, NotFound, RateLimited, Unauthorized, ValidationError
from ...events import emit
from ...models import Channel, ChannelEvent, ChannelTask
from ...models.base import canonical_uuid, utcnow
from ...services import formats
from ...services import inbound as inbound_service
from ..neutral import IdentityChange, InboundMessage, Reaction, StatusUpdate
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
        _check_bound(bound(channel.id))
    try:
        payload = safejson.loads(body)
    except ValueError:
        raise ValidationError("body", "is not a JSON document") from None
    return store(channel, parse(payload, channel.settings.get("phone_number_id")), now)


def _check_bound(decision):
    if not decision.allowed:
        raise RateLimited(
            f"This channel received more than {decision.limit} events in the last minute; "
            f"retry in {decision.retry_after} seconds.",
            headers={"Retry-After": str(decision.retry_after)},
        )


def store(channel, items, now=None):
    """Apply parsed items to `channel` in one transaction, each atomically.

    Returns once that transaction is committed; it may be shared with other
    POSTs arriving at the same moment (see GroupCommit)."""
    now = now or utcnow()
    return _group.run(lambda: _store(channel, items, now))


def _store(channel, items, now):
    """Runs inside the group's transaction."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for item in items:
        counts[_applied(channel, item, now)] += 1
    return counts


class GroupCommit:
    """Concurrent POSTs share one transaction (group commit).

    SQLite has one writer at a time. Left to itself, every request thread
    would BEGIN IMMEDIATE and wait for the write lock in SQLite's busy
    handler, which sleeps in steps of up to 100 ms while the lock may already
    be free, and every POST would pay its own COMMIT. Instead the first
    thread to arrive leads: it takes every unit of work waiting, runs them in
    one transaction (each item atomically, so one that fails rolls back
    alone), commits once, and wakes their threads; work that arrived
    meanwhile is led by its first thread. Every POST is still answered only
    after the COMMIT that stored it.
    """

    def __init__(self, max_batch=64):
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._pending = []
        self._leading = False

    def run(self, work):
        unit = _Unit(work)
        with self._lock:
            self._pending.append(unit)
            if not self._leading:
                self._leading = unit.leads = True
            else:  # it will wait: only then does it need something to wait on
                unit.wake = threading.Event()
        while not unit.finished:
            if unit.leads:
                self._lead()
            else:
                unit.wake.wait()
                unit.wake.clear()
        if unit.error is not None:
            raise unit.error
        return unit.result

    def _lead(self):
        with self._lock:
            batch = self._pending[: self.max_batch]
            del self._pending[: self.max_batch]
        try:
            with transaction():
                for unit in batch:
                    unit.execute()
        except Exception as error:  # the COMMIT itself failed: nothing was stored
            for unit in batch:
                unit.result, unit.error = None, error
        finally:
            with self._lock:
                successor = self._pending[0] if self._pending else None
                if successor is None:
                    self._leading = False
                else:
                    successor.leads = True
            for unit in batch:
                unit.leads, unit.finished = False, True
                if unit.wake is not None:
                    unit.wake.set()
            if successor is not None:
                successor.wake.set()


class _Unit:
    def __init__(self, work):
        self.work = work
        self.wake = None  # a threading.Event, made for units that wait
        self.leads = self.finished = False
        self.result = self.error = None

    def execute(self):
        # No savepoint of its own: each item has one (see _applied), so a
        # failure here leaves only whole items behind, which a redelivery
        # of the POST finds stored.
        try:
            self.result = self.work()
        except Exception as error:
            self.error = error


_group = GroupCommit()


def _applied(channel, item, now):
    # No savepoint here: each service call below is one transaction (a
    # savepoint inside the group's) of its own, so a failing item has
    # already rolled back; the tasks queued after a stored message are
    # single INSERTs.
    try:
        return APPLY[type(item)](channel, item, now)
    except Exception as error:
        log.exception("WhatsApp item not stored on channel %s", channel.id)
        payload = {
            "reason": f"{type(error).__name__}: {error}",
            "item_type": type(item).__name__,
            "item": formats.jsonable(dataclasses.asdict(item)),
        }
        ChannelEvent.record(channel.id, "item_failed", payload, True, now)
        return "failed"


def _message(channel, message, now):
    result = inbound_service.receive_inbound(channel, message, now=now)
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
    result = inbound_service.receive_identity_change(channel, change, now=now)
    return "duplicates" if result.duplicate else "messages"


def _reaction(channel, reaction, now):
    if inbound_service.apply_reaction(channel, reaction, now=now) is None:
        log.info("reaction to unknown message %s ignored", reaction.target_external_id)
    return "reactions"


def _status(channel, update, now):
    inbound_service.apply_status_update(channel, update, now=now)
    return "statuses"


def _notice(channel, notice, now):
    with transaction():
        return _logged(channel, notice, now)


def _logged(channel, notice, now):
    if notice.kind == "skipped":
        log.warning("WhatsApp channel %s: %s", channel.id, notice.payload.get("reason"))
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
