"""Channel adapters' neutral side: what an adapter hands in, and how it sends out.

Adapters (WhatsApp, Telegram, e-mail, website) turn network payloads into
`InboundMessage` / `StatusUpdate` and hand them up (`adapters.hand_up`) to the
one intake service (`services.intake`), never importing a service; outbound messages leave
through the `Sender` registered for the channel's type.
"""

from .neutral import IdentityChange, InboundEdit, InboundMessage, Reaction, StatusUpdate
from .senders import (
    SendError,
    SendResult,
    get_sender,
    register_sender,
    registered_types,
    unregister_sender,
)

__all__ = [
    "IdentityChange",
    "InboundEdit",
    "InboundMessage",
    "Reaction",
    "SendError",
    "SendResult",
    "StatusUpdate",
    "get_sender",
    "register_sender",
    "registered_types",
    "unregister_sender",
]
