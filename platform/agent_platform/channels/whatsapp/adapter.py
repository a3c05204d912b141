"""The WhatsApp channel's side of the adapter contract (channels.adapters)."""

from ... import formats
from ..adapters import Adapter
from . import intake
from .credentials import verify_credentials
from .sender import WhatsAppSender
from .sender import missing_settings as missing_to_send
from .templates import approved_templates
from .window import check_window

NUMERIC_ID = r"^[0-9]{1,30}$"


class WhatsAppAdapter(WhatsAppSender, Adapter):
    type = "whatsapp"
    buttons = True
    order = 1
    settings = {
        "phone_number_id": formats.pattern(NUMERIC_ID, "the numeric phone number id"),
        "business_account_id": formats.pattern(NUMERIC_ID, "the numeric account id"),
        "display_phone_number": formats.phone,
        "access_token": formats.text(4096),
        "app_secret": formats.text(512),
        "verify_token": formats.text(512),
        "mark_read": formats.flag,
        # Replies are recorded on the message instead of sent (sender.py).
        "sandbox": formats.flag,
    }
    secret_settings = ("access_token", "app_secret", "verify_token")
    settings_doc = (
        "phone_number_id, business_account_id, display_phone_number (E.164), "
        "access_token*, app_secret*, verify_token*, mark_read (true|false)"
    )
    link_setting, link_prefix = "display_phone_number", "https://wa.me/"
    identity = staticmethod(
        formats.pattern(r"^[1-9][0-9]{5,14}$", "a WhatsApp id (the number's digits)")
    )
    verify_credentials = staticmethod(verify_credentials)
    approved_templates = staticmethod(approved_templates)

    def link_to(self, value):
        """wa.me takes the number's digits, without the plus of E.164."""
        return self.link_prefix + value.lstrip("+")

    def missing_settings(self, settings):
        """What sending needs, and the app secret that every callback (the
        customers' messages) is signed with."""
        return missing_to_send(settings) + ([] if settings.get("app_secret") else ["app_secret"])

    def cannot_send(self, channel):
        missing = missing_to_send(channel.settings)
        if not missing:
            return None
        names = " and ".join(f"settings.{name}" for name in missing)
        return f"Channel {channel.id} cannot send messages: set {names} first."

    def check_message(self, channel, contact_id, kind, now):
        """A template may go at any time; anything else only in the window."""
        if kind != "template":
            check_window(channel, contact_id, now)

    def receive(self, channel_id, callback, bound=None):
        signature = callback.headers.get("X-Hub-Signature-256")
        return intake.receive(channel_id, callback.body, signature, bound=bound)
