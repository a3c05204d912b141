"""The website channel's side of the adapter contract (channels.adapters)."""

from ... import formats
from ..adapters import Adapter
from ..senders import SendResult

POSITIONS = ("bottom-right", "bottom-left")


class WebsiteAdapter(Adapter):
    type = "website"
    order = 4
    # The widget draws a message's metadata.buttons under it (visitors.render).
    buttons = True
    settings = {
        "allowed_origins": formats.origins(50),
        "title": formats.text(100),
        "greeting": formats.text(1000),
        "primary_color": formats.color,
        "background_color": formats.color,
        "text_color": formats.color,
        "position": formats.one_of(*POSITIONS),
        "launcher_text": formats.text(40),
        "require_name": formats.flag,
        "require_email": formats.flag,
        # The key the site signs its user ids with (identity verification).
        "identity_secret": formats.text(256, min_length=16),
    }
    secret_settings = ("identity_secret",)
    settings_doc = (
        "allowed_origins (list), title, greeting, primary_color, background_color, "
        "text_color (#hex), position (bottom-right|bottom-left), launcher_text, "
        "require_name, require_email (true|false), identity_secret* (16-256 characters)"
    )
    # A visitor's identity: `visitor:<hash of their token>` or `user:<the site's id>`.
    identity = staticmethod(formats.text(200))

    def public_link(self, channel, public_url):
        """The widget's own page (services.channels.widget)."""
        return f"{public_url.rstrip('/')}/widget/{channel.id}"

    def send(self, channel, message):
        """Nothing to call: the message is stored, and the visitor's widget
        reads it from there (visitors.changes), so storing it is sending it.
        Its id on the "network" is its own."""
        return SendResult(external_id=message.id)
