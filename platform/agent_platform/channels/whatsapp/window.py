"""WhatsApp's customer service window: a business may send free-form
messages to a customer only within 24 hours of the customer's last message
to that number; outside it, only approved templates (Meta refuses anything
else with error 131047). The window is checked before a message is queued,
from the last message the contact wrote on this channel.
"""

from datetime import datetime, timedelta

from flask import current_app

from ...errors import Conflict
from ...models.base import utcnow
from ...models.fastsql import scalar

WINDOW = timedelta(hours=24)
# Meta's "Re-engagement message": more than 24 hours since the customer replied.
REENGAGEMENT_CODE = "131047"
CLOSED_TITLE = (
    "Outside WhatsApp's 24-hour customer service window: only an approved template "
    "(type template) can be sent until the customer writes again"
)


def last_inbound_at(channel_id, contact_id):
    """When the contact last wrote on the channel, in any of their
    conversations there (read through the conversations' message index)."""
    sql = (
        'SELECT MAX("created_at") FROM "message" WHERE "direction" = \'inbound\' '
        'AND "conversation_id" IN (SELECT "id" FROM "conversation" '
        'WHERE "channel_id" = ? AND "contact_id" = ?)'
    )
    last = scalar(sql, channel_id, contact_id)
    return last if last is None or isinstance(last, datetime) else datetime.fromisoformat(last)


def check_window(channel, contact_id, now=None):
    """Raise 409 OUTSIDE_SERVICE_WINDOW unless the contact wrote on this
    channel within the last 24 hours (`[whatsapp] check_service_window`)."""
    if not current_app.config["WHATSAPP_CHECK_SERVICE_WINDOW"]:
        return
    last = last_inbound_at(channel.id, contact_id)
    if last is not None and last > (now or utcnow()) - WINDOW:
        return
    since = "has never written" if last is None else f"last wrote at {last.isoformat()}Z"
    raise Conflict(
        f"The contact {since} on this channel. {CLOSED_TITLE}.",
        code="OUTSIDE_SERVICE_WINDOW",
    )


def reengagement(error):
    """Meta's error {code, title, details}, with its re-engagement refusal
    (synchronous, or in a failed status) under a code of ours that says
    what to do; Meta's own code and words are kept in details."""
    if error is None or error.get("code") != REENGAGEMENT_CODE:
        return error
    details = {
        "meta_code": error["code"],
        "meta_title": error["title"],
        "details": error["details"],
    }
    return {"code": "OUTSIDE_SERVICE_WINDOW", "title": CLOSED_TITLE, "details": details}
