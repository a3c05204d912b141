"""The visitor API's decisions: which channel, which visitor, their
messages in through the common inbound path, and what they see of their
conversation (nothing of any other, of other contacts or of the workspace).

Replies reach the widget pushed (push.py, server-sent events) or, where a
browser or a proxy cannot hold a stream, polled (see `changes`): both send
the same answers.
"""

import hashlib
import re
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from ... import formats
from ...errors import Forbidden, NotFound, ValidationError
from ...models import Channel, Clarification, Contact, ContactIdentity, Conversation, Message
from ...models.base import utcnow
from ..adapters import hand_up
from ..neutral import InboundMessage, StatusUpdate
from . import identity

# Messages one poll answers at most (the widget asks again when it is full).
PAGE = 100
# A poll answers again what changed in the last LAG: a reply is stored with
# the time its job started (its provider may have taken a while), so it can
# become visible with an updated_at older than changes the visitor already
# saw. What the widget has seen is recognised by a tag, not by the time.
LAG = timedelta(minutes=5)
# When the widget should ask again, in seconds, told with every poll's
# answer (widget.js keeps its own pace when no hint comes): soon while the
# visitor's last message awaits its answer (for at most AWAIT_FOR), else the
# quiet pace. So a widget polls fast for its visitor's answer only, not for
# half a minute after every answer.
POLL_AWAITING, POLL_QUIET = 1, 5
AWAIT_FOR = timedelta(minutes=2)
_SENDERS = {"contact": "visitor", "agent": "agent", "human": "human", "system": "system"}


def website_channel(channel_id):
    """The active website channel `channel_id`, else 404 (any other type too)."""
    channel = Channel.active_by_id(channel_id)
    if channel is None or channel.type != "website":
        raise NotFound(f"No website channel {channel_id}.", code="CHANNEL_NOT_FOUND")
    return channel


# What widget.allow_localhost lets in (development): a page served from this
# machine, on any port.
LOCAL_ORIGIN = re.compile(r"^http://(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$")
LOCAL_ANCESTORS = ("http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*")


def check_origin(channel, origin, own_origins, allow_localhost=False):
    """A browser's Origin must be one of the channel's allowed_origins, or the
    service's own (the hosted page), or with `allow_localhost` a page on this
    machine. No Origin at all is a same-origin GET or a program, which could
    send any Origin it liked: CORS protects visitors' browsers, not the API
    from programs (the rate limits do that)."""
    if origin is None or origin.lower() in own_origins:
        return
    if allow_localhost and LOCAL_ORIGIN.match(origin.lower()):
        return
    if origin.lower() not in channel.settings.get("allowed_origins", []):
        raise Forbidden(
            f"Origin {origin} may not use the widget of channel {channel.id}: add {origin} "
            "to the channel's allowed sites (the inbox: Channels, this channel, Allowed "
            "sites; or PATCH /v1/channels/{id} with settings.allowed_origins). For "
            "development on localhost, widget.allow_localhost = true in the configuration.",
            code="ORIGIN_NOT_ALLOWED",
        )


def frame_ancestors(channel, allow_localhost=False):
    """Who may frame the hosted page: the allowed origins (and this machine's
    pages, with `allow_localhost`)."""
    local = LOCAL_ANCESTORS if allow_localhost else ()
    return ["'self'", *channel.settings.get("allowed_origins", []), *local]


def own_origin(url):
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def public_config(channel):
    """What the widget draws: no secret, nothing of the workspace."""
    settings = channel.settings
    names = ("greeting", "primary_color", "background_color", "text_color", "launcher_text")
    return {
        "title": settings.get("title", channel.name),
        **{name: settings.get(name) for name in names},
        "position": settings.get("position", "bottom-right"),
        "require_name": settings.get("require_name", False),
        "require_email": settings.get("require_email", False),
    }


def start(channel, token=None, user_id=None, user_hash=None):
    """A visitor's token (kept, or a new one; a verified user's when the
    site signed their id) and what the widget needs to draw itself."""
    if user_id is not None or user_hash is not None:
        token = identity.verified_token(channel.settings, user_id, user_hash)
    elif token is not None:
        identity.visitor_of(channel.settings, token)  # 401 when it is not one
    else:
        token = identity.new_token()
    return {"visitor_token": token, "config": public_config(channel)}


def visitor(channel, token):
    return identity.visitor_of(channel.settings, token)


def is_new(channel, visitor):
    """Whether the visitor's next message makes them a contact (they have
    none yet): what the per-address bound on new visitors counts."""
    return Contact.by_identity(channel.workspace_id, "website", visitor.identity) is None


def contact_id(channel, visitor):
    """The id of the visitor's contact, None until their first message."""
    contact = Contact.by_identity(channel.workspace_id, "website", visitor.identity)
    return None if contact is None else contact.id


def visitor_identities(contact_id):
    """The widget visitors a contact is (usually one; none for a contact of
    another network)."""
    return ContactIdentity.external_ids(contact_id, "website")


def post_message(channel, visitor, body, max_chars, now=None):
    """The visitor's message, stored by the common inbound path (contact,
    conversation, message.received, the agent's reply), once per
    client_message_id however often the widget retries."""
    client_id = _client_message_id(body.get("client_message_id"))
    name, email = _who(channel.settings, body)
    external_id = f"w:{visitor.key}:{client_id}"
    repeated = Message.by_external_id(channel.id, external_id) if "choice" in body else None
    if repeated is not None:  # a retried press: its question may be answered by now
        return render(repeated, visitor)
    pressed = _pressed(channel, visitor, body, now)
    text = pressed["text"] if pressed else _text(body.get("text"), max_chars)
    metadata = {"visitor": {"email": email}} if email and not visitor.verified_user else {}
    if pressed:  # where the clarification reader looks, as for Telegram's presses
        metadata["button"] = pressed
    message = InboundMessage(
        external_id=external_id,
        sender_id=visitor.identity,
        type="button" if pressed else "text",
        text=text,
        sender_name=name,
        # Only a verified user's e-mail may find an existing contact: anyone
        # can type anyone's address, and would then read their chat.
        sender_email=email if visitor.verified_user else None,
        metadata=metadata,
    )
    stored = hand_up(channel, message, now).message
    return render(stored, visitor)


def _pressed(channel, visitor, body, now):
    """The button the visitor pressed (`choice`: its data), or None when they
    wrote; it must be one the agent's pending question in their own
    conversation offers, and it is the message's text."""
    choice = body.get("choice")
    if choice is None:
        return None
    if body.get("text") is not None:
        raise ValidationError("text", "leave it out when sending a choice (the button is the text)")
    conversation = _conversation(channel, visitor) if isinstance(choice, str) else None
    conversation_id = conversation.id if conversation is not None else None
    button = Clarification.offered_button(conversation_id, choice, now or utcnow())
    if button is None:
        reason = "must be the data of a button the agent's open question offers"
        raise ValidationError("choice", reason)
    return button


def changes(channel, visitor, since=None, seen=None, now=None):
    """What changed in the visitor's conversation after `since`, or None
    when it is what the widget has already seen (its tag is `seen`): the
    cheap answer most polls get; with either, the seconds until the widget
    should ask again. Replies the visitor now receives become `delivered`
    (message.delivered)."""
    since = _parsed_since(since)
    rows, more = _visible(channel, visitor, since)
    poll_after = _poll_after(rows, now)
    if seen is not None and not more and _tag(rows) == seen:
        return None, poll_after
    page_end = rows[-1].updated_at if more else None  # read before delivery moves it
    rows = [_delivered(channel, row, now) for row in rows]
    cursor = page_end or _next_since_time(rows, since)
    changed = {
        "messages": [render(row, visitor) for row in rows],
        "since": None if cursor == datetime.min else cursor.isoformat(),
        "tag": _tag([row for row in rows if row.updated_at > cursor]),
    }
    return changed, poll_after


def unchanged(channel, visitor, since, seen):
    """The seconds until the widget should ask again when `changes` would
    answer None, else None: found without writing anything (the fast path
    of api.widget asks before Flask does)."""
    rows, more = _visible(channel, visitor, _parsed_since(since))
    return _poll_after(rows) if not more and _tag(rows) == seen else None


def mark_read(channel, visitor, message_id, now=None):
    """The visitor read up to `message_id` (one of their conversation's)."""
    conversation = _conversation(channel, visitor)
    message = Message.get_or_none(Message.id == message_id) if isinstance(message_id, str) else None
    if conversation is None or message is None or message.conversation_id != conversation.id:
        raise NotFound(f"No message {message_id} in your conversation.", code="MESSAGE_NOT_FOUND")
    unread = Message.unread_by_visitor(conversation.id, message.created_at)
    for external_id in unread:
        hand_up(channel, StatusUpdate(external_id, "read"), now)
    return {"read": len(unread)}


def render(message, visitor):
    """A message as the visitor sees it: what was said, by whom, when, and
    the buttons an agent's question offers (the visitor's press: `choice`)."""
    deleted = message.deleted_at is not None
    prefix = f"w:{visitor.key}:"
    external_id = message.external_id or ""
    return {
        "id": message.id,
        "client_message_id": external_id[len(prefix) :] if external_id.startswith(prefix) else None,
        "from": _SENDERS.get(message.sender_type, "system"),
        "type": message.type,
        "text": None if deleted else message.text,
        "caption": None if deleted else message.caption,
        "media_url": None if deleted else message.media_url,
        "status": message.status,
        "deleted": deleted,
        "buttons": None if deleted else _buttons(message),
        "created_at": formats.utc_timestamp(message.created_at),
    }


def _buttons(message):
    """An agent's message's buttons, only their text and data (None without)."""
    given = (message.metadata or {}).get("buttons") if message.sender_type == "agent" else None
    if not isinstance(given, list):
        return None
    found = [
        {"text": button["text"], "data": button["data"]}
        for button in given
        if isinstance(button, dict)
        and isinstance(button.get("text"), str)
        and isinstance(button.get("data"), str)
    ]
    return found or None


def _visible(channel, visitor, since):
    """A page of what changed after `since`, and whether more follows: then
    the widget cannot have seen all of it, whatever its tag says (the tag
    is of one page at most, read when nothing followed it)."""
    conversation = _conversation(channel, visitor)
    return ([], False) if conversation is None else _page(conversation.id, since)


def _page(conversation_id, since):
    """The PAGE rows changed first after `since` (with any more changed at
    the last one's moment), and whether rows follow them. A page never
    splits a moment, so a cursor on its last moment leaves nothing out: a
    time is all the cursor has. One row more than the page is read to know
    whether any follow (more, only while those read share that moment)."""
    limit = PAGE + 1
    rows = Message.visible_since(conversation_id, since, limit)
    while len(rows) == limit and rows[-1].updated_at == rows[PAGE - 1].updated_at:
        limit *= 2
        rows = Message.visible_since(conversation_id, since, limit)
    if len(rows) <= PAGE:
        return rows, False
    page = [row for row in rows if row.updated_at <= rows[PAGE - 1].updated_at]
    return page, len(rows) > len(page)


def _poll_after(rows, now=None):
    """POLL_AWAITING while the newest message is the visitor's and recent."""
    newest = max(rows, key=lambda row: (row.created_at, row.id), default=None)
    if newest is None or newest.sender_type != "contact":
        return POLL_QUIET
    return POLL_AWAITING if (now or utcnow()) - newest.created_at < AWAIT_FOR else POLL_QUIET


def _conversation(channel, visitor):
    contact = Contact.by_identity(channel.workspace_id, "website", visitor.identity)
    if contact is None:
        return None
    return Conversation.current_for(channel.workspace_id, contact.id, channel.id)


def _delivered(channel, message, now):
    if message.direction != "outbound" or message.status != "sent":
        return message
    return hand_up(channel, StatusUpdate(message.external_id, "delivered"), now) or message


def _next_since_time(rows, since):
    """The next poll reads from LAG before the newest change seen. (After a
    page with more behind it, `changes` reads on from the page's last
    moment instead: stepping back LAG read the same page again whenever all
    of it changed within LAG, and the widget never got past it. A reply
    committing late with a time behind that moment is then missed: the
    price of a burst of more than a page, against losing all after it.)"""
    newest = max((row.updated_at for row in rows), default=None)
    start = since or datetime.min
    return start if newest is None else max(start, newest - LAG)


def _parsed_since(since):
    if since is None:
        return None
    try:
        return datetime.fromisoformat(since).replace(tzinfo=None)
    except ValueError:
        raise ValidationError("since", "must be the `since` a previous answer gave") from None


def _tag(rows):
    """What the widget has of these rows: their ids, statuses and times."""
    seen = "|".join(f"{row.id}:{row.status}:{row.updated_at.isoformat()}" for row in rows)
    return hashlib.sha256(seen.encode()).hexdigest()[:24]


def _text(value, max_chars):
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("text", "must be a non-empty string")
    if len(value) > max_chars:
        raise ValidationError(
            "text", f"must be at most {max_chars} characters", code="MESSAGE_TOO_LONG"
        )
    return value


def _client_message_id(value):
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or not value.isascii():
        raise ValidationError("client_message_id", "must be 1 to 64 ASCII characters")
    return value


def _who(settings, body):
    """The visitor's name and e-mail, required when the channel says so."""
    name, email = body.get("name"), body.get("email")
    if name is not None:
        name = _name(name)
    if email is not None:
        email = formats.email(email, "email")
    for field, value in (("name", name), ("email", email)):
        if settings.get(f"require_{field}") and not value:
            raise ValidationError(field, "this channel asks for it before chatting")
    return name, email


def _name(value):
    """The contact's name the visitor typed, refused as the contacts API
    refuses it (formats.name_problem: line breaks, tabs, other controls),
    so the widget stores no name the API would not."""
    name = formats.text(200)(value, "name")
    problem = formats.name_problem(name)
    if problem:
        raise ValidationError("name", problem)
    return name.strip()
