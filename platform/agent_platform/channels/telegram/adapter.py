"""The Telegram channel's side of the adapter contract (channels.adapters)."""

from flask import current_app

from ...errors import ValidationError
from ..adapters import Adapter
from . import webhook
from .polling import intake_mode
from .sender import TelegramSender


class TelegramAdapter(TelegramSender, Adapter):
    type = "telegram"

    def check_settings(self, settings):
        """Telegram calls webhooks on HTTPS only."""
        public_url = current_app.config["SERVER_PUBLIC_URL"]
        if settings.get("intake_mode") == "webhook" and not public_url.startswith("https://"):
            raise ValidationError(
                "settings.intake_mode",
                f"webhook needs the service on HTTPS, but server.public_url is {public_url}; "
                "set it, or use polling",
            )

    def cannot_send(self, channel):
        if channel.settings.get("bot_token"):
            return None
        return f"Channel {channel.id} cannot send messages: set settings.bot_token first."

    def receive(self, channel_id, callback, bound=None):
        return webhook.receive(channel_id, callback, bound)

    def activate(self, channel):
        """In webhook mode, setWebhook (polling needs nothing set up)."""
        if channel.settings.get("bot_token") and intake_mode(channel) == "webhook":
            webhook.register(channel)

    def deactivate(self, channel):
        if channel.settings.get("bot_token") and intake_mode(channel) == "webhook":
            webhook.unregister(channel)
