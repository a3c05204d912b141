"""Clarifying questions the agent asked (replies.clarifying) and what the
customer made of them: one row per question, on its conversation."""

from peewee import CharField, DateTimeField, ForeignKeyField

from .base import JSONField, TimestampedModel, WorkspaceScoped
from .conversations import Conversation
from .fastsql import execute, fetch_one
from .messages import Message
from .tenancy import Workspace

# pending: asked, not answered yet (shown as expired after expires_at);
# chosen: the customer chose a training, answered with it; none: "none of
# these" (the fallback followed); other: the customer wrote something else,
# answered as a new message.
STATUSES = ("pending", "chosen", "none", "other", "expired")


class Clarification(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    # Indexed with created_at below.
    conversation = ForeignKeyField(Conversation, on_delete="CASCADE", index=False)
    agent_id = CharField(max_length=36)
    message_id = CharField(max_length=36)  # the agent's question
    asked_about_id = CharField(max_length=36)  # the customer's message it asked about
    choices = JSONField()  # [{"training_id", "label"}], in the order offered
    status = CharField(max_length=20, default="pending")
    chosen_training_id = CharField(max_length=36, null=True)
    reply_message_id = CharField(max_length=36, null=True)  # the customer's answer
    resolved_at = DateTimeField(null=True)
    expires_at = DateTimeField()

    class Meta:
        table_name = "clarification"
        indexes = ((("conversation", "created_at"), False),)

    @classmethod
    def pending_for(cls, conversation_id):
        """The conversation's latest clarification waiting for an answer (maybe expired)."""
        sql = (
            'SELECT * FROM "clarification" WHERE "conversation_id" = ? AND "status" = ? '
            'ORDER BY "created_at" DESC LIMIT 1'
        )
        return fetch_one(cls, sql, conversation_id, "pending")

    @classmethod
    def offered_button(cls, conversation_id, data, now):
        """The button {"text", "data"} of the conversation's pending, unexpired
        question whose data is `data`, else None (stale, forged or answered)."""
        pending = cls.pending_for(conversation_id) if conversation_id else None
        if pending is None or pending.expires_at <= now:
            return None
        question = Message.get_or_none(Message.id == pending.message_id)
        offered = (question.metadata or {}).get("buttons") if question is not None else None
        for button in offered if isinstance(offered, list) else ():
            if isinstance(button, dict) and button.get("data") == data:
                return {"text": button.get("text"), "data": data}
        return None

    @classmethod
    def expire(cls, conversation_id, now):
        """Mark the conversation's questions past their expiry as expired."""
        execute(
            'UPDATE "clarification" SET "status" = ?, "updated_at" = ? WHERE '
            '"conversation_id" = ? AND "status" = ? AND "expires_at" <= ?',
            "expired",
            now,
            conversation_id,
            "pending",
            cls.expires_at.db_value(now),
        )

    @classmethod
    def of_conversation(cls, workspace_id, conversation_id):
        return (
            cls.in_workspace(workspace_id)
            .where(cls.conversation == conversation_id)
            .order_by(cls.created_at, cls.id)
        )

    def shown_status(self, now):
        if self.status == "pending" and self.expires_at <= now:
            return "expired"
        return self.status
