"""Long polling, for channels in intake_mode "polling" (the default): a
scheduler job asks getUpdates for each such channel, from the offset kept
in the database (one past the highest update stored), and stores what comes
back as the webhook would.

A short poll (timeout 0) every TELEGRAM_POLL_SECONDS: one job serves every
channel, and none holds a scheduler thread for long. Switching a channel
to polling deletes its webhook at once (adapter.activate); should a webhook
still be set (that deleteWebhook failed, or another program set one),
Telegram refuses getUpdates (409): it is deleted then, and the next tick polls.
"""

import logging
from datetime import timedelta

from ... import scheduler
from ...models import Channel
from ...models.base import utcnow
from ...models.telegram import TelegramUpdate
from ..channel_errors import channel_error, said_already
from .botapi import BotApiError, client
from .intake import is_update, store
from .webhook import ALLOWED_UPDATES, unregister

log = logging.getLogger("agent_platform.telegram")

DEFAULT_INTAKE_MODE = "polling"
BATCH = 100  # the most getUpdates hands out at once
POLL_FAILED = "getUpdates_failed"


def intake_mode(settings):
    """The intake mode `settings` (a channel's) choose."""
    return settings.get("intake_mode") or DEFAULT_INTAKE_MODE


# {channel id: when it may poll again} after a 429 with retry_after. Kept in
# this process: each process polling a bot is told to wait by its own 429,
# and a restart that forgets the wait asks at most once too early.
_WAITING = {}


@scheduler.job("TELEGRAM_POLL_SECONDS")
def poll_updates(now=None):
    """One getUpdates per polling Telegram channel; the number of updates stored."""
    now = now or utcnow()
    stored = 0
    for channel in Channel.active_of_type("telegram"):
        if channel.settings.get("bot_token") and intake_mode(channel.settings) == "polling":
            stored += poll_channel(channel, now)
    return stored


def poll_channel(channel, now=None):
    """getUpdates from the stored offset, stored; the number of new updates
    (none while Telegram asked the channel to wait)."""
    now = now or utcnow()
    if _WAITING.get(channel.id, now) > now:
        return 0
    _WAITING.pop(channel.id, None)
    params = {"timeout": 0, "limit": BATCH, "allowed_updates": ALLOWED_UPDATES}
    offset = TelegramUpdate.next_offset(channel.id)
    if offset is not None:
        params["offset"] = offset
    try:
        updates = client(channel.settings["bot_token"]).call("getUpdates", params)
    except BotApiError as error:
        return _refused(channel, error, now)
    if not isinstance(updates, list):
        log.warning("Telegram getUpdates gave no list on channel %s", channel.id)
        return 0
    valid = [update for update in updates if is_update(update)]
    counts = store(channel, valid, now)
    return len(valid) - counts["duplicates"]


def _refused(channel, error, now):
    """A webhook left from webhook mode is deleted; another process polling
    the same bot (Telegram answers 409 to one of the two) and passing
    trouble are only logged, a 429's retry_after waited; anything else (a
    revoked token) is a channel error, raised once rather than at every poll."""
    if error.retry_after:
        _WAITING[channel.id] = now + timedelta(seconds=error.retry_after)
    if error.code == "409" and "webhook" in error.title.lower():
        unregister(channel, channel.settings["bot_token"])
    elif error.retryable or error.code == "409":
        log.warning("Telegram getUpdates on channel %s: %s", channel.id, error)
    elif not said_already(channel, POLL_FAILED, error.code):
        channel_error(channel, POLL_FAILED, error.as_dict())
    return 0
