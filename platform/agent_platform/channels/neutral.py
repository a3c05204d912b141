"""The network-neutral shapes adapters produce from a network's payloads."""

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime

from ..nul_text import holds_nul, nul_replaced

# Message types an adapter may deliver. The API sends text and media only;
# the others arrive from networks and are stored as they are.
INBOUND_TYPES = (
    "text",
    "image",
    "audio",
    "video",
    "document",
    "sticker",
    "location",
    "contacts",
    "interactive",
    "button",
    "unsupported",
)


@dataclass
class InboundMessage:
    """One message a contact wrote, as the network described it.

    `external_id` is the network's message id: delivering the same one twice
    stores one message. `sender_id` is the contact's identity on the network
    (WhatsApp wa_id, Telegram chat id, e-mail address, widget visitor id);
    `sender_phone` (E.164) and `sender_email` let the platform recognise a
    contact it already knows from another channel. `timestamp` is the
    network's time (naive UTC or aware), kept in the message metadata.
    """

    external_id: str
    sender_id: str
    type: str = "text"
    text: str | None = None
    caption: str | None = None
    media_url: str | None = None
    media_mime_type: str | None = None
    sender_name: str | None = None
    sender_phone: str | None = None
    sender_email: str | None = None
    reply_to_external_id: str | None = None
    timestamp: datetime | None = None
    metadata: dict = field(default_factory=dict)
    # The network ids of the messages this one follows, most relevant first
    # (an e-mail's In-Reply-To, then its References): the conversation of
    # the first one stored on the channel continues, when it is the
    # sender's and open, or closed with no other open (see receive_inbound).
    thread: list = field(default_factory=list)
    # What the network reported about the message (code, title, details),
    # e.g. for a type it could not deliver; stored as the message's error.
    error: dict | None = None


@dataclass
class InboundEdit:
    """The contact edited a message they wrote (`external_id`): its new
    `text` (or `caption`, for media) as of `timestamp`."""

    external_id: str
    text: str | None = None
    caption: str | None = None
    timestamp: datetime | None = None


@dataclass
class Reaction:
    """The contact reacted to a message of the chat (`target_external_id`);
    `emoji` None removes their reaction. `external_id` is the reaction's own
    network id (redeliveries are recognised by it)."""

    external_id: str
    sender_id: str
    target_external_id: str
    emoji: str | None = None
    timestamp: datetime | None = None


@dataclass
class IdentityChange:
    """The network says the contact `sender_id` is now `new_sender_id` (a
    WhatsApp number change); stored as a system message with `text`.
    `new_sender_id` None: only the notice is stored. The contact's phone
    follows from `sender_phone` to `new_sender_phone` (E.164) when it was
    the old one."""

    external_id: str
    sender_id: str
    new_sender_id: str | None = None
    sender_phone: str | None = None
    new_sender_phone: str | None = None
    text: str | None = None
    timestamp: datetime | None = None
    metadata: dict = field(default_factory=dict)


@dataclass
class StatusUpdate:
    """A delivery receipt: the network's message id moved to `status` at `at`.

    `status` is one of sent, delivered, read, failed; `error` (for failed) is
    a dict with code, title and details.
    """

    external_id: str
    status: str
    at: datetime | None = None
    error: dict | None = None
    # Network details kept on the message (merged into its metadata), e.g.
    # WhatsApp's conversation and pricing objects.
    metadata: dict = field(default_factory=dict)


def storable(item):
    """`item` (any object of this module) with every NUL (U+0000) of its text,
    names, metadata and error replaced by U+FFFD (see nul_text): the same
    object when it holds none, else a copy.

    A customer's message is kept, never refused: a refusal would lose it, or
    make the network deliver it again for days. The services apply it where
    they take these objects in (services.inbound, services.receipts), after
    the adapter is done filling them in, so that no adapter has to."""
    fields = vars(item)
    changed = {name: nul_replaced(value) for name, value in fields.items() if holds_nul(value)}
    return dataclasses.replace(item, **changed) if changed else item


def senders(channel, items):
    """The identities ((workspace, channel type, sender) each) whose
    messages are among `items` (parsed items of `channel`): what storing
    them holds (models.ContactIdentity.hold_in_order)."""
    return [
        (channel.workspace_id, channel.type, item.sender_id)
        for item in items
        if isinstance(item, InboundMessage)
    ]
