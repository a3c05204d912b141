"""Channels: where customers write from (WhatsApp, Telegram, e-mail, website)."""

from peewee import BooleanField, CharField, ForeignKeyField

from .agents import Agent
from .base import JSONField, TimestampedModel, WorkspaceScoped
from .tenancy import Workspace


class Channel(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="channels", on_delete="CASCADE")
    # Deleting an agent detaches its channels; the channels stay.
    agent = ForeignKeyField(Agent, null=True, backref="channels", on_delete="SET NULL")
    name = CharField(max_length=200)
    type = CharField(max_length=20)
    is_active = BooleanField(default=True)
    settings = JSONField(default=dict)
