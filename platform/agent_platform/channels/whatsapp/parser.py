"""A WhatsApp Cloud API webhook payload turned into neutral objects.

`parse(payload, phone_number_id)` walks every entry, change, message and
status of one POST and returns, in order, `InboundMessage`, `Reaction`,
`IdentityChange`, `StatusUpdate` and `Notice` objects. It never raises on a
payload's content: anything it cannot read becomes a Notice (written to the
channel's event log) instead of an error, so one odd item never costs the
others of its batch.
"""

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..neutral import IdentityChange, InboundMessage, Reaction, StatusUpdate
from .meta_errors import error_fields
from .window import reengagement

MEDIA_KINDS = ("image", "audio", "video", "document", "sticker")
STATUSES = ("sent", "delivered", "read", "failed")
# Message types stored as a placeholder with the network's error.
PLACEHOLDER_KINDS = ("unsupported", "unknown")


@dataclass
class Notice:
    """Something for the channel's event log: `kind` is the change's field
    (template status, quality update, ...) or what was wrong with an item."""

    kind: str
    payload: dict = field(default_factory=dict)
    is_error: bool = False


def parse(payload, phone_number_id=None):
    """Every item of a webhook payload (a decoded JSON document), in order.

    Changes of the `messages` field whose metadata.phone_number_id is not
    `phone_number_id` (when given) are skipped with a Notice.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("entry"), list):
        reason = "the payload has no entry list"
        return [Notice("malformed", {"reason": reason, "payload": payload}, True)]
    items = []
    for entry in payload["entry"]:
        changes = entry.get("changes") if isinstance(entry, dict) else None
        if not isinstance(changes, list):
            items.append(Notice("malformed", {"reason": "entry without changes", "entry": entry}))
            continue
        for change in changes:
            items.extend(_change(entry.get("id"), change, phone_number_id))
    return items


def _change(entry_id, change, phone_number_id):
    if not isinstance(change, dict) or not isinstance(change.get("value"), dict):
        return [Notice("malformed", {"reason": "change without value", "change": change})]
    kind, value = _field(change.get("field")), change["value"]
    if kind != "messages":
        return [Notice(kind, {"entry_id": entry_id, "value": value})]
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    number = str(metadata.get("phone_number_id") or "")
    if phone_number_id and number != phone_number_id:
        reason = f"phone_number_id {number or '(none)'} is not the channel's {phone_number_id}"
        return [Notice("skipped", {"reason": reason, "entry_id": entry_id, "value": value})]
    items = []
    if value.get("errors"):
        errors = value["errors"]
        payload = {"entry_id": entry_id, "error": error_of(errors), "errors": errors}
        items.append(Notice("errors", payload, True))
    names = _names(value.get("contacts"))
    for message in _list(value.get("messages")):
        items.append(_guarded(_message, message, names))
    for status in _list(value.get("statuses")):
        items.append(_guarded(_status, status))
    return items


def _list(value):
    return value if isinstance(value, list) else []


def _field(field):
    """The change's field (a notice's kind): text, else "unknown"."""
    return field if isinstance(field, str) and field else "unknown"


def _names(contacts):
    """{wa_id: profile name} of the change's contacts."""
    names = {}
    for contact in _list(contacts):
        if isinstance(contact, dict) and contact.get("wa_id"):
            names[str(contact["wa_id"])] = _profile_name(contact.get("profile"))
    return names


def _profile_name(profile):
    """The name of a contact's profile ({"name": text}), else None: a
    profile of another shape was a 500 to Meta, which sends it again."""
    name = profile.get("name") if isinstance(profile, dict) else None
    return name if isinstance(name, str) and name else None


def _guarded(read, item, *args):
    try:
        return read(item, *args)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        return Notice("malformed", {"reason": f"{type(error).__name__}: {error}", "item": item})


def _identifier(item, key):
    """A network id: a non-empty string or a number, as Meta sends them;
    anything else (null, an object) refuses the item, never stored as "None"."""
    value = item[key]
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ValueError(f"{key} is {json.dumps(value)}, not an identifier")
    return str(value)


def _message(message, names):
    kind, sender = str(message.get("type") or "unknown"), _identifier(message, "from")
    external_id = _identifier(message, "id")
    timestamp = _time(message.get("timestamp"))
    if kind == "reaction":
        reaction = message["reaction"]
        return Reaction(
            external_id=external_id,
            sender_id=sender,
            target_external_id=_identifier(reaction, "message_id"),
            emoji=reaction.get("emoji") or None,
            timestamp=timestamp,
        )
    if kind == "system":
        return _system(message, external_id, sender, timestamp)
    inbound = InboundMessage(
        external_id=external_id,
        sender_id=sender,
        type=kind,
        sender_name=names.get(sender),
        sender_phone="+" + sender if sender.isdigit() else None,
        timestamp=timestamp,
    )
    _context(inbound, message)
    READERS.get(kind, _other)(inbound, message.get(kind), message)
    if message.get("errors"):
        inbound.error = error_of(message["errors"])
        inbound.metadata["errors"] = message["errors"]
    return inbound


def _context(inbound, message):
    context = message.get("context") or {}
    if context.get("id"):
        inbound.reply_to_external_id = str(context["id"])
    for flag in ("forwarded", "frequently_forwarded"):
        if context.get(flag):
            inbound.metadata[flag] = True
    if context.get("referred_product"):
        inbound.metadata["referred_product"] = context["referred_product"]
    if message.get("referral"):
        inbound.metadata["referral"] = message["referral"]


def _text(inbound, body, message):
    inbound.text = body["body"]


def _media(inbound, media, message):
    media = media or {}
    inbound.caption = media.get("caption")
    inbound.media_mime_type = media.get("mime_type")
    kept = ("id", "mime_type", "sha256", "filename", "voice", "animated")
    inbound.metadata["media"] = {name: media[name] for name in kept if name in media}
    if inbound.type == "audio" and media.get("voice"):
        inbound.metadata["voice"] = True
    if media.get("filename"):
        inbound.metadata["filename"] = media["filename"]


def _location(inbound, location, message):
    kept = ("latitude", "longitude", "name", "address", "url")
    inbound.metadata["location"] = {name: location[name] for name in kept if name in location}


def _contacts(inbound, cards, message):
    inbound.metadata["contacts"] = _list(cards)


def _interactive(inbound, interactive, message):
    kind = interactive.get("type")
    reply = interactive.get(kind) if isinstance(interactive.get(kind), dict) else {}
    if kind in ("button_reply", "list_reply"):
        inbound.text = reply.get("title")
    inbound.metadata["interactive"] = {"type": kind, **reply}


def _button(inbound, button, message):
    inbound.text = button.get("text")
    inbound.metadata["button"] = {"text": button.get("text"), "payload": button.get("payload")}


def _other(inbound, content, message):
    """Unsupported, unknown and newer types: the network's content is kept."""
    if isinstance(content, dict | list):
        inbound.metadata[inbound.type] = content


READERS = {
    "text": _text,
    **{kind: _media for kind in MEDIA_KINDS},
    "location": _location,
    "contacts": _contacts,
    "interactive": _interactive,
    "button": _button,
}


def _system(message, external_id, sender, timestamp):
    system = message.get("system") or {}
    new_id = system.get("wa_id") or system.get("new_wa_id")
    if system.get("type") not in ("user_changed_number", "customer_changed_number"):
        new_id = None
    new_id = str(new_id) if new_id else None
    return IdentityChange(
        external_id=external_id,
        sender_id=sender,
        new_sender_id=new_id,
        sender_phone="+" + sender if sender.isdigit() else None,
        new_sender_phone="+" + new_id if new_id and new_id.isdigit() else None,
        text=system.get("body"),
        timestamp=timestamp,
        metadata={"system": system},
    )


def _status(status):
    kind = status.get("status")
    if kind not in STATUSES:
        return Notice("status_ignored", {"reason": f"status {kind!r}", "status": status})
    metadata = {}
    if status.get("conversation"):
        metadata["network_conversation"] = status["conversation"]
    if status.get("pricing"):
        metadata["network_pricing"] = status["pricing"]
    return StatusUpdate(
        external_id=_identifier(status, "id"),
        status=kind,
        at=_time(status.get("timestamp")),
        error=reengagement(error_of(status["errors"])) if status.get("errors") else None,
        metadata=metadata,
    )


def error_of(errors):
    """The first of the network's errors as {code, title, details}."""
    first = errors[0] if isinstance(errors, list) and errors else errors
    if not isinstance(first, dict):
        return {"code": "UNKNOWN", "title": str(first), "details": None}
    code, title, details = error_fields(first)
    message = first.get("message")
    return {
        "code": code or "UNKNOWN",
        "title": title or "Error",
        "details": details or (message if isinstance(message, str) else None),
    }


def _time(value):
    """Unix seconds (a string) as an aware UTC datetime; None when unreadable."""
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None
