"""Per-channel-type senders: how a queued outbound message leaves the platform.

An adapter is registered as the sender of its channel type at import time
(channels.adapters.register_adapter); tests may put a stand-in in its place
with `register_sender`. The send job (`services.sending.send_queued`) claims
queued messages with a lease and calls `sender.send(channel, message)`. A
message whose type has no sender fails (CHANNEL_CANNOT_SEND): none stays
queued with no way out.
"""

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class SendResult:
    """What the network answered: its id for the message (for status updates)."""

    external_id: str
    metadata: dict = field(default_factory=dict)


class SendError(Exception):
    """The network refused or could not be reached.

    `retryable` errors (timeouts, 5xx, rate limits) are tried again later, up
    to MESSAGES_SEND_MAX_ATTEMPTS; others fail the message at once. `code`,
    `title` and `details` become the message's `error`. `retry_after`
    (seconds) is how long the network asked to wait before the next try;
    `metadata` is merged into the message's, for the next try to read (the
    parts of a long text already sent, say).
    """

    def __init__(self, code, title, details=None, retryable=False, retry_after=None, metadata=None):
        super().__init__(f"{code}: {title}")
        self.code = str(code)
        self.title = title
        self.details = details
        self.retryable = retryable
        self.retry_after = retry_after
        self.metadata = metadata

    def as_dict(self):
        return {"code": self.code, "title": self.title, "details": self.details}


class Sender(Protocol):
    def send(self, channel, message) -> SendResult:
        """Send one `models.Message` through `channel`; raise SendError on failure.

        Called outside any database transaction; it must not write to the
        database itself (the job records the outcome).
        """


_SENDERS = {}


def register_sender(channel_type, sender):
    """Make `sender` the one sender for `channel_type` (replacing any before)."""
    _SENDERS[channel_type] = sender


def unregister_sender(channel_type):
    _SENDERS.pop(channel_type, None)


def get_sender(channel_type):
    """The sender of `channel_type`, or None when none is registered."""
    return _SENDERS.get(channel_type)


def registered_types():
    return sorted(_SENDERS)
