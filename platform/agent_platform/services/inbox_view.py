"""One conversation as the inbox shows it: the conversation (state, who
holds it), a page of its thread (who wrote each message, its delivery
state, media, the agent's clarifying questions and the customer's choice),
and the contact beside it (services/inbox.py offers it as conversation_view).
"""

from flask import current_app

from .. import formats
from .. import media_files as media
from ..errors import ValidationError
from ..models import Agent, Channel, Contact, Lead
from ..models import inbox as queries
from ..models.base import canonical_uuid, utcnow
from . import conversations

MAX_LIMIT = 200
APPOINTMENTS_SHOWN = 5
AUTHORS = {"contact": "customer", "agent": "agent", "human": "person", "system": "system"}
CHOICE_NONE = "none of these"


def conversation_view(workspace_id, user_id, conversation_id, before=None, limit=50, now=None):
    """{"conversation", "messages" (oldest first), "older_cursor", "contact"};
    `before` is a page's older_cursor (a message id): the page before it.
    Another workspace's conversation is CONVERSATION_NOT_FOUND."""
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError("limit", f"a whole number from 1 to {MAX_LIMIT}")
    now = now or utcnow()
    conversation = conversations.get_conversation(workspace_id, conversation_id)
    found = queries.thread_page(conversation.id, _position(conversation.id, before), limit + 1)
    page = found[:limit]
    asked = queries.clarifications_asked_in(conversation.id, [m.id for m in page])
    return {
        "conversation": _conversation(workspace_id, conversation),
        "messages": [_message(message, asked.get(message.id), now) for message in reversed(page)],
        "older_cursor": page[-1].id if len(found) > limit else None,
        "contact": _contact_panel(workspace_id, conversation, now),
    }


def _position(conversation_id, before):
    if before is None:
        return None
    message_id = canonical_uuid(before)
    position = message_id and queries.message_position(conversation_id, message_id)
    if not position:
        raise ValidationError("before", "not a message of this conversation")
    return position


def _conversation(workspace_id, conversation):
    channel = conversation.channel_id and Channel.get_or_none(
        Channel.id == conversation.channel_id, Channel.workspace == workspace_id
    )
    agent = conversation.agent_id and Agent.get_or_none(
        Agent.id == conversation.agent_id, Agent.workspace == workspace_id
    )
    return formats.jsonable(
        {
            "id": conversation.id,
            "state": conversation.status,
            "needs_human": conversation.status == "handoff",
            "held_by": _holder(conversation),
            "assigned_to": conversation.assigned_to,
            "agent": agent and {"id": agent.id, "name": agent.name},
            "channel": channel and {"id": channel.id, "type": channel.type, "name": channel.name},
            "handoff_started_at": conversation.handoff_started_at,
            "closed_at": conversation.closed_at,
            "last_activity_at": conversation.updated_at,
            "created_at": conversation.created_at,
        }
    )


def _holder(conversation):
    """Who answers now: the agent (open), a person (handoff), nobody (closed)."""
    return {"open": "agent", "handoff": "person"}.get(conversation.status)


def _message(message, clarification, now):
    return formats.jsonable(
        {
            "id": message.id,
            "direction": message.direction,
            "author": _author(message),
            "type": message.type,
            "text": message.text,
            "caption": message.caption,
            "media": _media(message),
            "delivery": _delivery(message),
            "clarification": clarification and _clarification(clarification, now),
            "reply_to_id": message.reply_to_id,
            "created_at": message.created_at,
            "edited_at": message.edited_at,
            "deleted": message.deleted_at is not None,
        }
    )


def _author(message):
    kind = AUTHORS.get(message.sender_type, message.sender_type)
    return {"kind": kind, "user_id": message.author_user_id if kind == "person" else None}


def _delivery(message):
    """The network's state of an outbound message; the reason of a failure."""
    error = message.error or {}
    reason = error.get("title") or error.get("code") if message.status == "failed" else None
    return {
        "status": message.status,
        "reason": reason,
        "error_code": error.get("code") if message.status == "failed" else None,
        "sent_at": message.sent_at,
        "delivered_at": message.delivered_at,
        "read_at": message.read_at,
        "failed_at": message.failed_at,
    }


def _media(message):
    if not message.media_url:
        return None
    metadata = message.metadata or {}
    stored = metadata.get("media") or {}
    return {
        "kind": message.type,
        "mime_type": message.media_mime_type,
        "file_name": metadata.get("filename") or stored.get("filename"),
        "size": stored.get("size"),
        "url": message.media_url,
        "path": _served_path(message.media_url),
    }


def _served_path(url):
    """/media/<name> when the platform serves the file itself, else None."""
    base = f"{current_app.config['SERVER_PUBLIC_URL'].rstrip('/')}/media/"
    name = url[len(base) :] if url.startswith(base) else ""
    return f"/media/{name}" if media.NAME.match(name) else None


def _clarification(clarification, now):
    labels = {choice["training_id"]: choice["label"] for choice in clarification.choices}
    status = clarification.shown_status(now)
    chosen = labels.get(clarification.chosen_training_id) if status == "chosen" else None
    return {
        "status": status,
        "options": [choice["label"] for choice in clarification.choices],
        "choice": CHOICE_NONE if status == "none" else chosen,
        "reply_message_id": clarification.reply_message_id,
    }


def _contact_panel(workspace_id, conversation, now):
    contact = conversation.contact_id and Contact.by_id(conversation.contact_id)
    if not contact or contact.workspace_id != workspace_id:
        return None
    lead = Lead.of_contact(workspace_id, contact.id)
    return formats.jsonable(
        {
            "id": contact.id,
            "name": contact.name,
            "phone": contact.phone,
            "email": contact.email,
            "handles": [identity.as_dict() for identity in contact.identity_rows()],
            "channel_id": conversation.channel_id,
            "custom_fields": _custom_fields(workspace_id, contact),
            "lead": lead and {"id": lead.id, "status": lead.status, "score": lead.score},
            "appointments": {
                "upcoming": _appointments(workspace_id, contact.id, now, True),
                "past": _appointments(workspace_id, contact.id, now, False),
            },
        }
    )


def _custom_fields(workspace_id, contact):
    """The contact's values of the workspace's fields, labelled, in the fields' order."""
    values = contact.custom_fields or {}
    return [
        {"id": field.id, "label": field.name, "type": field.field_type, "value": values[field.id]}
        for field in queries.active_custom_fields(workspace_id)
        if field.id in values
    ]


def _appointments(workspace_id, contact_id, now, upcoming):
    shown = APPOINTMENTS_SHOWN
    found = queries.contact_appointments(workspace_id, contact_id, now, upcoming, shown)
    return [_appointment(appointment) for appointment in found]


def _appointment(appointment):
    return {
        "id": appointment.id,
        "title": appointment.title,
        "status": appointment.status,
        "start_at": appointment.start_at,
        "end_at": appointment.end_at,
        "agent_id": appointment.agent_id,
    }
