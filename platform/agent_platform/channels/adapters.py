"""The adapter contract: one adapter per channel type carries its messages.

A channel type is supported by one module (`channels/<type>/`) that, when
imported, registers an `Adapter`. The adapter

- sends: `send(channel, message)` turns a stored outbound message into the
  network's call and answers a `SendResult`, or raises `SendError` (its
  `retryable` decides whether the send job tries again); `cannot_send`
  names what the channel lacks (credentials) so that a message is refused
  when it is posted rather than failed later;
- receives: `receive(channel_id, callback, bound)` checks a network's POST
  to `/inbound/<type>/<channel_id>` (signature, secret header) and hands
  what it carries to `services.inbound` (receive_inbound, apply_status, ...),
  which store contact, conversation, message and events idempotently and
  schedule the agent's reply;
- checks settings: `check_settings(settings)` refuses, before they are
  stored, settings that cannot work together (400 naming the setting);
- follows its channel: `activate(channel)` after a channel's settings were
  stored (for example registering a webhook with the network), and
  `deactivate(channel)` after it was deleted. Both run outside any
  transaction and may call the network.

The services only ask this registry; they never name a channel type. A type
in the API (models.channels.CHANNEL_TYPES) with no adapter can be created
and configured, but cannot be connected to an agent or send (409).
"""

from dataclasses import dataclass

from ..errors import NotFound
from .senders import get_sender, register_sender, registered_types


@dataclass
class Callback:
    """A network's POST as the intake sees it: the raw body (signatures are
    over the exact bytes) and the request headers (case-insensitive)."""

    body: bytes
    headers: object


class Adapter:
    """Defaults of the contract: an adapter overrides what its network has."""

    type = None

    def send(self, channel, message):
        raise NotImplementedError

    def check_settings(self, settings):
        """Raise ValidationError (naming the setting) for settings that
        cannot work together, beyond each value's own format."""

    def cannot_send(self, channel):
        """Why `channel` cannot send now (a missing setting), or None."""
        return None

    def receive(self, channel_id, callback, bound=None):
        raise NotFound(f"Channels of type {self.type} have no callback URL.", code="NOT_FOUND")

    def activate(self, channel):
        """The channel's settings were stored: set up the network's side."""

    def deactivate(self, channel):
        """The channel was deleted: undo the network's side."""


_ADAPTERS = {}


def register_adapter(adapter):
    """Make `adapter` the one of its type; it is also the type's sender."""
    _ADAPTERS[adapter.type] = adapter
    register_sender(adapter.type, adapter)


def get_adapter(channel_type):
    """The adapter of `channel_type`, or None."""
    return _ADAPTERS.get(channel_type)


def adapter_for(channel_type):
    """The adapter of `channel_type`, else 404 CHANNEL_NOT_FOUND (no callback URL)."""
    adapter = _ADAPTERS.get(channel_type)
    if adapter is None:
        message = f"No channel type {channel_type!r} takes callbacks."
        raise NotFound(message, code="CHANNEL_NOT_FOUND")
    return adapter


def unavailable_reason(channel_type):
    """Why channels of `channel_type` cannot carry messages (no adapter), or None."""
    if channel_type in _ADAPTERS:
        return None
    return f"Channels of type {channel_type} cannot carry messages yet{_able()}."


def send_refusal(channel):
    """Why a message cannot be sent on `channel` now, or None when it can:
    its type has no sender, or the sender says what the channel lacks."""
    sender = get_sender(channel.type)
    if sender is None:
        return f"Channels of type {channel.type} cannot send messages yet{_able()}."
    check = getattr(sender, "cannot_send", None)
    return check(channel) if check is not None else None


def _able():
    return f" (types that can: {', '.join(registered_types()) or 'none'})"


def check_settings(channel_type, settings):
    adapter = _ADAPTERS.get(channel_type)
    if adapter is not None:
        adapter.check_settings(settings)


def activated(channel):
    adapter = _ADAPTERS.get(channel.type)
    if adapter is not None:
        adapter.activate(channel)


def deactivated(channel):
    adapter = _ADAPTERS.get(channel.type)
    if adapter is not None:
        adapter.deactivate(channel)
