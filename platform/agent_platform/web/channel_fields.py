"""What each channel type's form asks, in the words of docs/channels/*.md, and
how a submitted form becomes the settings the API's service takes (the
service checks every value; a form only turns text into lists, numbers and
true/false)."""

from dataclasses import dataclass

from .. import formats
from ..errors import ValidationError


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    help: str
    kind: str = "text"  # text | secret | list | flag | port | choice | color
    choices: tuple = ()


TYPES = {
    "whatsapp": "WhatsApp",
    "telegram": "Telegram",
    "email": "E-mail",
    "website": "Website",
}

SECURITY = ("ssl", "starttls", "none")

FIELDS = {
    "whatsapp": (
        Field("phone_number_id", "Phone number ID", "In Meta's dashboard: WhatsApp → API Setup, "
              "the numeric id under the number."),
        Field("business_account_id", "WhatsApp Business Account ID", "The numeric id beside it."),
        Field("display_phone_number", "Phone number", "The number customers write to, "
              "as +5511999990000 (it makes the wa.me link and QR code)."),
        Field("access_token", "Access token", "A permanent token of a system user with "
              "whatsapp_business_messaging permission.", "secret"),
        Field("app_secret", "App secret", "App settings → Basic: every callback Meta sends "
              "is signed with it.", "secret"),
        Field("verify_token", "Verify token", "Any secret word of yours: paste it into Meta's "
              "dashboard beside the callback URL (Meta sends it back to check the URL).",
              "secret"),
        Field("mark_read", "Mark messages read", "Show customers the blue ticks when the "
              "agent has read their message.", "flag"),
    ),
    "telegram": (
        Field("bot_token", "Bot token", "What @BotFather answered to /newbot, such as "
              "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw.", "secret"),
        Field("bot_username", "Bot username", "The bot's username ending in bot (for the "
              "t.me link and QR code); checked against the token."),
        Field("intake_mode", "How messages are read", "polling (the default) works anywhere; "
              "webhook needs the service on HTTPS.", "choice", ("polling", "webhook")),
    ),
    "email": (
        Field("from_address", "Address", "The mailbox customers write to, such as "
              "help@example.com; the answers come from it."),
        Field("from_name", "Sender name", "Shown beside the address in the answers."),
        Field("imap_host", "IMAP server", "Where mail is read, such as imap.fastmail.com."),
        Field("imap_port", "IMAP port", "Empty: the security's port (993 for ssl, 143 "
              "otherwise).", "port"),
        Field("imap_security", "IMAP security", "ssl unless your provider says otherwise.",
              "choice", SECURITY),
        Field("imap_username", "IMAP username", "Empty: the address."),
        Field("imap_password", "IMAP password", "An app password of the mailbox (most "
              "providers refuse your normal password).", "secret"),
        Field("smtp_host", "SMTP server", "Where the answers are sent, such as "
              "smtp.fastmail.com."),
        Field("smtp_port", "SMTP port", "Empty: the security's port (465 for ssl, 587 for "
              "starttls, 25 for none).", "port"),
        Field("smtp_security", "SMTP security", "starttls unless your provider says "
              "otherwise.", "choice", SECURITY),
        Field("smtp_username", "SMTP username", "Empty: the IMAP username."),
        Field("smtp_password", "SMTP password", "Empty: the IMAP password.", "secret"),
        Field("blocked_senders", "Never answer", "Addresses (ana@example.com) or domains "
              "(@example.com), one a line.", "list"),
    ),
    "website": (
        Field("allowed_origins", "Allowed sites", "The sites that may show the widget, one "
              "a line, such as https://shop.example.com (scheme, host and port).", "list"),
        Field("title", "Title", "The widget's heading (default: the channel's name)."),
        Field("greeting", "Greeting", "The first words a visitor sees."),
        Field("launcher_text", "Button text", "The text on the button that opens the chat."),
        Field("primary_color", "Main colour", "A hex colour such as #1a73e8.", "color"),
        Field("background_color", "Background colour", "A hex colour.", "color"),
        Field("text_color", "Text colour", "A hex colour.", "color"),
        Field("position", "Position", "Corner of the page.", "choice",
              ("bottom-right", "bottom-left")),
        Field("require_name", "Ask the visitor's name", "Before the first message.", "flag"),
        Field("require_email", "Ask the visitor's e-mail", "Before the first message.", "flag"),
        Field("identity_secret", "Identity secret", "Optional, 16 to 256 characters: the key "
              "your site signs its signed-in users' ids with (identity verification).",
              "secret"),
    ),
}  # fmt: skip

# docs/channels/email.md's table of providers, for the e-mail form's preset select.
EMAIL_PRESETS = {
    "gmail": ("Gmail / Google Workspace", "imap.gmail.com", "ssl", "smtp.gmail.com", "starttls"),
    "fastmail": ("Fastmail", "imap.fastmail.com", "ssl", "smtp.fastmail.com", "ssl"),
}


def fields_of(channel_type):
    return FIELDS[channel_type]


def settings_from(channel_type, form, creating):
    """The settings a submitted form sets. Creating: only what was filled.
    Editing: an emptied field is removed (None), and a secret left empty
    keeps its stored value (it is never shown, so it is never sent back)."""
    settings = {}
    for field in fields_of(channel_type):
        value = _value(field, form)
        if value is None and (creating or field.kind == "secret"):
            continue
        settings[field.name] = value
    return settings


def _value(field, form):
    if field.kind == "flag":
        return form.get(field.name) == "true"
    raw = form.get(field.name, "").strip()
    if field.kind == "list":
        items = [line.strip() for line in raw.splitlines() if line.strip()]
        return items or None
    if field.kind == "port" and raw.isascii() and raw.isdigit():  # "²" is a digit too
        return int(raw)
    return raw or None


def check_name(name):
    """What the API's schema checks of a channel's name (one line, 1 to 200)."""
    problem = formats.name_problem(name)
    if problem is None and not 1 <= len(name) <= 200:
        problem = "Must be 1 to 200 characters."
    if problem:
        raise ValidationError("name", problem)
    return name


def error_field(error):
    """The form field an API error names (`settings.imap_port` → imap_port,
    `settings.allowed_origins[1]` → allowed_origins), or None."""
    name = getattr(error, "field", None) or ""
    return name.removeprefix("settings.").split("[")[0] or None
