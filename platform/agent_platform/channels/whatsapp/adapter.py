"""The WhatsApp channel's side of the adapter contract (channels.adapters)."""

from ..adapters import Adapter
from . import intake
from .sender import WhatsAppSender, missing_settings


class WhatsAppAdapter(WhatsAppSender, Adapter):
    type = "whatsapp"

    def cannot_send(self, channel):
        missing = missing_settings(channel)
        if not missing:
            return None
        names = " and ".join(f"settings.{name}" for name in missing)
        return f"Channel {channel.id} cannot send messages: set {names} first."

    def receive(self, channel_id, callback, bound=None):
        signature = callback.headers.get("X-Hub-Signature-256")
        return intake.receive(channel_id, callback.body, signature, bound=bound)
