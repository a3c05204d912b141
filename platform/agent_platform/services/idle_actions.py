"""Idle actions at work: after `minutes` without a customer message in an
open conversation of an active agent, send a message or close it - once per
idle period (the period starts at the customer's last message, noted by
services.replies in `reply_state`; a run is recorded in `idle_action_run`,
whose unique key makes it once even with two processes)."""

from datetime import timedelta

from .. import scheduler
from ..db import transaction
from ..models import Agent, Conversation, IdleAction, IdleActionRun, fastsql
from ..models.base import utcnow
from . import conversations
from .messages import queue_text

IDLE_BATCH = 200  # conversations one idle action handles per run


@scheduler.job("REPLIES_IDLE_POLL_SECONDS")
def run_idle_actions(now=None):
    """Do every idle action that is due, once per conversation's idle period;
    returns how many were done."""
    now = now or utcnow()
    done = 0
    actions = (
        IdleAction.select(IdleAction)
        .join(Agent, on=(IdleAction.agent == Agent.id))
        .where(IdleAction.is_active == True, Agent.is_active == True, Agent.deleted_at.is_null())  # noqa: E712
        .order_by(IdleAction.minutes, IdleAction.created_at)
    )
    for action in actions:
        for conversation_id, idle_since in _idle_conversations(action, now):
            done += _run_idle_action(action, conversation_id, idle_since, now)
    return done


def _idle_conversations(action, now):
    sql = (
        'SELECT c."id", s."last_customer_at" FROM "reply_state" AS s '
        'JOIN "conversation" AS c ON c."id" = s."conversation_id" '
        """WHERE c."agent_id" = ? AND c."status" = 'open' AND s."last_customer_at" <= ? """
        'AND NOT EXISTS (SELECT 1 FROM "idle_action_run" AS r WHERE r."idle_action_id" = ? '
        'AND r."conversation_id" = c."id" AND r."idle_since" = s."last_customer_at") '
        'ORDER BY s."last_customer_at" LIMIT ?'
    )
    threshold = now - timedelta(minutes=action.minutes)
    rows = fastsql.execute(sql, action.agent_id, threshold, action.id, IDLE_BATCH).fetchall()
    return [(row[0], IdleActionRun.idle_since.python_value(row[1])) for row in rows]


def _run_idle_action(action, conversation_id, idle_since, now):
    with transaction():
        conversation = Conversation.get_or_none(Conversation.id == conversation_id)
        if conversation is None or conversation.status != "open":
            return 0
        if conversation.agent_id != action.agent_id:
            return 0
        IdleActionRun.create(
            idle_action=action.id,
            conversation=conversation.id,
            idle_since=idle_since,
            outcome=action.action,
            ran_at=now,
        )
        if action.message:
            _agent_message(conversation, action, now)
        if action.action == "close":
            conversations.move(conversation, "close", now)
    return 1


def _agent_message(conversation, action, now):
    return queue_text(conversation, "agent", action.message, {"idle_action_id": action.id}, now)
