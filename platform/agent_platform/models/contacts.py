"""Contacts: the customers of a workspace."""

from peewee import CharField, ForeignKeyField

from .base import JSONField, TimestampedModel, WorkspaceScoped
from .tenancy import Workspace


class Contact(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="contacts", on_delete="CASCADE")
    name = CharField(max_length=200, default="")
    phone = CharField(max_length=20, null=True)
    email = CharField(max_length=254, null=True)
    custom_fields = JSONField(default=dict)
