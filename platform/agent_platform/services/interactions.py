"""Interactions: the conversations seen as the team's work items. One
query with combinable filters, and closing (one, or many at once)."""

from peewee import SQL, Value, fn

from .. import formats
from ..db import transaction
from ..errors import ValidationError
from ..long_statements import long_statements
from ..models import Channel, Contact, Conversation, CustomField, Lead, Message, jsonquery
from ..models.base import canonical_uuid, utcnow
from ..models.pagination import Page, paginate
from . import contacts, conversations, users
from .routing import LEAD_TAGS_FIELD

MAX_BULK = 100


def get_interaction(workspace_id, conversation_id):
    conversation = conversations.get_conversation(workspace_id, conversation_id)
    return _decorated(workspace_id, [conversation])[0]


def query_interactions(workspace_id, paging, **filters):
    query = Conversation.in_workspace(workspace_id)
    for name, value in filters.items():
        if value is not None and value != [] and value != {}:
            query = query.where(_CONDITIONS[name](workspace_id, value))
    with long_statements(filters.get("q")):  # every message read
        page = paginate(query, Conversation, paging)
    return Page(_decorated(workspace_id, page.items), page.request, page.total)


def _equal(column):
    return lambda workspace_id, value: column == str(value)


def _channel_type(workspace_id, value):
    typed = Channel.select(Channel.id).where(
        Channel.workspace == workspace_id, Channel.type == value
    )
    return Conversation.channel.in_(typed)


def _lead_status(workspace_id, value):
    leads = Lead.select(Lead.contact).where(Lead.workspace == workspace_id, Lead.status == value)
    return Conversation.contact.in_(leads)


def _handoff(workspace_id, value):
    return (Conversation.status == "handoff") if value else (Conversation.status != "handoff")


def _unread(workspace_id, value):
    """The contact wrote last (conversation.last_direction, kept by a trigger)."""
    inbound = Conversation.last_direction == "inbound"
    return inbound if value else (Conversation.last_direction.is_null() | ~inbound)


def _tags(workspace_id, tags):
    field = CustomField.active_named(workspace_id, LEAD_TAGS_FIELD)
    if field is None:
        return Value(False)  # no contact is tagged yet
    tagged = Contact.select(Contact.id).where(Contact.workspace == workspace_id)
    for tag in tags:
        tagged = tagged.where(jsonquery.array_holds(Contact.custom_fields, field.id, tag))
    return Conversation.contact.in_(tagged)


def _custom_fields(workspace_id, wanted):
    matching = Contact.select(Contact.id).where(Contact.workspace == workspace_id)
    for name, value in wanted.items():
        matching = matching.where(contacts.custom_field_condition(workspace_id, name, value))
    return Conversation.contact.in_(matching)


def _text(workspace_id, text):
    return fn.EXISTS(
        Message.select(SQL("1")).where(
            Message.conversation == Conversation.id, Message.text.contains(text)
        )
    )


_CONDITIONS = {
    "channel_id": _equal(Conversation.channel),
    "channel_type": _channel_type,
    "status": lambda workspace_id, value: Conversation.status == value,
    "agent_id": _equal(Conversation.agent),
    "assigned_to": lambda workspace_id, value: (
        Conversation.assigned_to == users.canonical_assignee(value)
    ),
    "contact_id": _equal(Conversation.contact),
    "lead_status": _lead_status,
    "handoff": _handoff,
    "unread": _unread,
    "tag": _tags,
    "custom_field": _custom_fields,
    "created_from": lambda workspace_id, value: Conversation.created_at >= value,
    "created_to": lambda workspace_id, value: Conversation.created_at < value,
    "active_from": lambda workspace_id, value: Conversation.updated_at >= value,
    "active_to": lambda workspace_id, value: Conversation.updated_at < value,
    "q": _text,
}


def _decorated(workspace_id, items):
    """Each conversation's API form with its lead (or null) and unread."""
    leads = Lead.of_contacts(workspace_id, list({c.contact_id for c in items if c.contact_id}))
    return [_interaction(c, leads.get(c.contact_id)) for c in items]


def _interaction(conversation, lead):
    summary = lead and {"id": lead.id, "status": lead.status, "score": lead.score}
    unread = conversation.last_direction == "inbound"
    return {**formats.jsonable(conversation.as_dict()), "lead": summary, "unread": unread}


def close_interactions(workspace_id, conversation_ids, now=None):
    """Close each conversation that is open or in handoff (conversation.closed
    for each); those closed already and ids not found are reported, not errors."""
    now = now or utcnow()
    if len(set(map(str, conversation_ids))) != len(conversation_ids):
        raise ValidationError("conversation_ids", "must not repeat an id")
    outcome = {"closed": [], "already_closed": [], "not_found": []}
    with transaction():
        for conversation_id in map(str, conversation_ids):
            outcome[_close(workspace_id, conversation_id, now)].append(conversation_id)
    return outcome


def _close(workspace_id, conversation_id, now):
    found = Conversation.get_or_none(
        Conversation.id == canonical_uuid(conversation_id), Conversation.workspace == workspace_id
    )
    if found is None:
        return "not_found"
    if found.status == "closed":
        return "already_closed"
    conversations.move(found, "close", now)
    return "closed"


def close_interaction(workspace_id, conversation_id, now=None):
    conversations.transition(workspace_id, conversation_id, "close", now)
    return get_interaction(workspace_id, conversation_id)
