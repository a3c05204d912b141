"""The agent answers: reply jobs, from the customer's message to the reply.

1. `schedule_reply` runs inside receive_inbound's transaction: it notes when
   the customer wrote and, when the conversation is open with an active
   agent, writes a pending reply job due REPLIES_DEBOUNCE_SECONDS later (or
   pushes back the conversation's pending one: quick messages get one reply).
2. `run_due_replies` (every REPLIES_POLL_SECONDS) claims due jobs with a
   lease and answers them in a small thread pool, outside any transaction:
   silence when nothing should be answered; handoff when the plan's credits
   are used up; transfer rules, handoff keywords and intentions
   (services.routing) before the provider; then the provider
   (replies.providers) with the prompt (replies.engine).
3. The outcome is stored in ONE transaction that also finishes the job, and
   only while the job is still this process's claim: the greeting (first
   reply of a conversation), the reply split at the channel's size limit,
   credits, the customer message's notes, handoff. The send job takes the
   queued messages; this job also runs one send right away.

A provider failure is retried after REPLIES_RETRY_SCHEDULE; after the last
try the fallback text is sent (and the conversation handed off when the
agent's settings say so). A crash leaves the job leased; it is claimed again
when the lease expires, so a customer's message always ends with a reply, a
fallback or a handoff.
"""

import logging
import uuid
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta

from flask import current_app

from .. import scheduler
from ..channels import senders
from ..db import database, transaction
from ..models import Agent, Channel, Conversation, Message, ReplyJob, ReplyState, fastsql
from ..models.base import utcnow
from ..models.replies import FINISHED
from ..replies import engine, texts
from ..replies.providers import ProviderError, Run, provider_for
from . import agents, conversations, credits, routing, sending
from .messages import insert_message

log = logging.getLogger("agent_platform.replies")

# Characters one message may carry, by channel type, when the channel's
# sender does not say (a sender may set `max_text_length`).
CHANNEL_TEXT_LIMITS = {"whatsapp": 4096, "telegram": 4096, "website": 4096, "email": 100_000}
MAX_PENDING = 20  # customer messages one reply looks at
MAX_TRANSFERS = 3  # agent-to-agent transfers one customer turn may cause


# --- 1. scheduling (inside receive_inbound's transaction) -----------------------


def schedule_reply(conversation, message, now):
    """Note the customer's message and schedule (or push back) the reply."""
    fastsql.execute(
        'INSERT INTO "reply_state" ("conversation_id", "last_customer_at", "updated_at") '
        'VALUES (?, ?, ?) ON CONFLICT ("conversation_id") DO UPDATE SET '
        '"last_customer_at" = excluded."last_customer_at", "updated_at" = excluded."updated_at"',
        conversation.id,
        now,
        now,
    )
    if conversation.status != "open" or not _agent_answers(conversation.agent_id):
        return None
    due = now + timedelta(seconds=current_app.config["REPLIES_DEBOUNCE_SECONDS"])
    job = ReplyJob.pending_for(conversation.id)
    if job is not None:
        fastsql.execute(
            'UPDATE "reply_job" SET "due_at" = ?, "message_id" = ?, "updated_at" = ? '
            'WHERE "id" = ?',
            max(due, job.due_at),
            message.id,
            now,
            job.id,
        )
        return job
    return _new_job(conversation, message.id, due, created_at=message.created_at)


def _agent_answers(agent_id):
    if not agent_id:
        return False
    sql = 'SELECT 1 FROM "agent" WHERE "id" = ? AND "is_active" = 1 AND "deleted_at" IS NULL'
    return fastsql.scalar(sql, agent_id) is not None


def _new_job(conversation, message_id, due, created_at, transfers=0):
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


# --- 2. the job -----------------------------------------------------------------------


@scheduler.job("REPLIES_POLL_SECONDS")
def run_due_replies(now=None):
    """Answer due reply jobs, REPLIES_CONCURRENCY at a time, claiming more as
    workers free up; returns how many were claimed when none is left due."""
    config = current_app.config
    app = current_app._get_current_object()
    concurrency, lease = config["REPLIES_CONCURRENCY"], config["REPLIES_LEASE_SECONDS"]
    total = 0
    with ThreadPoolExecutor(concurrency, thread_name_prefix="replies") as pool:
        running = set()
        while True:
            free = min(concurrency - len(running), config["REPLIES_BATCH"])
            claimed = claim(now, free, lease) if free > 0 else []
            total += len(claimed)
            running.update(pool.submit(_in_app, app, job, now) for job in claimed)
            if not running:
                return total
            _, running = wait(running, return_when=FIRST_COMPLETED)


def claim(now, batch, lease_seconds):
    """Give due jobs (and expired leases) a lease and a claim token."""
    moment = now or utcnow()
    if not ReplyJob.claimable(moment, 1):
        return []  # the usual case: no write lock taken for nothing
    with transaction():
        jobs = ReplyJob.claimable(moment, batch)
        for job in jobs:
            job.status, job.claim_token = "running", str(uuid.uuid4())
            job.lease_until = moment + timedelta(seconds=lease_seconds)
            job.attempts += 1
            fastsql.execute(
                'UPDATE "reply_job" SET "status" = ?, "claim_token" = ?, "lease_until" = ?, '
                '"attempts" = ?, "updated_at" = ? WHERE "id" = ?',
                job.status,
                job.claim_token,
                job.lease_until,
                job.attempts,
                moment,
                job.id,
            )
        return jobs


def _in_app(app, job, now):
    with app.app_context():
        try:
            _answer_safely(job, now)
        finally:
            database.close()  # this pool thread's connection


def _answer_safely(job, now):
    try:
        answer(job, now)
    except Exception as error:  # a bug must not leave the customer unanswered
        log.exception("reply job %s failed", job.id)
        _failed_try(job, f"internal error: {type(error).__name__}", now, retryable=True)


@dataclass
class Turn:
    """One claimed job with what it answers."""

    job: ReplyJob
    conversation: Conversation
    agent: Agent | None
    channel: Channel | None
    settings: dict
    pending: list
    now: object
    notes: dict = field(default_factory=dict)  # written on the customer's last message

    @property
    def customer_text(self):
        return "\n".join(filter(None, (engine.message_text(m) for m in self.pending)))

    @property
    def language(self):
        return self.agent.language if self.agent else "en"


def answer(job, now=None):
    """Answer one claimed job (see the module docstring for the order)."""
    turn = load_turn(job, now or utcnow())
    reason = silence_reason(turn)
    if reason:
        return _finish(turn, "skipped", {"reason": reason})
    if _credits_depleted(turn):
        return _route(turn, "handoff", None, None, {"reason": "credits depleted"})
    text = turn.customer_text
    intention = routing.match_intention(turn.agent, text, turn.settings)
    if intention is not None:
        turn.notes["intention"] = intention.note()
    rule = routing.match_transfer_rule(turn.agent.id, text, intention)
    if rule is not None:
        via = {"transfer_rule_id": rule.id}
        return _route(turn, rule.action, rule.target_agent_id, rule.message, via)
    keyword = routing.handoff_keyword(turn.settings.get("handoff_keywords"), text)
    if keyword is not None:
        message = texts.setting_or_built_in(
            turn.settings, "handoff_message", turn.language, "handoff"
        )
        return _route(turn, "handoff", None, message, {"handoff_keyword": keyword})
    if intention is not None:
        done = _intention_action(turn, intention)
        if done:
            return done
    return _ask_provider(turn)


def load_turn(job, now):
    conversation = _by_id(Conversation, job.conversation_id)
    agent = conversation and _by_id(Agent, conversation.agent_id)
    channel = conversation and _by_id(Channel, conversation.channel_id)
    settings = agents.settings_of(agent) if agent else {}
    pending = _pending(job) if conversation else []
    return Turn(job, conversation, agent, channel, settings, pending, now)


def _by_id(model, object_id):
    """One row by id in plain SQL (the per-reply path: peewee's query
    building costs more than SQLite's work here)."""
    if object_id is None:
        return None
    table = model._meta.table_name
    return fastsql.fetch_one(model, f'SELECT * FROM "{table}" WHERE "id" = ?', object_id)


def _pending(job):
    """The customer's messages this job answers: those since it was created,
    after the last one a finished job answered (newest MAX_PENDING)."""
    state = ReplyState.of(job.conversation_id)
    since = job.created_at
    if state and state.answered_through and state.answered_through >= since:
        since = state.answered_through + timedelta(microseconds=1)
    sql = (
        'SELECT * FROM "message" WHERE "conversation_id" = ? AND "created_at" >= ? '
        """AND "direction" = 'inbound' AND "deleted_at" IS NULL """
        'ORDER BY "created_at" DESC, "id" DESC LIMIT ?'
    )
    return list(reversed(fastsql.fetch_all(Message, sql, job.conversation_id, since, MAX_PENDING)))


def silence_reason(turn):
    """Why the agent must not answer this turn, or None."""
    conversation = turn.conversation
    if conversation is None:
        return "the conversation was deleted"
    if conversation.status != "open":
        return f"the conversation is {conversation.status}"
    if turn.agent is None or turn.agent.deleted_at is not None or not turn.agent.is_active:
        return "the conversation has no active agent"
    if turn.channel is None or not turn.channel.is_active:
        return "the channel is not active"
    if not turn.pending:
        return "nothing new to answer"
    sql = (
        """SELECT 1 FROM "message" WHERE "conversation_id" = ? AND "direction" = 'outbound' """
        """AND "sender_type" = 'human' AND "created_at" > ? LIMIT 1"""
    )
    if fastsql.scalar(sql, conversation.id, turn.pending[-1].created_at):
        return "a human operator answered"
    return None


def _credits_depleted(turn):
    balance = credits.balance(turn.conversation.workspace_id, turn.now)
    return balance is not None and balance["remaining_credits"] <= 0


def _intention_action(turn, intention):
    """Do a matched intention's action; a result ends the turn, None goes on
    to the provider (webhook and tag actions only add to what happens)."""
    row = intention.intention
    if row.action == "reply":
        return _deliver(turn, [row.reply_text], "replied", {"intention_id": row.id})
    if row.action == "transfer":
        action = "transfer" if row.target_agent_id else "handoff"
        return _route(turn, action, row.target_agent_id, None, {"intention_id": row.id})
    if row.action == "webhook":
        turn.notes["intention"]["webhook"] = routing.call_intention_url(row, turn)
    elif row.action == "tag":
        turn.notes["intention"]["tag"] = routing.add_lead_tag(turn.conversation, row.tag, turn.now)
    return None


def _ask_provider(turn):
    provider = provider_for(turn.settings)
    prompt = engine.build_prompt(
        turn.agent, turn.settings, turn.conversation.id, turn.customer_text,
        with_tools=provider.name != "knowledge",
    )  # fmt: skip
    run = Run(turn.settings, current_app.config, heartbeat=lambda: _renew(turn))
    try:
        reply = provider.generate(prompt, run)
    except ProviderError as error:
        return _failed_try(turn.job, str(error), turn.now, error.retryable, turn)
    record = {"provider": provider.name, "model": reply.model, **reply.detail}
    if reply.usage:
        record["usage"] = reply.usage
    if reply.tool_calls:
        record["tool_calls"] = reply.tool_calls
    if reply.kind == "small_talk":
        line = texts.small_talk_reply(turn.customer_text, turn.language)
        return _deliver(turn, [line], "replied", record, small_talk=True)
    if reply.kind != "answer":
        return _fallback(turn, record, failed=False)
    parts = [texts.shorten(reply.text, turn.settings["max_reply_length"])]
    return _deliver(turn, parts, "replied", record, charge=_credits_for(reply))


def _credits_for(reply):
    config = current_app.config
    per_1k = config.get("CREDITS_PER_1K_TOKENS")
    tokens = (reply.usage or {}).get("total_tokens")
    if per_1k is not None and tokens:
        return round(tokens * per_1k / 1000, 6)
    return config["CREDITS_PER_REPLY"]


def _renew(turn):
    lease = timedelta(seconds=current_app.config["REPLIES_LEASE_SECONDS"])
    with transaction():
        fastsql.execute(
            'UPDATE "reply_job" SET "lease_until" = ? WHERE "id" = ? AND "claim_token" = ?',
            utcnow() + lease if turn.now is None else turn.now + lease,
            turn.job.id,
            turn.job.claim_token,
        )


def _failed_try(job, error, now, retryable, turn=None):
    """Try again later, or after the last try send the fallback."""
    now = now or utcnow()
    schedule = current_app.config["REPLIES_RETRY_SCHEDULE"]
    if retryable and job.attempts <= len(schedule):
        delay = timedelta(seconds=schedule[job.attempts - 1])
        with transaction():
            fastsql.execute(
                'UPDATE "reply_job" SET "status" = ?, "due_at" = ?, "lease_until" = NULL, '
                '"claim_token" = NULL, "last_error" = ?, "updated_at" = ? '
                'WHERE "id" = ? AND "claim_token" = ?',
                "pending",
                now + delay,
                error,
                now,
                job.id,
                job.claim_token,
            )
        return "retry"
    job.last_error = error
    turn = turn or load_turn(job, now)
    if silence_reason(turn):
        return _finish(turn, "skipped", {"reason": silence_reason(turn), "error": error})
    return _fallback(turn, {"error": error}, failed=True)


# --- 3. outcomes: each in one transaction with the end of the job ---------------------


def _fallback(turn, record, failed):
    text = texts.setting_or_built_in(turn.settings, "fallback_message", turn.language, "fallback")
    handoff = bool(turn.settings.get("handoff_on_fallback", True))
    return _deliver(turn, [text], "fallback", record, handoff=handoff, failed=failed)


def _deliver(turn, parts, outcome, record, handoff=False, failed=False, charge=0, small_talk=False):
    """Store the agent's messages (greeting first on a new conversation),
    credits and notes, maybe hand off, and finish the job - all or nothing."""
    with transaction():
        if not _still_ours(turn):
            return "lost"
        greeting = _greeting(turn)
        if greeting and small_talk:
            parts = []  # the greeting answers a hello
        stored = _store(turn, ([greeting] if greeting else []), parts, record)
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
        _finish(turn, outcome, detail, failed=failed, answered=True)
    _send_now(turn.now)
    return outcome


def _route(turn, action, target_agent_id, message, via):
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
                _new_job(
                    turn.conversation,
                    turn.job.message_id,
                    turn.now,
                    created_at=turn.job.created_at,
                    transfers=turn.job.transfers + 1,
                )
                _finish(turn, "transferred", detail, answered=False)
                return "transferred"
        conversations.move(turn.conversation, "handoff", turn.now)
        _finish(turn, "handoff", detail, answered=True)
    if stored:
        _send_now(turn.now)
    return "handoff"


def _still_ours(turn):
    """Inside the transaction: the job is still our claim and the
    conversation still open with this agent; else finish it unanswered."""
    job = _by_id(ReplyJob, turn.job.id)
    if job is None or job.status != "running" or job.claim_token != turn.job.claim_token:
        return False  # taken over after the lease expired: the new owner answers
    conversation = _by_id(Conversation, turn.conversation.id)
    if conversation is None or conversation.status != "open":
        _finish(turn, "skipped", {"reason": "the conversation changed while answering"})
        return False
    if conversation.agent_id != turn.agent.id:
        _finish(turn, "skipped", {"reason": "the conversation changed agent while answering"})
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


def _store(turn, greetings, parts, record):
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
        pieces.append((text, meta))
    stored = []
    for offset, (text, meta) in enumerate(pieces):
        moment = turn.now + timedelta(microseconds=offset)
        message = insert_message(
            conversation=turn.conversation.id,
            channel=turn.conversation.channel_id,
            contact_id=turn.conversation.contact_id,
            direction="outbound",
            sender_type="agent",
            status="queued",
            type="text",
            text=text,
            metadata={**meta, "reply_job_id": turn.job.id},
            created_at=moment,
            updated_at=moment,
        )
        turn.conversation.touch(moment)
        stored.append(message)
    return stored


def _text_limit(channel):
    sender = senders.get_sender(channel.type)
    limit = getattr(sender, "max_text_length", None)
    return limit or CHANNEL_TEXT_LIMITS.get(channel.type, 4096)


def _finish(turn, outcome, detail, failed=False, answered=False):
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
    return outcome


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


# --- housekeeping and preview ----------------------------------------------------------


@scheduler.job("REPLIES_IDLE_POLL_SECONDS")
def prune_reply_jobs(now=None):
    """Delete finished jobs older than REPLIES_JOB_RETENTION_DAYS."""
    days = current_app.config["REPLIES_JOB_RETENTION_DAYS"]
    cutoff = (now or utcnow()) - timedelta(days=days)
    with transaction():
        query = ReplyJob.delete().where(ReplyJob.status.in_(FINISHED), ReplyJob.due_at < cutoff)
        return query.execute()


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


def jobs_of(conversation_id):
    """The conversation's reply jobs, oldest first (for tests and debugging)."""
    return list(ReplyJob.of_conversation(conversation_id))
