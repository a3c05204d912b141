"""Conversations and their state machine.

    open ──handoff──▶ handoff ──complete──▶ open
    open, handoff ──close──▶ closed ──reopen (or the contact writes)──▶ open

Any other move is 409 INVALID_STATE_TRANSITION naming the current state.
Assignment (to a human operator) and transfer (to another agent) are not
state changes: they are allowed in every state.

A person takes a conversation over (take_over: handoff, assigned to them)
and hands it back (hand_back: open again, assigned to nobody); a handoff
assigned to someone is held by them, and another's take-over is 409
CONVERSATION_HELD naming who holds it.
"""

from peewee import SQL, fn

from .. import formats
from ..db import transaction
from ..errors import Conflict, NotFound
from ..events import emit
from ..long_statements import long_statements
from ..models import Conversation, Message, fastsql
from ..models.base import utcnow
from ..models.conversations import ACTIVE_STATUSES
from ..models.pagination import paginate
from . import channels, contacts, users

# action: (states it applies to, state it leads to, event it raises)
TRANSITIONS = {
    "close": (("open", "handoff"), "closed", "conversation.closed"),
    "reopen": (("closed",), "open", "conversation.reopened"),
    "handoff": (("open",), "handoff", "agent.handoff_started"),
    "complete_handoff": (("handoff",), "open", "agent.handoff_completed"),
}
VERBS = {
    "close": "close",
    "reopen": "reopen",
    "handoff": "hand off",
    "complete_handoff": "complete the handoff of",
}


def not_found(conversation_id):
    return NotFound(f"Conversation {conversation_id} not found.", code="CONVERSATION_NOT_FOUND")


def get_conversation(workspace_id, conversation_id):
    return Conversation.get_in_workspace(workspace_id, conversation_id, not_found(conversation_id))


def list_conversations(
    workspace_id,
    paging,
    status=None,
    agent_id=None,
    channel_id=None,
    contact_id=None,
    assigned_to=None,
    updated_since=None,
    q=None,
):
    query = _filtered(
        Conversation.in_workspace(workspace_id), status, agent_id, channel_id, assigned_to
    )
    if contact_id:
        query = query.where(Conversation.contact == str(contact_id))
    if updated_since:
        query = query.where(Conversation.updated_at >= updated_since)
    if q:
        query = query.where(
            fn.EXISTS(
                Message.select(SQL("1")).where(
                    Message.conversation == Conversation.id, Message.text.contains(q)
                )
            )
        )
    with long_statements(q):  # a search reads every message of the workspace
        return paginate(query, Conversation, paging)


def list_chats(workspace_id, paging, status=None, agent_id=None, channel_id=None, assigned_to=None):
    """Open and handoff conversations, most recent activity first."""
    statuses = [status] if status else list(ACTIVE_STATUSES)
    query = Conversation.in_workspace(workspace_id).where(Conversation.status.in_(statuses))
    return paginate(_filtered(query, None, agent_id, channel_id, assigned_to), Conversation, paging)


def _filtered(query, status, agent_id, channel_id, assigned_to):
    if status:
        query = query.where(Conversation.status == status)
    if agent_id:
        query = query.where(Conversation.agent == str(agent_id))
    if channel_id:
        query = query.where(Conversation.channel == str(channel_id))
    if assigned_to:
        query = query.where(Conversation.assigned_to == users.canonical_assignee(assigned_to))
    return query


def create_conversation(workspace_id, values, now=None):
    """Start a conversation with a contact on a channel; the agent is the one
    given, else the channel's. One open or handoff conversation per contact
    and channel: a second is 409 CONVERSATION_EXISTS."""
    now = now or utcnow()
    with transaction():
        contact = contacts.get_contact(workspace_id, str(values["contact_id"]))
        channel = channels.get_channel(workspace_id, str(values["channel_id"]))
        agent_id = channel.agent_id
        if values.get("agent_id"):
            agent_id = channels.live_agent(workspace_id, str(values["agent_id"])).id
        current = Conversation.current_for(workspace_id, contact.id, channel.id)
        if current is not None and current.status in ACTIVE_STATUSES:
            raise Conflict(
                f"Contact {contact.id} already has conversation {current.id} "
                f"({current.status}) on channel {channel.id}.",
                code="CONVERSATION_EXISTS",
            )
        return start(workspace_id, contact.id, channel.id, agent_id, now, values.get("assigned_to"))


def start(workspace_id, contact_id, channel_id, agent_id, now, assigned_to=None):
    assigned_to = users.assignee(workspace_id, assigned_to)
    conversation = Conversation(
        workspace=workspace_id,
        contact=contact_id,
        channel=channel_id,
        agent=agent_id,
        assigned_to=assigned_to,
        created_at=now,
        updated_at=now,
    )
    fastsql.insert(conversation)
    emit(workspace_id, "conversation.created", render(conversation), now=now)
    return conversation


def transition(workspace_id, conversation_id, action, now=None, assigned_to=None):
    """Move a conversation by `action` (a key of TRANSITIONS)."""
    assigned_to = users.assignee(workspace_id, assigned_to)  # before anything moves
    with transaction():
        conversation = get_conversation(workspace_id, conversation_id)
        move(conversation, action, now or utcnow())
        if assigned_to is not None:
            _assign(conversation, assigned_to, now or utcnow())
        return conversation


def take_over(workspace_id, conversation_id, assigned_to=None, now=None):
    """A human takes the conversation: an open one moves to handoff (the
    agent falls silent) and, with `assigned_to`, is held by them. A handoff
    is taken by `assigned_to` when it is nobody's or already theirs (then
    nothing changes); another's is 409 CONVERSATION_HELD. Without
    `assigned_to` (an API key names no person) only an open one moves."""
    now = now or utcnow()
    assigned_to = users.assignee(workspace_id, assigned_to)  # compared as stored
    with transaction():
        conversation = get_conversation(workspace_id, conversation_id)
        if conversation.status == "handoff" and assigned_to is not None:
            check_not_held(conversation, assigned_to)
        else:
            move(conversation, "handoff", now)
        if assigned_to is not None:
            _assign(conversation, assigned_to, now)
        return conversation


def check_not_held(conversation, taker):
    """409 CONVERSATION_HELD when a handoff is held by someone but `taker`."""
    holder = conversation.assigned_to
    if conversation.status == "handoff" and holder is not None and holder != taker:
        raise Conflict(
            f"{users.display_name(conversation.workspace_id, holder)} already holds "
            f"conversation {conversation.id}: they can hand it back, or assign it to you.",
            code="CONVERSATION_HELD",
        )


def hand_back(workspace_id, conversation_id, now=None):
    """The handoff completes and nobody stays assigned: the agent answers
    the customer's next message (as complete_handoff, then assign to null)."""
    now = now or utcnow()
    with transaction():
        conversation = get_conversation(workspace_id, conversation_id)
        move(conversation, "complete_handoff", now)
        _assign(conversation, None, now)
        return conversation


def move(conversation, action, now):
    allowed, target, event = TRANSITIONS[action]
    if conversation.status not in allowed:
        raise Conflict(
            f"Cannot {VERBS[action]} conversation {conversation.id}: its state is "
            f"{conversation.status} (allowed from {', '.join(allowed)}).",
            code="INVALID_STATE_TRANSITION",
        )
    conversation.status = target
    if action == "close":
        conversation.closed_at = now
    elif action == "reopen":
        conversation.closed_at = None
    if target == "handoff":
        conversation.handoff_started_at = now
    elif action in ("complete_handoff", "close"):
        conversation.handoff_started_at = None
    conversation.updated_at = now
    conversation.save(keep_updated_at=True)
    emit(conversation.workspace_id, event, render(conversation), now=now)


def assign(workspace_id, conversation_id, assigned_to, now=None):
    """Assign to a named human operator, or to nobody (None)."""
    with transaction():
        conversation = get_conversation(workspace_id, conversation_id)
        _assign(conversation, assigned_to or None, now or utcnow())
        return conversation


def _assign(conversation, assigned_to, now):
    assigned_to = users.assignee(conversation.workspace_id, assigned_to)
    previous = conversation.assigned_to
    if previous == assigned_to:
        return
    conversation.assigned_to = assigned_to
    conversation.updated_at = now
    conversation.save(keep_updated_at=True)
    data = {**render(conversation), "previous_assigned_to": previous}
    emit(conversation.workspace_id, "conversation.assigned", data, now=now)


def transfer(workspace_id, conversation_id, agent_id, now=None):
    """Hand the conversation to another agent of the workspace."""
    now = now or utcnow()
    with transaction():
        conversation = get_conversation(workspace_id, conversation_id)
        agent = channels.live_agent(workspace_id, str(agent_id))
        if conversation.agent_id == agent.id:
            raise Conflict(
                f"Conversation {conversation.id} is already with agent {agent.id}.",
                code="CONVERSATION_ALREADY_WITH_AGENT",
            )
        previous = conversation.agent_id
        conversation.agent = agent.id
        conversation.updated_at = now
        conversation.save(keep_updated_at=True)
        data = {**render(conversation), "previous_agent_id": previous}
        emit(workspace_id, "conversation.transferred", data, now=now)
        emit(workspace_id, "agent.transferred", data, now=now)
        return conversation


def render(conversation):
    return formats.jsonable(conversation.as_dict())
