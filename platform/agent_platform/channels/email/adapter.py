"""The e-mail channel's side of the adapter contract (channels.adapters)."""

from ... import formats, mailheaders
from ...db import transaction
from ...errors import ValidationError
from ...models.base import utcnow
from ...models.email import EmailMailbox
from ..adapters import Adapter
from . import servers
from .credentials import verify_credentials
from .sender import EmailSender

MAX_BLOCKED = 500


def blocked_senders(value, field):
    """Addresses (ana@example.com) and domains (@example.com), lower-cased."""
    if not isinstance(value, list) or len(value) > MAX_BLOCKED:
        raise ValidationError(
            field, f"must be a list of at most {MAX_BLOCKED} addresses or @domains"
        )
    return list(
        dict.fromkeys(_blocked(item, f"{field}[{index}]") for index, item in enumerate(value))
    )


def _blocked(item, field):
    if isinstance(item, str) and item.startswith("@"):
        return "@" + formats.hostname(item[1:], field)
    return formats.email(item, field)


def header_text(max_length):
    """A setting written in a mail's headers (from_name): one line of plain
    text, refused (400 naming the setting) with a line break, another control
    character or an encoded word in it, which would otherwise fail every send."""
    check = formats.text(max_length)

    def checked(value, field):
        problem = mailheaders.problem(check(value, field)) or formats.name_problem(value)
        if problem:
            raise ValidationError(field, problem[0].lower() + problem[1:].rstrip("."))
        return value

    return checked


class EmailAdapter(EmailSender, Adapter):
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
        "from_name": header_text(200),
        "blocked_senders": blocked_senders,
    }
    secret_settings = ("smtp_password", "imap_password")
    settings_doc = (
        "smtp_host, smtp_port, smtp_username, smtp_password*, smtp_security "
        "(starttls|ssl|none), imap_host, imap_port, imap_username, imap_password*, "
        "imap_security, from_address, from_name, blocked_senders (list)"
    )
    link_setting, link_prefix = "from_address", "mailto:"
    identity = staticmethod(formats.email)
    # An e-mail carries what a long answer needs in one message.
    text_limit = 100_000
    verify_credentials = staticmethod(verify_credentials)

    def cannot_send(self, channel):
        needed = servers.missing(channel.settings, "smtp")
        if not needed:
            return None
        listed = ", ".join(f"settings.{name}" for name in needed)
        return f"Channel {channel.id} cannot send messages: set {listed} first."

    def missing_settings(self, settings):
        """Mail is read from the IMAP server and answered through the SMTP one."""
        return servers.missing(settings, "imap") + servers.missing(settings, "smtp")

    def activate(self, channel, previous):
        """Another mailbox (host or account) on an existing channel is read
        from now on: its old mail is not answered, and the UIDs kept are the
        previous mailbox's."""
        if previous is not None and _mailbox(previous) != _mailbox(channel.settings):
            with transaction():
                EmailMailbox.start(channel.id, utcnow())


def _mailbox(settings):
    """What names a mailbox: its server and account (lower-cased)."""
    username = servers.credentials(settings, "imap")[0]
    return (settings.get("imap_host") or "").lower(), (username or "").lower()
