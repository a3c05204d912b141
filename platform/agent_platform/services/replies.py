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
   (replies.providers) with the prompt (replies.engine). A customer's
   answer to the agent's clarifying question is read first
   (services.clarifications); a provider unsure between trainings asks one.
3. The outcome is stored in ONE transaction that also finishes the job, and
   only while the job is still this process's claim (services.reply_outcomes):
   the greeting (first reply of a conversation), the reply split at the
   channel's size limit, credits, the customer message's notes, handoff. The
   send job takes the queued messages; this job also runs one send right away.

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
from ..db import claiming, database, transaction
from ..models import Agent, Channel, Conversation, Message, ReplyJob, ReplyState, fastsql
from ..models.base import utcnow
from ..models.replies import FINISHED
from ..replies import engine, texts
from ..replies.providers import ProviderError, Run, provider_for
from . import agents, clarifications, credits, routing
from . import reply_outcomes as outcomes

log = logging.getLogger("agent_platform.replies")

MAX_PENDING = 20  # customer messages one reply looks at


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
    return outcomes.new_job(conversation, message.id, due, created_at=message.created_at)


def _agent_answers(agent_id):
    if not agent_id:
        return False
    sql = 'SELECT 1 FROM "agent" WHERE "id" = ? AND "is_active" = 1 AND "deleted_at" IS NULL'
    return fastsql.scalar(sql, agent_id) is not None


# --- 2. the job -----------------------------------------------------------------------


@scheduler.job("REPLIES_POLL_SECONDS", in_every_process=True)
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
            free = 0 if scheduler.stopping() else free
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
    with claiming("replies"):
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
        log.exception("reply job %s failed", job.id, extra=_ids(job))
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
        said = "\n".join(filter(None, (engine.message_text(m) for m in self.pending)))
        return said[: engine.CUSTOMER_CHARS]

    @property
    def language(self):
        return self.agent.language if self.agent else "en"


def answer(job, now=None):
    """Answer one claimed job (see the module docstring for the order)."""
    turn = load_turn(job, now or utcnow())
    reason = silence_reason(turn)
    if reason:
        return outcomes.finish(turn, "skipped", {"reason": reason})
    if _credits_depleted(turn):
        return outcomes.route(turn, "handoff", None, None, {"reason": "credits depleted"})
    chosen = clarifications.resolve(turn)
    if chosen is not None:
        return chosen
    text = turn.customer_text
    intention = routing.match_intention(turn.agent, text, turn.settings)
    if intention is not None:
        turn.notes["intention"] = intention.note()
    rule = routing.match_transfer_rule(turn.agent.id, text, intention)
    if rule is not None:
        via = {"transfer_rule_id": rule.id}
        return outcomes.route(turn, rule.action, rule.target_agent_id, rule.message, via)
    keyword = routing.handoff_keyword(turn.settings.get("handoff_keywords"), text)
    if keyword is not None:
        message = texts.setting_or_built_in(
            turn.settings, "handoff_message", turn.language, "handoff"
        )
        return outcomes.route(turn, "handoff", None, message, {"handoff_keyword": keyword})
    if intention is not None:
        done = _intention_action(turn, intention)
        if done:
            return done
    return _ask_provider(turn)


def load_turn(job, now):
    conversation = outcomes.by_id(Conversation, job.conversation_id)
    agent = conversation and outcomes.by_id(Agent, conversation.agent_id)
    channel = conversation and outcomes.by_id(Channel, conversation.channel_id)
    settings = agents.settings_of(agent) if agent else {}
    pending = _pending(job) if conversation else []
    return Turn(job, conversation, agent, channel, settings, pending, now)


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
        return outcomes.deliver(turn, [row.reply_text], "replied", {"intention_id": row.id})
    if row.action == "transfer":
        action = "transfer" if row.target_agent_id else "handoff"
        return outcomes.route(turn, action, row.target_agent_id, None, {"intention_id": row.id})
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
    if reply.kind == "clarify":
        return clarifications.ask(turn, record)
    if reply.kind == "small_talk":
        line = texts.small_talk_reply(turn.customer_text, turn.language)
        return outcomes.deliver(turn, [line], "replied", record, small_talk=True)
    if reply.kind != "answer":
        return outcomes.fallback(turn, record, failed=False)
    parts = [texts.shorten(reply.text, turn.settings["max_reply_length"])]
    return outcomes.deliver(turn, parts, "replied", record, charge=_credits_for(reply))


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
    final = not (retryable and job.attempts <= len(schedule))
    log.log(
        logging.ERROR if final else logging.WARNING,
        "reply job %s (conversation %s) attempt %s failed: %s",
        job.id, job.conversation_id, job.attempts, error,
        extra={**_ids(job, turn), "attempt": job.attempts, "reason": error},
    )  # fmt: skip
    if not final:
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
        return outcomes.finish(turn, "skipped", {"reason": silence_reason(turn), "error": error})
    return outcomes.fallback(turn, {"error": error}, failed=True)


def _ids(job, turn=None):
    """What a reply job's log lines are about, as fields of the JSON log."""
    ids = {
        "workspace_id": job.workspace_id,
        "conversation_id": job.conversation_id,
        "message_id": job.message_id,
        "reply_job_id": job.id,
    }
    if turn is not None:
        ids["agent_id"] = turn.agent.id if turn.agent else None
        ids["channel_id"] = turn.channel.id if turn.channel else None
    return ids


# --- housekeeping and preview ----------------------------------------------------------


@scheduler.job("REPLIES_IDLE_POLL_SECONDS")
def prune_reply_jobs(now=None):
    """Delete finished jobs older than REPLIES_JOB_RETENTION_DAYS."""
    days = current_app.config["REPLIES_JOB_RETENTION_DAYS"]
    cutoff = (now or utcnow()) - timedelta(days=days)
    with transaction():
        query = ReplyJob.delete().where(ReplyJob.status.in_(FINISHED), ReplyJob.due_at < cutoff)
        return query.execute()
