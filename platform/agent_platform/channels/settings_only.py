"""Channel types the API offers with settings and a QR code, but no
adapter yet: a channel of these types can be created and configured, not
connected to an agent (409 CHANNEL_TYPE_NOT_AVAILABLE) nor sent on (409
CHANNEL_CANNOT_SEND), and has no callback URL (404).

When one of them gets an adapter, its declaration moves into that adapter's
module (channels/<type>/) and leaves this one.
"""

from ..services import formats
from .adapters import ChannelType, register_type


class EmailType(ChannelType):
    type = "email"
    order = 3
    settings = {
        "smtp_host": formats.hostname,
        "smtp_port": formats.port,
        "smtp_username": formats.text(254),
        "smtp_password": formats.text(1024),
        "smtp_security": formats.one_of("starttls", "ssl", "none"),
        "imap_host": formats.hostname,
        "imap_port": formats.port,
        "imap_username": formats.text(254),
        "imap_password": formats.text(1024),
        "imap_security": formats.one_of("ssl", "starttls", "none"),
        "from_address": formats.email,
        "from_name": formats.text(200),
    }
    secret_settings = ("smtp_password", "imap_password")
    settings_doc = (
        "smtp_host, smtp_port, smtp_username, smtp_password*, smtp_security "
        "(starttls|ssl|none), imap_host, imap_port, imap_username, imap_password*, "
        "imap_security, from_address, from_name"
    )
    link_setting, link_prefix = "from_address", "mailto:"
    identity = staticmethod(formats.email)
    # An e-mail carries what a long answer needs in one message.
    text_limit = 100_000


register_type(EmailType())
