"""The agent's clarifying questions on a conversation (replies.clarifying):
asked when the knowledge provider is unsure, answered by the customer's next
message, listed through the API.

- `ask` stores the question as the agent's reply - with the channel's
  buttons when its type shows them (Telegram, WhatsApp, the website widget),
  else the choices numbered in the text - and the clarification, in the
  reply job's transaction.
- `resolve` reads the customer's next message: a button, "2", or a choice's
  exact words answers with that training's answer ("chosen"); "none of these"
  (button 0, "0", "none") sends the fallback, which hands off when the agent
  says so ("none"); anything else is answered as a new message ("other").
  A question unanswered for EXPIRY is expired and reads nothing.
- A channel that takes presses as plain messages (the widget) checks a
  press against `Clarification.offered_button` before storing it.
"""

from datetime import timedelta

from ..channels import adapters
from ..db import transaction
from ..models import Clarification, Training, fastsql
from ..replies import clarifying, texts
from . import reply_outcomes as outcomes
from .conversations import get_conversation

EXPIRY = timedelta(hours=24)


def ask(turn, record):
    """Send the question with `record["choices"]` and store the clarification."""
    labels = [choice["label"] for choice in record["choices"]]
    shows_buttons = adapters.channel_type(turn.channel.type).buttons
    text = clarifying.question(labels, turn.language, numbered=not shows_buttons)
    meta = clarifying.buttons(labels, turn.language) if shows_buttons else None

    def store(stored):
        asked_about = turn.pending[-1].id
        clarification = Clarification(
            workspace=turn.conversation.workspace_id,
            conversation=turn.conversation.id,
            agent_id=turn.agent.id,
            message_id=stored[-1].id,
            asked_about_id=asked_about,
            choices=record["choices"],
            status="pending",
            expires_at=turn.now + EXPIRY,
            created_at=turn.now,
            updated_at=turn.now,
        )
        fastsql.insert(clarification)

    return outcomes.deliver(turn, [text], "clarified", record, last_meta=meta, then=store)


def resolve(turn):
    """Answer the customer's reply to a pending question; None when there is
    none, or the reply is something else (then answered as a new message)."""
    pending = Clarification.pending_for(turn.conversation.id)
    if pending is None:
        return None
    if pending.expires_at <= turn.now:
        with transaction():
            Clarification.expire(turn.conversation.id, turn.now)
        return None
    last = turn.pending[-1]
    labels = [choice["label"] for choice in pending.choices]
    data = ((last.metadata or {}).get("button") or {}).get("data")
    data = data or ((last.metadata or {}).get("interactive") or {}).get("id")
    number = clarifying.reading(engine_text(last), data, labels)
    if number is None:
        _settle(pending, "other", last, turn.now)
        return None
    via = {"clarification_id": pending.id}
    if number == 0:
        return _none_of_these(turn, pending, last, via)
    chosen = pending.choices[number - 1]["training_id"]
    training = _ready_qa(chosen, turn.agent.id)
    if training is None:  # deleted or changed since: the customer's words decide
        _settle(pending, "other", last, turn.now)
        return None
    record = {"provider": "clarification", "kind": "qa", "training_id": chosen, **via}
    parts = [texts.shorten(training.answer, turn.settings["max_reply_length"])]

    def settle(stored):
        _settle(pending, "chosen", last, turn.now, chosen)

    return outcomes.deliver(turn, parts, "replied", record, then=settle)


def _none_of_these(turn, pending, last, via):
    text = texts.setting_or_built_in(turn.settings, "fallback_message", turn.language, "fallback")
    handoff = bool(turn.settings.get("handoff_on_fallback", True))
    return outcomes.deliver(
        turn, [text], "fallback", {**via, "choice": "none", "fallback": True}, handoff=handoff,
        then=lambda stored: _settle(pending, "none", last, turn.now),
    )  # fmt: skip


def engine_text(message):
    return (message.text or message.caption or "").strip()


def _ready_qa(training_id, agent_id):
    sql = (
        'SELECT * FROM "training" WHERE "id" = ? AND "agent_id" = ? AND "type" = ? AND "status" = ?'
    )
    return fastsql.fetch_one(Training, sql, training_id, agent_id, "qa", "ready")


def _settle(clarification, status, message, now, training_id=None):
    with transaction():
        fastsql.execute(
            'UPDATE "clarification" SET "status" = ?, "chosen_training_id" = ?, '
            '"reply_message_id" = ?, "resolved_at" = ?, "updated_at" = ? '
            'WHERE "id" = ? AND "status" = ?',
            status,
            training_id,
            message.id,
            now,
            now,
            clarification.id,
            "pending",
        )


def list_clarifications(workspace_id, conversation_id):
    """The conversation's clarifying questions, oldest first (404 when the
    conversation is not the workspace's)."""
    conversation = get_conversation(workspace_id, conversation_id)
    return list(Clarification.of_conversation(workspace_id, conversation.id))
