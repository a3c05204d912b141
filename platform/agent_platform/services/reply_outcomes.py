"""What a reply job leaves behind, each in ONE transaction with the end of
the job, and only while the job is still this process's claim (a claim taken
over after its lease expired stores nothing): the agent's messages (the
greeting first on a new conversation, the reply split at the channel's size
limit), credits, notes on the customer's message, a handoff or a transfer."""

import logging
from datetime import timedelta

from flask import current_app

from ..channels import adapters
from ..db import transaction
from ..models import Conversation, Message, ReplyJob, fastsql
from ..replies import texts
from . import conversations, credits, routing, scoring, sending
from .messages import queue_text

log = logging.getLogger("agent_platform.replies")

MAX_TRANSFERS = 3  # agent-to-agent transfers one customer turn may cause


def new_job(conversation, message_id, due, created_at, transfers=0):
    job = ReplyJob(
        workspace=conversation.workspace_id,
        conversation=conversation.id,
        message_id=message_id,
        status="pending",
        due_at=due,
        attempts=0,
        transfers=transfers,
        created_at=created_at,
        updated_at=created_at,
    )
    return fastsql.insert(job)


def by_id(model, object_id):
    """One row by id in plain SQL (the per-reply path: peewee's query
    building costs more than SQLite's work here)."""
    if object_id is None:
        return None
    table = model._meta.table_name
    return fastsql.fetch_one(model, f'SELECT * FROM "{table}" WHERE "id" = ?', object_id)


def fallback(turn, record, failed):
    text = texts.setting_or_built_in(turn.settings, "fallback_message", turn.language, "fallback")
    handoff = bool(turn.settings.get("handoff_on_fallback", True))
    record = {**record, "fallback": True}
    return deliver(turn, [text], "fallback", record, handoff=handoff, failed=failed)


def deliver(turn, parts, outcome, record, handoff=False, failed=False, charge=0, small_talk=False,
            last_meta=None, then=None):  # fmt: skip
    """Store the agent's messages (greeting first on a new conversation),
    credits and notes, maybe hand off, and finish the job - all or nothing.
    `last_meta` goes on the last message's metadata (buttons), and
    `then(stored)` runs in the same transaction (what else the reply leaves)."""
    with transaction():
        if not _still_ours(turn):
            return "lost"
        greeting = _greeting(turn)
        if greeting and small_talk:
            parts = []  # the greeting answers a hello
        stored = _store(turn, ([greeting] if greeting else []), parts, record, last_meta)
        if then is not None:
            then(stored)
        if charge:
            credits.record_usage(
                turn.conversation.workspace_id,
                turn.agent.id,
                charge,
                turn.conversation.id,
                turn.now,
            )
        detail = {**record, "message_ids": [m.id for m in stored]}
        if charge:
            detail["credits"] = charge
        if handoff:
            conversations.move(turn.conversation, "handoff", turn.now)
            detail["handoff"] = True
        finish(turn, outcome, detail, failed=failed, answered=True)
    _send_now(turn.now)
    return outcome


def route(turn, action, target_agent_id, message, via):
    """Hand off to a human, or transfer to another agent (whose rules and
    provider then answer the same customer messages)."""
    with transaction():
        if not _still_ours(turn):
            return "lost"
        greeting = _greeting(turn) if message else None
        stored = _store(turn, [greeting] if greeting else [], [message] if message else [], via)
        detail = {**via, "message_ids": [m.id for m in stored]}
        if action == "transfer" and turn.job.transfers < MAX_TRANSFERS:
            moved = routing.transfer(turn.conversation, target_agent_id, turn.now)
            if moved:
                detail["agent_id"] = target_agent_id
                new_job(
                    turn.conversation,
                    turn.job.message_id,
                    turn.now,
                    created_at=turn.job.created_at,
                    transfers=turn.job.transfers + 1,
                )
                finish(turn, "transferred", detail, answered=False)
                return "transferred"
        conversations.move(turn.conversation, "handoff", turn.now)
        finish(turn, "handoff", detail, answered=True)
    if stored:
        _send_now(turn.now)
    return "handoff"


def _still_ours(turn):
    """Inside the transaction: the job is still our claim and the
    conversation still open with this agent; else finish it unanswered."""
    job = by_id(ReplyJob, turn.job.id)
    if job is None or job.status != "running" or job.claim_token != turn.job.claim_token:
        return False  # taken over after the lease expired: the new owner answers
    conversation = by_id(Conversation, turn.conversation.id)
    if conversation is None or conversation.status != "open":
        finish(turn, "skipped", {"reason": "the conversation changed while answering"})
        return False
    if conversation.agent_id != turn.agent.id:
        finish(turn, "skipped", {"reason": "the conversation changed agent while answering"})
        return False
    turn.conversation = conversation
    return True


def _greeting(turn):
    text = (turn.agent.greeting_message or "").strip()
    if not text:
        return None
    sql = (
        """SELECT 1 FROM "message" WHERE "conversation_id" = ? """
        """AND "direction" = 'outbound' LIMIT 1"""
    )
    return None if fastsql.scalar(sql, turn.conversation.id) else text


def _store(turn, greetings, parts, record, last_meta=None):
    """Insert the agent's outbound messages (queued), in order: the greeting,
    then each part split at the channel's size limit. The reply's record
    (provider, decision, usage, tool calls) goes on its first message."""
    limit = _text_limit(turn.channel)
    pieces = [(text, {"greeting": True}) for text in greetings]
    split = [piece for part in parts for piece in texts.split(part, limit)]
    for index, text in enumerate(split):
        meta = {"reply": record} if index == 0 else {}
        if len(split) > 1:
            meta["reply_part"] = [index + 1, len(split)]
        if index == len(split) - 1 and last_meta:
            meta.update(last_meta)
        pieces.append((text, meta))
    stored = []
    for offset, (text, meta) in enumerate(pieces):
        moment = turn.now + timedelta(microseconds=offset)
        metadata = {**meta, "reply_job_id": turn.job.id}
        stored.append(queue_text(turn.conversation, "agent", text, metadata, moment))
    return stored


def _text_limit(channel):
    """Characters one message may carry on the channel, as its type declares."""
    return adapters.channel_type(channel.type).text_limit


def finish(turn, outcome, detail, failed=False, answered=False):
    """Finish the job (inside the caller's transaction when there is one)."""
    with transaction():
        job = turn.job
        fastsql.execute(
            'UPDATE "reply_job" SET "status" = ?, "outcome" = ?, "detail" = ?, "last_error" = ?, '
            '"lease_until" = NULL, "finished_at" = ?, "updated_at" = ? '
            'WHERE "id" = ? AND "claim_token" = ?',
            "failed" if failed else "done",
            outcome,
            ReplyJob.detail.db_value(detail),
            job.last_error,
            turn.now,
            turn.now,
            job.id,
            job.claim_token,
        )
        if answered and turn.pending:
            fastsql.execute(
                'UPDATE "reply_state" SET "answered_through" = ?, "updated_at" = ? '
                'WHERE "conversation_id" = ?',
                turn.pending[-1].created_at,
                turn.now,
                turn.conversation.id,
            )
        if turn.notes and turn.pending:
            last = Message.get_by_id(turn.pending[-1].id)
            last.metadata = {**(last.metadata or {}), **turn.notes}
            last.save(only=[Message.metadata], keep_updated_at=True)
            _score_intention(turn)
    return outcome


def _score_intention(turn):
    """A matched intention is a fact lead scoring counts (issue 20)."""
    matched = turn.notes.get("intention")
    if matched:
        conversation = turn.conversation
        scoring.on_intention(
            conversation.workspace_id, conversation.contact_id, matched["id"], turn.now
        )


def _send_now(now):
    """Send what was queued right away (the send job would within its poll)."""
    config = current_app.config
    try:
        sending.send_queued(
            now,
            batch=config["MESSAGES_SEND_BATCH"],
            lease_seconds=config["MESSAGES_SEND_LEASE_SECONDS"],
            max_attempts=config["MESSAGES_SEND_MAX_ATTEMPTS"],
        )
    except Exception:  # the send job will try again
        log.exception("sending replies at once failed")
