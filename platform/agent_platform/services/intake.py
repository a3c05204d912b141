"""The one service that stores what every channel's adapter received.

Adapters (channels/) parse a network's payloads into the neutral objects of
channels/neutral.py and hand each up through the adapter contract
(`channels.adapters.hand_up`); `store` is registered there when the app is
built, so no adapter imports a service. Each object goes to the service
function that keeps it: a message or a number change to `inbound` (contact,
conversation, message.received, the agent's reply), a reaction, an edit or
a delivery receipt to `receipts`.
"""

from ..channels.neutral import IdentityChange, InboundEdit, InboundMessage, Reaction, StatusUpdate
from . import inbound, receipts

STORES = {
    InboundMessage: inbound.receive_inbound,
    IdentityChange: inbound.receive_identity_change,
    Reaction: receipts.apply_reaction,
    InboundEdit: receipts.apply_edit,
    StatusUpdate: receipts.apply_status_update,
}


def store(channel, item, now=None):
    """Store `item` (a neutral object) on `channel`, idempotently: what the
    service function answers (a message, with `duplicate`, for a message or
    a number change; the message concerned, or None, for the others)."""
    return STORES[type(item)](channel, item, now=now)
