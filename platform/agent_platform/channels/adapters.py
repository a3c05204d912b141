"""The adapter contract: one module per channel type holds all it knows.

A channel type lives in one module under `channels/` that, when imported,
registers itself here; `load()` imports every module of the package, so
adding a type means adding its module (and its tests) and nothing else.

A `ChannelType` declares what the API knows of the type, network or not:

- `settings`: {name: check(value, field) -> canonical value}, what a channel
  of the type accepts, and `secret_settings`, those written but never read
  back (encrypted at rest, shown as `<name>_set`); `settings_doc`, their
  line in the API's description of `settings`;
- `public_link(channel, public_url)`: what a customer opens to write (the QR
  code), usually `link_to` the value of `link_setting` (`link_prefix` + it);
- `identity`: check(value, field) of a contact's id on the network;
- `text_limit`: characters one message may carry (longer replies are split);
- `buttons`: whether its sender shows a text message's `metadata.buttons`
  (else the agent's clarifying questions number their choices in the text);
- `order`: where the type stands in the API's lists (the order types were
  added in, so that the OpenAPI document does not move when one is added;
  a type without one comes last).

An `Adapter` is a channel type that carries messages:

- sends: `send(channel, message)` turns a stored outbound message into the
  network's call and answers a `SendResult`, or raises `SendError` (its
  `retryable` decides whether the send job tries again); `cannot_send`
  names what the channel lacks (credentials) so that a message is refused
  when it is posted rather than failed later;
- receives: `receive(channel_id, callback, bound)` checks a network's POST
  to `/inbound/<type>/<channel_id>` (signature, secret header), parses what
  it carries into the neutral objects of `channels.neutral` and hands each
  up with `hand_up(channel, item, now)` to the one intake service
  (`services.intake`, registered here when the app is built), which stores
  contact, conversation, message and events idempotently and schedules the
  agent's reply; an adapter never imports a service;
- checks settings: `check_settings(settings)` refuses, before they are
  stored, settings that cannot work together (400 naming the setting);
  `missing_settings(settings)` names those a connected channel needs to
  work that `settings` lack (a PUT may not take them from one: 409);
- follows its channel: `activate(channel, previous)` after a channel's
  settings were stored (`previous`: the settings before, None on creation),
  to set up the network's side and undo what the previous settings had set
  up there (a webhook registered with another token); `deactivate(channel)`
  after it was deleted. Both run outside any transaction and may call the
  network;
- checks credentials, when its network can: `verify_credentials(channel)`
  (POST /v1/channels/{id}/verify) asks the network, outside any transaction,
  and answers {"ok": True, "details": {...}} or {"ok": False, "error":
  {code, title, details}}; it raises an ApiError when a setting is missing.

The services only ask this registry for what differs by type (only the
features of one type name it: the website widget, the WhatsApp sandbox of
`simulate`). A type registered as a plain `ChannelType` can be created and
configured, but cannot be connected to an agent or send (409).
"""

import importlib
import pkgutil
from dataclasses import dataclass

from .. import jsonbody
from ..errors import Conflict, NotFound, RateLimited, ValidationError
from ..models.channels import declare_secret_settings
from .senders import get_sender, register_sender, registered_types


@dataclass
class Callback:
    """A network's POST as the intake sees it: the raw body (signatures are
    over the exact bytes) and the request headers (case-insensitive)."""

    body: bytes
    headers: object


def callback_json(body):
    """A network's POST body decoded, else 400 naming the body (nesting and
    lone surrogates refused as on the API)."""
    try:
        return jsonbody.loads(body)
    except jsonbody.BodyError as error:
        raise ValidationError(error.field, error.problem) from None
    except ValueError:
        raise ValidationError("body", "is not a JSON document") from None


def check_bound(decision, what):
    """429 when a channel's per-minute bound on callbacks (`decision`, from
    the middleware's `bound`) is spent; `what` names the network's items."""
    if not decision.allowed:
        raise RateLimited(
            f"This channel received more than {decision.limit} {what} in the last minute; "
            f"retry in {decision.retry_after} seconds.",
            headers={"Retry-After": str(decision.retry_after)},
        )


class ChannelType:
    """A type the API offers; see the module's docstring for each part."""

    type = None
    order = None
    settings = {}
    secret_settings = ()
    settings_doc = ""
    link_setting = None
    link_prefix = ""
    identity = None
    text_limit = 4096
    buttons = False
    verify_credentials = None

    def public_link(self, channel, public_url):
        value = channel.settings.get(self.link_setting)
        if not value:
            raise Conflict(
                f"Channel {channel.id} has no link yet: set settings.{self.link_setting} first.",
                code="CHANNEL_NOT_CONFIGURED",
            )
        return self.link_to(value)

    def link_to(self, value):
        return self.link_prefix + value


class Adapter(ChannelType):
    """Defaults of the contract: an adapter overrides what its network has."""

    def send(self, channel, message):
        raise NotImplementedError

    def check_settings(self, settings):
        """Raise ValidationError (naming the setting) for settings that
        cannot work together, beyond each value's own format."""

    def missing_settings(self, settings):
        """The settings a channel needs to carry messages that `settings`
        lack, in the order to set them: none by default."""
        return []

    def cannot_send(self, channel):
        """Why `channel` cannot send now (a missing setting), or None."""
        return None

    def check_message(self, channel, contact_id, kind, now):
        """Raise an ApiError when this message (`kind`: its type) cannot go
        to the contact now. Only WhatsApp has template messages."""
        if kind == "template":
            raise ValidationError("type", "template messages are sent on WhatsApp channels only")

    def approved_templates(self, channel):
        """The templates `channel` may send outside a service window
        ({"name", "language", "body", "parameters"}): none but WhatsApp's."""
        return []

    def receive(self, channel_id, callback, bound=None):
        raise NotFound(f"Channels of type {self.type} have no callback URL.", code="NOT_FOUND")

    def activate(self, channel, previous):
        """The channel's settings were stored, replacing `previous` (None on
        creation): set up the network's side."""

    def deactivate(self, channel):
        """The channel was deleted: undo the network's side."""


_TYPES = {}
_ADAPTERS = {}
_INTAKE = []
_loaded = False


def register_intake(store):
    """Make `store(channel, item, now=None)` the service every adapter hands
    what it received up to (services.intake.store, set by create_app)."""
    _INTAKE[:] = [store]


def hand_up(channel, item, now=None):
    """Store `item` (a neutral object of channels.neutral) received on
    `channel`; the intake service's answer (see services.intake)."""
    return _INTAKE[0](channel, item, now=now)


def register_type(kind):
    """Make `kind` (a ChannelType) the one of its type."""
    _TYPES[kind.type] = kind
    declare_secret_settings(kind.type, kind.secret_settings)


def register_adapter(adapter):
    """Make `adapter` the one of its type; it is also the type's sender."""
    register_type(adapter)
    _ADAPTERS[adapter.type] = adapter
    register_sender(adapter.type, adapter)


def load():
    """Import every module of this package once: each channel type's module
    registers its type as it is imported."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = importlib.import_module(__package__)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")


def types():
    """Every channel type the API offers, in their order."""
    load()
    return sorted(_TYPES.values(), key=lambda kind: (kind.order is None, kind.order or 0))


def type_names():
    return tuple(kind.type for kind in types())


def channel_type(name):
    """The ChannelType called `name` (one of type_names())."""
    load()
    return _TYPES[name]


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


def check_message(channel, contact_id, kind, now):
    """As the channel's adapter: raise when this message cannot be sent now."""
    (get_adapter(channel.type) or Adapter()).check_message(channel, contact_id, kind, now)


def approved_templates(channel):
    """As the channel's adapter: the message templates it may send."""
    return (get_adapter(channel.type) or Adapter()).approved_templates(channel)


def _able():
    return f" (types that can: {', '.join(registered_types()) or 'none'})"


def check_settings(channel_type, settings):
    adapter = _ADAPTERS.get(channel_type)
    if adapter is not None:
        adapter.check_settings(settings)


def missing_settings(channel_type, settings):
    """What a channel of `channel_type` would lack with `settings` to carry
    messages (nothing for a type without adapter: it is never connected)."""
    adapter = _ADAPTERS.get(channel_type)
    return adapter.missing_settings(settings) if adapter is not None else []


def activated(channel, previous=None):
    adapter = _ADAPTERS.get(channel.type)
    if adapter is not None:
        adapter.activate(channel, previous)


def deactivated(channel):
    adapter = _ADAPTERS.get(channel.type)
    if adapter is not None:
        adapter.deactivate(channel)
