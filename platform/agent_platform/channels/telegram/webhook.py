"""Webhook intake: the Bot API POSTs each Update to the channel's callback
URL with the secret given to setWebhook in X-Telegram-Bot-Api-Secret-Token.

`register` (on activation, in intake_mode "webhook") calls setWebhook with
<server.public_url>/inbound/telegram/<channel id> and the channel's
secret_token, made at random (and stored encrypted) when it has none;
`unregister` calls deleteWebhook, with the token the webhook was set with.
Their outcome goes to the channel's event log; a failure also raises
channel.error (the settings stay stored).
"""

import hmac
import logging
import secrets

from flask import current_app

from ...db import transaction
from ...errors import Unauthorized
from ...models import Channel, ChannelEvent
from ..adapters import check_bound
from ..channel_errors import channel_error
from .botapi import BotApiError, client
from .intake import decoded, store, telegram_channel

log = logging.getLogger("agent_platform.telegram")

HEADER = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]


def receive(channel_id, callback, bound=None):
    """One webhook POST: secret checked (constant time), bound, stored."""
    channel = telegram_channel(channel_id)
    given = callback.headers.get(HEADER)
    if not given:
        raise Unauthorized(f"The {HEADER} header is missing.", code="MISSING_SECRET_TOKEN")
    expected = channel.settings.get("secret_token")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthorized(
            f"{HEADER} is not the secret this channel gave setWebhook.",
            code="INVALID_SECRET_TOKEN",
        )
    if bound is not None:
        check_bound(bound(channel.id), "updates")
    return store(channel, [decoded(callback.body)])


def callback_url(channel):
    return f"{current_app.config['SERVER_PUBLIC_URL'].rstrip('/')}/inbound/telegram/{channel.id}"


def register(channel):
    """setWebhook for the channel, with its secret (made when it has none)."""
    secret = channel.settings.get("secret_token") or _new_secret(channel)
    params = {
        "url": callback_url(channel),
        "secret_token": secret,
        "allowed_updates": ALLOWED_UPDATES,
    }
    _recorded(channel, "setWebhook", "webhook_set", {"url": params["url"]}, params)


def unregister(channel, token):
    """deleteWebhook for the bot of `token` (the channel's, or the one it had)."""
    _recorded(channel, "deleteWebhook", "webhook_deleted", {}, token=token)


def _new_secret(channel):
    secret = secrets.token_urlsafe(32)
    # An UPDATE of the settings alone: the secret is no change of the
    # user's, so updated_at stays (save() would move it).
    with transaction():
        settings = {**Channel.get_by_id(channel.id).settings, "secret_token": secret}
        Channel.update(settings=settings).where(Channel.id == channel.id).execute()
    channel.settings = settings
    return secret


def _recorded(channel, method, kind, details, params=None, token=None):
    """Call `method`; its outcome goes to the channel's event log (`kind`
    with `details`), a failure also to the log and channel.error."""
    try:
        client(token or channel.settings["bot_token"]).call(method, params)
    except BotApiError as error:
        log.warning("Telegram %s failed on channel %s: %s", method, channel.id, error)
        channel_error(channel, f"{method}_failed", error.as_dict())
        return
    with transaction():
        ChannelEvent.record(channel.id, kind, details)
