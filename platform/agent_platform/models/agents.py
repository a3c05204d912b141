"""Agents: the AI that answers a workspace's customers."""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, TextField

from .base import JSONField, TimestampedModel, WorkspaceScoped
from .tenancy import Workspace


class Agent(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="agents", on_delete="CASCADE")
    name = CharField(max_length=200)
    description = TextField(default="")
    is_active = BooleanField(default=True)
    is_default = BooleanField(default=False)
    workflow_type = CharField(max_length=50)
    language = CharField(max_length=35)
    tone = CharField(max_length=50)
    personality = TextField(default="")
    greeting_message = TextField(default="")
    custom_instructions = TextField(default="")
    business_context = TextField(default="")
    settings = JSONField(default=dict)
    deleted_at = DateTimeField(null=True)
