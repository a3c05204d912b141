"""Context entries: extra instructions or facts added to one conversation for
one agent (POST /v1/agents/{id}/context), read by the reply engine."""

from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from .agents import Agent
from .base import BaseModel, utcnow
from .conversations import Conversation
from .tenancy import Workspace

ROLES = ("system", "user", "assistant")


class ContextEntry(BaseModel):
    workspace = ForeignKeyField(Workspace, backref="context_entries", on_delete="CASCADE")
    agent = ForeignKeyField(Agent, backref="context_entries", on_delete="CASCADE")
    # Indexed with agent and created_at below.
    conversation = ForeignKeyField(
        Conversation, backref="context_entries", on_delete="CASCADE", index=False
    )
    role = CharField(max_length=20, default="system")
    content = TextField()
    created_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "context_entry"
        indexes = ((("conversation", "agent", "created_at"), False),)

    @classmethod
    def for_conversation(cls, conversation_id, agent_id):
        """The entries of a conversation for an agent, oldest first."""
        return (
            cls.select()
            .where(cls.conversation == conversation_id, cls.agent == agent_id)
            .order_by(cls.created_at, cls.id)
        )
