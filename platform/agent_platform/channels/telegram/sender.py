"""Sending through the Bot API: sendMessage for text (plain, no parse_mode,
so nothing needs escaping; split at Telegram's 4,096-character limit),
sendPhoto / sendDocument / sendAudio / sendVideo by URL (Telegram fetches
it; a caption over Telegram's 1,024 UTF-16 units, which a caption within the
API's 1,024 characters can be with emoji, follows the file as text messages),
with `reply_parameters` when the message answers one the network knows,
and the message's `metadata.buttons` as an inline keyboard.

The answer's message_id becomes the message's external id as
"<chat_id>:<message_id>" (Telegram numbers messages per chat). Called by the
send job (services.sending), which stores the outcome; nothing here writes.
"""

from ...models.contacts import ContactIdentity
from ...models.fastsql import scalar
from ..senders import SendError, SendResult
from .botapi import BotApiError, client

TEXT_LIMIT = 4096  # characters of a text message, counted in UTF-16 units
CAPTION_LIMIT = 1024  # UTF-16 units too
MAX_BUTTONS = 20
MEDIA_METHODS = {
    "image": ("sendPhoto", "photo"),
    "document": ("sendDocument", "document"),
    "audio": ("sendAudio", "audio"),
    "video": ("sendVideo", "video"),
}


class TelegramSender:
    def send(self, channel, message):
        api = client(_token(channel))
        chat_id = recipient(channel, message)
        reply = _reply_parameters(message)
        # Parts of a long text an earlier try sent already are not sent again.
        ids = list((message.metadata or {}).get("telegram_parts") or [])
        for method, params in calls(message, chat_id)[len(ids) :]:
            ids.append(_sent(api, method, {**params, **reply}, chat_id, ids))
        metadata = {"telegram_parts": ids} if len(ids) > 1 else {}
        return SendResult(external_id=ids[0], metadata=metadata)


def _sent(api, method, params, chat_id, ids):
    """The id of one message sent; a failure keeps the ids of the parts
    sent before it on the message."""
    progress = {"telegram_parts": ids} if ids else None
    try:
        result = api.call(method, params)
    except BotApiError as error:
        details = error.as_dict()["details"]
        raise SendError(
            error.code, error.title, details, error.retryable, error.retry_after, progress
        ) from None
    if not isinstance(result, dict) or "message_id" not in result:
        title = "The Bot API gave no message_id"
        raise SendError("INVALID_RESPONSE", title, retryable=True, metadata=progress)
    return f"{chat_id}:{result['message_id']}"


def _token(channel):
    token = channel.settings.get("bot_token")
    if not token:
        raise SendError("CHANNEL_NOT_CONFIGURED", "The channel has no bot_token")
    return token


def recipient(channel, message):
    """The contact's Telegram chat id: the one first seen on this channel,
    else any of theirs (a bot cannot start a chat from a phone number)."""
    chat_id = ContactIdentity.address_on(message.contact_id, "telegram", channel.id)
    if not chat_id:
        raise SendError("NO_RECIPIENT", "The contact has no Telegram chat with the bot")
    return chat_id


def calls(message, chat_id):
    """The (method, params) calls that send `message` to `chat_id`; the
    buttons, if any, go under the last one."""
    if message.type == "text":
        sent = _texts(message.text, chat_id)
    elif message.type in MEDIA_METHODS:
        sent = _media(message, chat_id)
    else:
        raise SendError("UNSUPPORTED_TYPE", f"A {message.type} message cannot be sent")
    buttons = (message.metadata or {}).get("buttons")
    if buttons is not None:
        sent[-1][1]["reply_markup"] = {"inline_keyboard": keyboard(buttons)}
    return sent


def _texts(text, chat_id):
    return [("sendMessage", {"chat_id": chat_id, "text": part}) for part in split(text)]


def _media(message, chat_id):
    """The file by URL with its caption; a caption over Telegram's limit
    (which would be refused or cut) follows the file as text instead."""
    method, field = MEDIA_METHODS[message.type]
    params = {"chat_id": chat_id, field: message.media_url}
    caption = message.caption or ""
    if _units(caption) > CAPTION_LIMIT:
        return [(method, params), *_texts(caption, chat_id)]
    if caption:
        params["caption"] = caption
    return [(method, params)]


def keyboard(buttons):
    """metadata.buttons (a list of {"text", "data"} or {"text", "url"}, one
    row each) as Telegram's inline keyboard; a press comes back as a
    `button` message with the button's data."""
    if not isinstance(buttons, list) or not 1 <= len(buttons) <= MAX_BUTTONS:
        raise SendError("INVALID_BUTTONS", f"metadata.buttons must list 1 to {MAX_BUTTONS}")
    return [[_button(button, index)] for index, button in enumerate(buttons)]


def _button(button, index):
    where = f"metadata.buttons[{index}]"
    if not isinstance(button, dict) or not isinstance(button.get("text"), str):
        raise SendError("INVALID_BUTTONS", f"{where} needs a text")
    data, url = button.get("data"), button.get("url")
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        return {"text": button["text"], "url": url}
    if not isinstance(data, str) or not 1 <= len(data.encode()) <= 64:
        raise SendError("INVALID_BUTTONS", f"{where} needs data of 1 to 64 bytes, or a url")
    return {"text": button["text"], "callback_data": data}


def split(text, limit=TEXT_LIMIT):
    """`text` in parts of at most `limit` UTF-16 units (how Telegram counts),
    cut after the last newline, else the last space, of each part when there is one."""
    text = text or ""
    parts = []
    while _units(text) > limit:
        cut = max(_fitting(text, limit), 1)  # a character wider than limit goes alone
        nice = max(text.rfind("\n", 0, cut), text.rfind(" ", 0, cut))
        cut = nice + 1 if nice > cut // 2 else cut
        parts.append(text[:cut])
        text = text[cut:]
    # What is left is empty after a cut only when a character wider than the
    # limit was the last one.
    return [*parts, text] if text or not parts else parts


def _units(text):
    return len(text.encode("utf-16-le")) // 2


def _fitting(text, limit):
    """How many characters of `text` fit in `limit` UTF-16 units."""
    count = units = 0
    for char in text:
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            break
        count += 1
    return count


def _reply_parameters(message):
    if not message.reply_to_id:
        return {}
    replied = scalar('SELECT "external_id" FROM "message" WHERE "id" = ?', message.reply_to_id)
    if not replied or ":" not in replied:
        return {}
    message_id = replied.rsplit(":", 1)[1]
    if not message_id.isdigit():
        return {}
    return {
        "reply_parameters": {"message_id": int(message_id), "allow_sending_without_reply": True}
    }
