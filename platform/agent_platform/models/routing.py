"""An agent's routing rules: transfer rules (hand a conversation to a human or
another agent), intentions (named intents with example phrases and an
action) and idle actions (what to do when a customer goes quiet)."""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from .agents import Agent
from .base import BaseModel, JSONField, TimestampedModel, WorkspaceScoped, utcnow
from .conversations import Conversation
from .tenancy import Workspace

MATCH_TYPES = ("keywords", "regex", "intention")
TRANSFER_ACTIONS = ("handoff", "transfer")
INTENTION_ACTIONS = ("reply", "webhook", "tag", "transfer")
IDLE_ACTIONS = ("message", "close")


class _AgentRule(TimestampedModel, WorkspaceScoped):
    """Shared columns and queries of the three rule kinds."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    name = CharField(max_length=200)
    is_active = BooleanField(default=True)

    @classmethod
    def listed(cls, workspace_id, agent_id, is_active=None):
        query = cls.in_workspace(workspace_id).where(cls.agent == agent_id)
        if is_active is not None:
            query = query.where(cls.is_active == is_active)
        return query

    @classmethod
    def active_of(cls, agent_id):
        return cls.select().where(cls.agent == agent_id, cls.is_active == True)  # noqa: E712


class Intention(_AgentRule):
    agent = ForeignKeyField(Agent, backref="intentions", on_delete="CASCADE", index=False)
    description = TextField(default="")
    examples = JSONField(default=list)
    action = CharField(max_length=20)
    reply_text = TextField(null=True)
    url = TextField(null=True)
    tag = CharField(max_length=100, null=True)
    # transfer: to this agent; None hands the conversation to a human.
    target_agent = ForeignKeyField(Agent, null=True, backref="+", on_delete="SET NULL", index=False)

    class Meta:
        indexes = ((("agent", "created_at", "id"), False),)

    def as_dict(self):
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "name": self.name,
            "description": self.description,
            "examples": self.examples,
            "action": self.action,
            "reply_text": self.reply_text,
            "url": self.url,
            "tag": self.tag,
            "target_agent_id": self.target_agent_id,
            "is_active": self.is_active,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class TransferRule(_AgentRule):
    agent = ForeignKeyField(Agent, backref="transfer_rules", on_delete="CASCADE", index=False)
    # Lower first; ties by creation.
    priority = IntegerField(default=0)
    match_type = CharField(max_length=20)
    keywords = JSONField(default=list)
    pattern = TextField(null=True)
    intention = ForeignKeyField(
        Intention, null=True, backref="transfer_rules", on_delete="CASCADE", index=False
    )
    action = CharField(max_length=20)
    target_agent = ForeignKeyField(Agent, null=True, backref="+", on_delete="SET NULL", index=False)
    message = TextField(null=True)

    class Meta:
        table_name = "transfer_rule"
        indexes = ((("agent", "created_at", "id"), False), (("intention",), False))

    def as_dict(self):
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "name": self.name,
            "priority": self.priority,
            "match_type": self.match_type,
            "keywords": self.keywords,
            "pattern": self.pattern,
            "intention_id": self.intention_id,
            "action": self.action,
            "target_agent_id": self.target_agent_id,
            "message": self.message,
            "is_active": self.is_active,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class IdleAction(_AgentRule):
    agent = ForeignKeyField(Agent, backref="idle_actions", on_delete="CASCADE", index=False)
    minutes = IntegerField()
    action = CharField(max_length=20)
    message = TextField(null=True)

    class Meta:
        table_name = "idle_action"
        indexes = ((("agent", "created_at", "id"), False),)

    def as_dict(self):
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "name": self.name,
            "minutes": self.minutes,
            "action": self.action,
            "message": self.message,
            "is_active": self.is_active,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class IdleActionRun(BaseModel):
    """An idle action done in a conversation for one idle period (the period
    starts at the customer's last message): the unique key makes it once."""

    idle_action = ForeignKeyField(IdleAction, on_delete="CASCADE", index=False)
    conversation = ForeignKeyField(Conversation, on_delete="CASCADE")
    idle_since = DateTimeField()
    outcome = CharField(max_length=20)
    ran_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "idle_action_run"
        indexes = ((("idle_action", "conversation", "idle_since"), True),)
