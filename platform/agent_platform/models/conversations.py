"""Conversations between a contact and the workspace, on one channel."""

from peewee import CharField, ForeignKeyField

from .agents import Agent
from .base import TimestampedModel, WorkspaceScoped
from .channels import Channel
from .contacts import Contact
from .tenancy import Workspace


class Conversation(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="conversations", on_delete="CASCADE")
    contact = ForeignKeyField(Contact, null=True, backref="conversations", on_delete="SET NULL")
    channel = ForeignKeyField(Channel, null=True, backref="conversations", on_delete="SET NULL")
    agent = ForeignKeyField(Agent, null=True, backref="conversations", on_delete="SET NULL")
    status = CharField(max_length=20, default="open")
