"""Conversations between a contact and the workspace, on one channel."""

from peewee import SQL, CharField, DateTimeField, ForeignKeyField, IntegerField

from .agents import Agent
from .base import TimestampedModel, WorkspaceScoped
from .channels import Channel
from .contacts import Contact
from .tenancy import Workspace

# open: the agent answers; handoff: a human holds it (the agent is silent);
# closed: finished, reopened by hand or when the contact writes again.
STATUSES = ("open", "handoff", "closed")
ACTIVE_STATUSES = ("open", "handoff")


class Conversation(TimestampedModel, WorkspaceScoped):
    """`updated_at` is the last activity (a change or a message), the order
    listings use; `message_count` and `last_message_at` follow each message."""

    workspace = ForeignKeyField(Workspace, backref="conversations", on_delete="CASCADE")
    contact = ForeignKeyField(Contact, null=True, backref="conversations", on_delete="SET NULL")
    channel = ForeignKeyField(Channel, null=True, backref="conversations", on_delete="SET NULL")
    agent = ForeignKeyField(Agent, null=True, backref="conversations", on_delete="SET NULL")
    status = CharField(max_length=20, default="open")
    assigned_to = CharField(max_length=200, null=True)
    last_message_at = DateTimeField(null=True)
    message_count = IntegerField(default=0, constraints=[SQL("DEFAULT 0")])
    handoff_started_at = DateTimeField(null=True)
    closed_at = DateTimeField(null=True)

    class Meta:
        # Listings filter by workspace (and status) and sort by activity:
        # these make a page cost the same whatever the table's size.
        indexes = (
            (("workspace", "updated_at", "id"), False),
            (("workspace", "created_at", "id"), False),
            (("workspace", "status", "updated_at", "id"), False),
        )

    @classmethod
    def current_for(cls, workspace_id, contact_id, channel_id):
        """The contact's most recent conversation on the channel, open ones first."""
        query = cls.in_workspace(workspace_id).where(
            cls.contact == contact_id, cls.channel == channel_id
        )
        active = (
            query.where(cls.status.in_(ACTIVE_STATUSES)).order_by(cls.updated_at.desc()).first()
        )
        return active or query.order_by(cls.updated_at.desc()).first()

    def as_dict(self):
        return {
            "id": self.id,
            "contact_id": self.contact_id,
            "channel_id": self.channel_id,
            "agent_id": self.agent_id,
            "status": self.status,
            "assigned_to": self.assigned_to,
            "message_count": self.message_count,
            "last_message_at": self.last_message_at,
            "handoff_started_at": self.handoff_started_at,
            "closed_at": self.closed_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
