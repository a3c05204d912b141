"""Reply jobs (one row per reply the agent owes a conversation) and the
per-conversation marks the reply engine keeps.

A job is written in the transaction that stores the customer's message
(`services.replies.schedule_reply`), so a message is never stored without
its job, and claimed with a lease by the reply job of the scheduler: a
process that dies holding one leaves it to expire and be claimed again.
"""

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField, Model, TextField

from ..db import database
from .base import JSONField, TimestampedModel, utcnow
from .conversations import Conversation
from .fastsql import fetch_all, fetch_one
from .tenancy import Workspace

# pending: waiting for due_at (the debounce, or a retry's backoff);
# running: claimed (lease_until); then done, or failed (the fallback was sent).
JOB_STATUSES = ("pending", "running", "done", "failed")
FINISHED = ("done", "failed")


class ReplyJob(TimestampedModel):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    # Indexed with status below.
    conversation = ForeignKeyField(
        Conversation, backref="reply_jobs", on_delete="CASCADE", index=False
    )
    # The latest customer message the job was scheduled (or pushed back) for.
    message_id = CharField(max_length=36)
    status = CharField(max_length=20, default="pending")
    due_at = DateTimeField()
    attempts = IntegerField(default=0)
    lease_until = DateTimeField(null=True)
    claim_token = CharField(max_length=36, null=True)
    # What happened: replied, fallback, handoff, transferred, skipped (why in `detail`).
    outcome = CharField(max_length=20, null=True)
    detail = JSONField(null=True)
    last_error = TextField(null=True)
    # Transfers to another agent made by this chain of jobs (a loop guard).
    transfers = IntegerField(default=0)
    finished_at = DateTimeField(null=True)

    class Meta:
        table_name = "reply_job"
        indexes = (
            (("status", "due_at"), False),
            (("conversation", "status"), False),
        )

    @classmethod
    def pending_for(cls, conversation_id):
        sql = (
            'SELECT * FROM "reply_job" WHERE "conversation_id" = ? AND "status" = ? '
            'ORDER BY "created_at" LIMIT 1'
        )
        return fetch_one(cls, sql, conversation_id, "pending")

    @classmethod
    def claimable(cls, now, limit):
        """Due pending jobs, then running ones whose lease has expired."""
        sql = (
            'SELECT * FROM "reply_job" WHERE "status" = ? AND "due_at" <= ? '
            'ORDER BY "due_at" LIMIT ?'
        )
        found = fetch_all(cls, sql, "pending", now, limit)
        if len(found) < limit:
            sql = (
                'SELECT * FROM "reply_job" WHERE "status" = ? AND "lease_until" <= ? '
                'ORDER BY "lease_until" LIMIT ?'
            )
            found += fetch_all(cls, sql, "running", now, limit - len(found))
        return found

    @classmethod
    def of_conversation(cls, conversation_id):
        return cls.select().where(cls.conversation == conversation_id).order_by(cls.created_at)


class ReplyState(Model):
    """Per conversation: when the customer last wrote (idle actions count from
    it) and up to which customer message the agent has answered."""

    conversation = ForeignKeyField(
        Conversation, primary_key=True, backref="reply_state", on_delete="CASCADE"
    )
    last_customer_at = DateTimeField(null=True, index=True)
    # created_at of the newest customer message a finished job covered.
    answered_through = DateTimeField(null=True)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        database = database
        legacy_table_names = False
        table_name = "reply_state"

    @classmethod
    def of(cls, conversation_id):
        sql = 'SELECT * FROM "reply_state" WHERE "conversation_id" = ?'
        return fetch_one(cls, sql, conversation_id)
