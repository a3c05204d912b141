"""The Telegram channel's side of the adapter contract (channels.adapters)."""

from flask import current_app

from ... import formats
from ...errors import ValidationError
from ..adapters import Adapter
from . import webhook
from .credentials import verify_credentials
from .polling import intake_mode
from .sender import TEXT_LIMIT, TelegramSender

_USERNAME = formats.pattern(
    r"^@?[A-Za-z][A-Za-z0-9_]{3,30}[Bb][Oo][Tt]$", "a bot username ending in bot"
)


def bot_username(value, field):
    """As people write it (@loja_bot) or not; stored without the @ (t.me/<name>)."""
    return _USERNAME(value, field).lstrip("@")


class TelegramAdapter(TelegramSender, Adapter):
    type = "telegram"
    order = 2
    settings = {
        # As BotFather hands them out: the bot's id, a colon, 35 characters.
        "bot_token": formats.pattern(
            r"^[0-9]{6,12}:[A-Za-z0-9_-]{30,50}$",
            "a bot token from BotFather, such as 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
        ),
        "intake_mode": formats.one_of("polling", "webhook"),
        "secret_token": formats.pattern(
            r"^[A-Za-z0-9_-]{1,256}$", "1 to 256 characters of A-Z, a-z, 0-9, _ and -"
        ),
        "bot_username": bot_username,
    }
    secret_settings = ("bot_token", "secret_token")
    settings_doc = (
        "bot_token*, intake_mode (polling|webhook, default polling), "
        "secret_token* (made in webhook mode), bot_username"
    )
    link_setting, link_prefix = "bot_username", "https://t.me/"
    identity = staticmethod(formats.pattern(r"^-?[0-9]{1,20}$", "a Telegram chat id (digits)"))
    text_limit = TEXT_LIMIT
    buttons = True
    verify_credentials = staticmethod(verify_credentials)

    def check_settings(self, settings):
        """Telegram calls webhooks on HTTPS only."""
        public_url = current_app.config["SERVER_PUBLIC_URL"]
        if settings.get("intake_mode") == "webhook" and not public_url.startswith("https://"):
            raise ValidationError(
                "settings.intake_mode",
                f"webhook needs the service on HTTPS, but server.public_url is {public_url}; "
                "set it, or use polling",
            )

    def missing_settings(self, settings):
        """A bot token: the secret token of webhook mode is made when missing."""
        return [] if settings.get("bot_token") else ["bot_token"]

    def cannot_send(self, channel):
        if not self.missing_settings(channel.settings):
            return None
        return f"Channel {channel.id} cannot send messages: set settings.bot_token first."

    def receive(self, channel_id, callback, bound=None):
        return webhook.receive(channel_id, callback, bound)

    def activate(self, channel, previous):
        """In webhook mode, setWebhook (polling needs nothing set up). A
        webhook the previous settings set, with another token or for a
        channel now polling, is deleted at once with the token it was set
        with: later, that token may be gone, and a bot left with a webhook
        refuses getUpdates."""
        before = webhook_token(previous)
        if before and before != webhook_token(channel.settings):
            webhook.unregister(channel, before)
        if webhook_token(channel.settings):
            webhook.register(channel)

    def deactivate(self, channel):
        if token := webhook_token(channel.settings):
            webhook.unregister(channel, token)


def webhook_token(settings):
    """The token a webhook is set with under `settings`; None when polling."""
    if settings and settings.get("bot_token") and intake_mode(settings) == "webhook":
        return settings["bot_token"]
    return None
