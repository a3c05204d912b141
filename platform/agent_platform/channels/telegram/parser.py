"""A Telegram Update turned into what the channel stores.

`parse(update)` returns one item: an `InboundMessage` (messages and button
presses), an `InboundEdit` (an edited message: applied to the stored one,
keeping its history) or an `Ignored` (group chats, channel posts, membership changes
and anything newer, written to the channel's event log). It never raises on
an update's content.

Group chats are ignored by rule: the agent answers one customer at a time,
and in a group every member's message would start or continue one shared
conversation with the group as its contact. Only private chats are stored.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..neutral import InboundEdit, InboundMessage

# (Telegram's field, our type); the first present one decides.
MEDIA = (
    ("photo", "image"),
    ("document", "document"),
    ("voice", "audio"),
    ("audio", "audio"),
    ("video", "video"),
    ("video_note", "video"),
    ("animation", "video"),
    ("sticker", "sticker"),
)


@dataclass
class Ignored:
    reason: str
    payload: dict = field(default_factory=dict)


def parse(update):
    try:
        return _parsed(update)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        return Ignored(f"malformed update ({type(error).__name__}: {error})", {"update": update})


def _parsed(update):
    if "message" in update:
        return _private(update["message"], update, _message)
    if "edited_message" in update:
        return _private(update["edited_message"], update, _edit)
    if "callback_query" in update:
        return _callback(update["callback_query"], update)
    kinds = sorted(name for name in update if name != "update_id")
    return Ignored(
        f"update of kind {', '.join(kinds) or 'none'} is not handled", {"update": update}
    )


def _private(message, update, read):
    chat = message["chat"]
    if chat.get("type") != "private":
        reason = f"{chat.get('type')} chat {chat.get('id')}: only private chats are handled"
        return Ignored(reason, {"update_id": update["update_id"], "chat": chat})
    return read(message, update)


def external_id(chat_id, message_id):
    """A message's id on the channel: Telegram numbers messages per chat."""
    return f"{int(chat_id)}:{int(message_id)}"


def _message(message, update):
    chat_id, sender = message["chat"]["id"], message.get("from") or message["chat"]
    inbound = InboundMessage(
        external_id=external_id(chat_id, message["message_id"]),
        sender_id=str(int(chat_id)),
        sender_name=_name(sender),
        timestamp=_time(message.get("date")),
        metadata={"telegram_update_id": update["update_id"], **_user(sender)},
    )
    replied = message.get("reply_to_message")
    if isinstance(replied, dict) and replied.get("message_id"):
        inbound.reply_to_external_id = external_id(chat_id, replied["message_id"])
    _content(inbound, message)
    return inbound


def _content(inbound, message):
    if "text" in message:
        inbound.type, inbound.text = "text", message["text"]
        return
    for name, kind in MEDIA:
        if name in message:
            return _media(inbound, kind, name, message)
    if "location" in message:
        inbound.type = "location"
        location = message["location"]
        inbound.metadata["location"] = {
            "latitude": location["latitude"],
            "longitude": location["longitude"],
        }
        return
    if "contact" in message:
        inbound.type = "contacts"
        inbound.metadata["contacts"] = [message["contact"]]
        return
    inbound.type = "unsupported"
    kinds = [name for name in message if name not in _ENVELOPE]
    inbound.metadata["network_type"] = kinds[0] if kinds else "unknown"


# Fields every message has, around its content.
_ENVELOPE = {"message_id", "from", "chat", "date", "reply_to_message", "message_thread_id"}


def _media(inbound, kind, name, message):
    content = message[name]
    if name == "photo":  # the sizes of one photo, smallest first: keep the largest
        content = max(content, key=lambda size: size.get("width", 0) * size.get("height", 0))
    inbound.type = kind
    inbound.caption = message.get("caption")
    inbound.media_mime_type = content.get("mime_type") or (
        "image/jpeg" if kind == "image" else None
    )
    kept = ("file_id", "file_unique_id", "file_size", "file_name", "mime_type", "duration")
    inbound.metadata["media"] = {key: content[key] for key in kept if key in content}
    inbound.metadata["telegram_type"] = name
    if name == "voice":
        inbound.metadata["voice"] = True
    if content.get("file_name"):
        inbound.metadata["filename"] = content["file_name"]
    if name == "sticker" and content.get("emoji"):
        inbound.text = content["emoji"]


def _edit(message, update):
    return InboundEdit(
        external_id=external_id(message["chat"]["id"], message["message_id"]),
        text=message.get("text"),
        caption=message.get("caption"),
        timestamp=_time(message.get("edit_date")),
    )


def _callback(query, update):
    """A button pressed under one of the bot's messages: stored as a
    `button` message whose text is the button's data."""
    message = query.get("message") or {}
    chat = message.get("chat") or {}
    if chat and chat.get("type") != "private":
        return Ignored("callback query from a group chat", {"update_id": update["update_id"]})
    sender = query["from"]
    inbound = InboundMessage(
        external_id=f"callback:{query['id']}",
        sender_id=str(int(chat.get("id") or sender["id"])),
        type="button",
        text=query.get("data"),
        sender_name=_name(sender),
        metadata={
            "telegram_update_id": update["update_id"],
            "button": {"data": query.get("data"), "callback_query_id": query["id"]},
            **_user(sender),
        },
    )
    if message.get("message_id") and chat.get("id"):
        inbound.reply_to_external_id = external_id(chat["id"], message["message_id"])
    return inbound


def _name(user):
    name = " ".join(part for part in (user.get("first_name"), user.get("last_name")) if part)
    return name or user.get("title") or None


def _user(user):
    return {"telegram_username": user["username"]} if user.get("username") else {}


def _time(value):
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None
