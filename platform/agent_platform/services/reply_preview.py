"""Reply preview: what the engine would give the provider for the next reply."""

from datetime import timedelta

from flask import current_app

from ..models import Message, ReplyJob, ReplyState, fastsql
from ..models.base import utcnow
from ..replies import engine
from ..replies.providers import Run, provider_for
from . import conversations
from .replies import load_turn, silence_reason


def preview(workspace_id, conversation_id, now=None):
    """What the engine would give the provider for the next reply (no model
    is called, no tool run): the reasons it would stay silent, the prompt,
    and the provider's request (or, for `knowledge`, its decision)."""
    conversation = conversations.get_conversation(workspace_id, conversation_id)
    job = ReplyJob.pending_for(conversation.id) or _preview_job(conversation)
    turn = load_turn(job, now or utcnow())
    result = {
        "conversation_id": conversation.id,
        "agent_id": conversation.agent_id,
        "would_answer": silence_reason(turn) is None,
        "silence_reason": silence_reason(turn),
        "provider": None,
        "prompt": None,
        "provider_request": None,
    }
    if turn.agent is None or turn.agent.deleted_at is not None:
        return result
    if not turn.pending:
        turn.pending = _last_customer_message(conversation.id)
    provider = provider_for(turn.settings)
    prompt = engine.build_prompt(
        turn.agent, turn.settings, conversation.id, turn.customer_text,
        with_tools=provider.name != "knowledge",
    )  # fmt: skip
    run = Run(turn.settings, current_app.config)
    result.update(
        provider=provider.name,
        prompt=prompt.as_dict(),
        provider_request=provider.describe(prompt, run),
    )
    return result


def _preview_job(conversation):
    """A stand-in job covering the messages after the last answered one."""
    state = ReplyState.of(conversation.id)
    since = conversation.created_at
    if state and state.answered_through:
        since = state.answered_through + timedelta(microseconds=1)
    return ReplyJob(conversation=conversation.id, created_at=since, message_id="", transfers=0)


def _last_customer_message(conversation_id):
    sql = (
        """SELECT * FROM "message" WHERE "conversation_id" = ? AND "direction" = 'inbound' """
        'AND "deleted_at" IS NULL ORDER BY "created_at" DESC, "id" DESC LIMIT 1'
    )
    return fastsql.fetch_all(Message, sql, conversation_id)
