"""What a signed-in person does to a conversation from the inbox: take it
over, reply, send a template, hand it back, assign, transfer, close and
reopen. Each is the service call the API's route makes (the same events and
webhooks), with the person as who acts; and `action_area`, what the
conversation page's action area offers that person."""

import re

from ..channels import adapters
from ..errors import ApiError, ValidationError
from ..models import Agent, Channel
from ..models.base import utcnow
from . import conversations, messages, users

MAX_TEXT = 4096  # as the API's message text
MAX_PARAMETERS, MAX_PARAMETER_CHARS = 50, 1024  # as the API's template
TEMPLATE_NAME = re.compile(r"^[a-z0-9_]{1,512}$")
TEMPLATE_LANGUAGE = re.compile(r"^[a-z]{2,3}(_[A-Z]{2})?$")
WINDOW_CLOSED = "OUTSIDE_SERVICE_WINDOW"
WINDOW_CLOSED_WORDS = (
    "The customer last wrote more than 24 hours ago (or never wrote on this channel), so "
    "WhatsApp accepts no free-form reply now. Send one of the channel's approved templates "
    "instead; once the customer answers, you can write freely again for 24 hours."
)


def in_words(error):
    """An ApiError's message as the inbox shows it to a person."""
    return WINDOW_CLOSED_WORDS if error.code == WINDOW_CLOSED else error.message


def take_over(user, conversation_id):
    return conversations.take_over(user.workspace_id, conversation_id, user.id)


def hand_back(user, conversation_id):
    return conversations.hand_back(user.workspace_id, conversation_id)


def assign(user, conversation_id, assignee_id):
    """To an active colleague of the workspace (a person, never free text),
    or to nobody (empty)."""
    if assignee_id:
        users.active_user(user.workspace_id, assignee_id)
    return conversations.assign(user.workspace_id, conversation_id, assignee_id or None)


def transfer(user, conversation_id, agent_id):
    if not agent_id:
        raise ValidationError("agent_id", "choose the agent to transfer to")
    return conversations.transfer(user.workspace_id, conversation_id, agent_id)


def close(user, conversation_id):
    return conversations.transition(user.workspace_id, conversation_id, "close")


def reopen(user, conversation_id):
    return conversations.transition(user.workspace_id, conversation_id, "reopen")


def reply(user, conversation_id, text):
    """The person's text, queued for the customer's channel with them as its
    author; refused while someone else holds the conversation."""
    text = (text or "").replace("\r\n", "\n")
    if not text.strip():
        raise ValidationError("text", "write the reply first", "MISSING_REQUIRED_FIELD")
    if len(text) > MAX_TEXT:
        raise ValidationError("text", f"a reply has at most {MAX_TEXT} characters")
    values = {"type": "text", "text": text, "sender_type": "human"}
    return _post(user, conversation_id, values)


def send_template(user, conversation_id, name, language, parameters):
    """An approved WhatsApp template (name, language code, the body's
    parameters in order), which may go outside the 24-hour window too."""
    if not TEMPLATE_NAME.match(name or "") or not TEMPLATE_LANGUAGE.match(language or ""):
        raise ValidationError("template", "choose one of the channel's approved templates")
    if len(parameters) > MAX_PARAMETERS or not all(
        1 <= len(text) <= MAX_PARAMETER_CHARS for text in parameters
    ):
        problem = f"at most {MAX_PARAMETERS}, each of 1 to {MAX_PARAMETER_CHARS} characters"
        raise ValidationError("parameters", problem)
    template = {"name": name, "language": language, "parameters": list(parameters)}
    values = {"type": "template", "template": template, "sender_type": "human"}
    return _post(user, conversation_id, values)


def _post(user, conversation_id, values):
    conversation = conversations.get_conversation(user.workspace_id, conversation_id)
    conversations.check_not_held(conversation, user.id)
    posted, _ = messages.post_message(
        user.workspace_id, conversation.id, values, author_user_id=user.id
    )
    return posted


# -- What the action area offers ------------------------------------------------


def action_area(user, view, now=None):
    """For the conversation of `view` (services.inbox's conversation_view)
    and the signed-in `user`: who holds it, the colleagues it may be
    assigned to, the agents it may be transferred to, and, when the user
    holds it, whether the channel takes a free reply now (else the
    templates to send instead)."""
    shown = view["conversation"]
    workspace_id, assigned = user.workspace_id, shown["assigned_to"]
    held = shown["state"] == "handoff" and assigned is not None
    area = {
        "assignee": users.display_name(workspace_id, assigned) if assigned else None,
        "held_by_me": held and assigned == user.id,
        "held_by_other": held and assigned != user.id,
        "colleagues": [{"id": u.id, "name": u.name} for u in users.active_users(workspace_id)],
        "agents": _other_agents(workspace_id, shown["agent"]),
        "reply_refusal": None,
        "templates": [],
        "templates_error": None,
    }
    if area["held_by_me"]:
        area.update(_reply_check(workspace_id, shown["id"], now or utcnow()))
    return area


def _other_agents(workspace_id, current):
    query = Agent.listed(workspace_id, is_active=True).order_by(Agent.name, Agent.id)
    current_id = current and current["id"]
    return [{"id": agent.id, "name": agent.name} for agent in query if agent.id != current_id]


def _reply_check(workspace_id, conversation_id, now):
    """Whether a text would be refused now (WhatsApp's window), in words,
    with the channel's approved templates when that is why."""
    conversation = conversations.get_conversation(workspace_id, conversation_id)
    channel = Channel.get_or_none(
        Channel.id == conversation.channel_id, Channel.workspace == workspace_id
    )
    if channel is None:
        return {}
    try:
        adapters.check_message(channel, conversation.contact_id, "text", now)
    except ApiError as error:
        refused = {"reply_refusal": in_words(error)}
        return {**refused, **_templates(channel)} if error.code == WINDOW_CLOSED else refused
    return {}


def _templates(channel):
    try:
        return {"templates": adapters.approved_templates(channel)}
    except ApiError as error:
        return {"templates_error": error.message}
