"""A channel's trouble with its network, told once: written to the channel's
event log and raised as `channel.error` (for the webhooks) in one
transaction. A poller (Telegram's getUpdates, the e-mail channel's IMAP
poll) meets the same failure at every tick; `said_already` keeps it from
telling it again until something else happened."""

from .. import formats
from ..db import transaction
from ..events import emit
from ..models import ChannelEvent


def channel_error(channel, kind, error, now=None):
    """Log `error` ({code, title, details}) as `kind` and raise channel.error."""
    with transaction():
        ChannelEvent.record(channel.id, kind, {"error": error}, is_error=True, now=now)
        data = {**formats.jsonable(channel.as_dict()), "error": error, "source": kind}
        emit(channel.workspace_id, "channel.error", data, now=now)


def said_already(channel, kind, code):
    """Whether the channel's latest log entry is this failure (`kind`, `code`)."""
    latest = ChannelEvent.latest(channel.id)
    return (
        latest is not None
        and latest.kind == kind
        and latest.payload.get("error", {}).get("code") == code
    )
