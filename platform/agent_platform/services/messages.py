"""Messages through the API: reading a conversation, sending (queued for the
send job, with idempotent POSTs), edits with their history, soft deletes.

The channel adapters' side is in `services.inbound` (receive_inbound) and
`services.receipts` (apply_status), and sending in `services.sending`.
"""

from .. import formats, scheduler
from ..channels import adapters
from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import emit
from ..models import Channel, IdempotencyKey, Message, fastsql
from ..models.base import utcnow
from . import conversations, idempotency
from . import sending as _sending  # noqa: F401  (registers the send job with the API)


def not_found(message_id):
    return NotFound(f"Message {message_id} not found.", code="MESSAGE_NOT_FOUND")


def get_message(workspace_id, message_id):
    return Message.get_in_workspace(workspace_id, message_id, not_found(message_id))


def list_messages(workspace_id, conversation_id, paging):
    conversation = conversations.get_conversation(workspace_id, conversation_id)
    return Message.page(conversation.id, paging)


def render(message):
    return formats.jsonable(message.as_dict())


# -- Writing through the API -------------------------------------------------


def post_message(
    workspace_id,
    conversation_id,
    values,
    idempotency_key=None,
    ttl_hours=24,
    now=None,
    author_user_id=None,
):
    """Queue an outbound message (human or agent) in a conversation.

    `author_user_id` names the workspace user who wrote a human message (the
    inbox's pages pass it; the API has no user to name).

    With `idempotency_key`, the first request's message is returned for any
    repeat within `ttl_hours` (and nothing new is created); the same key with
    another body or conversation is 409 IDEMPOTENCY_KEY_REUSED.
    Returns (message, replayed).
    """
    now = now or utcnow()
    with transaction():
        conversation = conversations.get_conversation(workspace_id, conversation_id)
        if idempotency_key:
            asked = idempotency.fingerprint("create_message", conversation.id, values)
            replayed = idempotency.replay(workspace_id, idempotency_key, asked, now, _message)
            if replayed is not None:
                return replayed, True
        _check_can_send(conversation, values["sender_type"])
        _check_author(values["sender_type"], author_user_id)
        content, metadata = _content(values), _metadata(values)
        _check_reaches(conversation, values, now)
        message = insert_message(
            conversation=conversation.id,
            channel=conversation.channel_id,
            contact_id=conversation.contact_id,
            direction="outbound",
            sender_type=values["sender_type"],
            status="queued",
            reply_to_id=_reply_to(conversation, values.get("reply_to_id")),
            author_user_id=author_user_id,
            **content,
            metadata=metadata,
            created_at=now,
            updated_at=now,
        )
        conversation.touch(now)
        if idempotency_key:
            idempotency.remember(workspace_id, idempotency_key, asked, message.id, now, ttl_hours)
        return message, False


def insert_message(**values):
    """A new message, stored with created_at and updated_at as given.

    Built and inserted by models.fastsql (every received message comes here)."""
    return fastsql.insert(fastsql.new(Message, values))


def queue_text(conversation, sender_type, text, metadata, now):
    """A text message to the conversation's contact, queued for the send job
    (in the caller's transaction); the conversation's activity moves to `now`."""
    message = insert_message(
        conversation=conversation.id,
        channel=conversation.channel_id,
        contact_id=conversation.contact_id,
        direction="outbound",
        sender_type=sender_type,
        status="queued",
        type="text",
        text=text,
        metadata=metadata,
        created_at=now,
        updated_at=now,
    )
    conversation.touch(now)
    return message


def _message(message_id):
    return Message.get_or_none(Message.id == message_id)


def _check_can_send(conversation, sender_type):
    if conversation.status == "closed":
        raise Conflict(
            f"Conversation {conversation.id} is closed; reopen it before writing.",
            code="CONVERSATION_CLOSED",
        )
    if conversation.status == "handoff" and sender_type == "agent":
        raise Conflict(
            f"Conversation {conversation.id} is in handoff: a human holds it and the agent "
            "is silent until the handoff is completed.",
            code="CONVERSATION_IN_HANDOFF",
        )
    channel = conversation.channel_id and Channel.get_or_none(Channel.id == conversation.channel_id)
    if not channel or not channel.is_active:
        raise Conflict(
            f"Conversation {conversation.id} has no active channel to send through.",
            code="CHANNEL_NOT_ACTIVE",
        )
    refusal = adapters.send_refusal(channel)
    if refusal is not None:
        raise Conflict(refusal, code="CHANNEL_CANNOT_SEND")


def _check_author(sender_type, author_user_id):
    if author_user_id is not None and sender_type != "human":
        raise ValidationError("author_user_id", "only a human's message has a person as author")


def _check_reaches(conversation, values, now):
    """The channel's own rule for this message (WhatsApp's 24-hour window)."""
    channel = Channel.get_by_id(conversation.channel_id)
    adapters.check_message(channel, conversation.contact_id, values.get("type", "text"), now)


def _metadata(values):
    """The caller's metadata; a template message's template is kept in it."""
    metadata = values.get("metadata") or {}
    if values.get("type") == "template":
        if "template" in metadata:
            raise ValidationError("metadata", "`template` is the template's own key here")
        metadata = {**metadata, "template": values["template"]}
    return metadata


def _content(values):
    kind = values.get("type", "text")
    if kind == "template":
        return _template_content(values)
    if values.get("template") is not None:
        raise ValidationError("template", "only template messages have it")
    if kind == "text":
        if not values.get("text"):
            raise ValidationError("text", "required for a text message", "MISSING_REQUIRED_FIELD")
        for name in ("caption", "media_url", "media_mime_type"):
            if values.get(name) is not None:
                raise ValidationError(name, "only media messages have it")
        return {"type": "text", "text": values["text"]}
    if not values.get("media_url"):
        raise ValidationError(
            "media_url", f"required for a {kind} message", "MISSING_REQUIRED_FIELD"
        )
    if values.get("text") is not None:
        raise ValidationError("text", f"a {kind} message has a caption, not text")
    return {
        "type": kind,
        "caption": values.get("caption"),
        "media_url": formats.http_url(values["media_url"], "media_url"),
        "media_mime_type": values.get("media_mime_type"),
    }


def _template_content(values):
    if values.get("template") is None:
        raise ValidationError(
            "template", "required for a template message", "MISSING_REQUIRED_FIELD"
        )
    for name in ("text", "caption", "media_url", "media_mime_type"):
        if values.get(name) is not None:
            raise ValidationError(name, "a template message has its template only")
    return {"type": "template"}


def _reply_to(conversation, reply_to_id):
    if reply_to_id is None:
        return None
    original = Message.get_or_none(
        Message.id == str(reply_to_id), Message.conversation == conversation.id
    )
    if original is None:
        raise ValidationError("reply_to_id", "no such message in this conversation")
    return original.id


def edit_message(workspace_id, message_id, changes, conversation_id=None, now=None):
    """Change the text (or a media message's caption) of an outbound message.

    The previous version goes to `edit_history` with the time it was
    replaced (Message.keep_replaced); `edited_at` is set. The edit is recorded in the platform; a
    message already sent is not changed on the network.
    """
    now = now or utcnow()
    with transaction():
        message = get_message(workspace_id, message_id)
        if conversation_id is not None and message.conversation_id != conversation_id:
            raise not_found(message_id)
        _check_editable(message, changes)
        if all(getattr(message, name) == value for name, value in changes.items()):
            return message
        message.keep_replaced(message.text, message.caption, now)
        for name, value in changes.items():
            setattr(message, name, value)
        message.edited_at = now
        message.updated_at = now
        message.save(keep_updated_at=True)
        return message


def _check_editable(message, changes):
    if message.deleted_at is not None:
        raise Conflict(f"Message {message.id} is deleted.", code="MESSAGE_NOT_EDITABLE")
    if message.direction != "outbound":
        raise Conflict(
            f"Message {message.id} is inbound: what the contact wrote cannot be edited.",
            code="MESSAGE_NOT_EDITABLE",
        )
    if message.type == "template":
        raise Conflict(
            f"Message {message.id} is a template: its text is Meta's, not ours to edit.",
            code="MESSAGE_NOT_EDITABLE",
        )
    if message.type == "text" and "caption" in changes:
        raise ValidationError("caption", "a text message has text, not a caption")
    if message.type != "text" and "text" in changes:
        raise ValidationError("text", f"a {message.type} message has a caption, not text")


def delete_message(workspace_id, message_id, now=None):
    """Soft delete: text, caption, media and edit history are removed; the
    record stays with `deleted_at`. A message still queued is not sent: it
    fails with MESSAGE_DELETED. Deleting twice changes nothing."""
    now = now or utcnow()
    with transaction():
        message = get_message(workspace_id, message_id)
        if message.deleted_at is not None:
            return message
        message.text = message.caption = message.media_url = message.media_mime_type = None
        message.edit_history = []
        message.deleted_at = message.updated_at = now
        if message.status == "queued":
            message.status, message.failed_at = "failed", now
            message.error = {
                "code": "MESSAGE_DELETED",
                "title": "Deleted before it was sent",
                "details": None,
            }
            emit(workspace_id, "message.failed", render(message), now=now)
        message.save(keep_updated_at=True)
        return message


def purge_idempotency_keys(now=None):
    """Forget idempotency keys older than their time to live."""
    with transaction():
        return IdempotencyKey.purge_expired(now)


@scheduler.job("MESSAGES_IDEMPOTENCY_PURGE_SECONDS")
def purge_idempotency_keys_job(now=None):
    return purge_idempotency_keys(now)
