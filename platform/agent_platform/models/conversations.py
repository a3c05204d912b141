"""Conversations between a contact and the workspace, on one channel."""

from peewee import SQL, CharField, DateTimeField, ForeignKeyField, IntegerField

from .agents import Agent
from .base import TimestampedModel, WorkspaceScoped
from .channels import Channel
from .contacts import Contact
from .fastsql import execute, fetch_one
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
    # The direction of its latest message, kept by a trigger on message
    # (migration 0014): "unread" in the interactions query is one column.
    last_direction = CharField(max_length=10, null=True)
    # The time of its latest message from the contact, kept by a trigger on
    # message (migration 0021): the inbox's unread count compares it with
    # each user's read mark.
    last_inbound_at = DateTimeField(null=True)

    class Meta:
        # Listings filter by workspace (and status) and sort by activity:
        # these make a page cost the same whatever the table's size.
        indexes = (
            (("workspace", "updated_at", "id"), False),
            (("workspace", "created_at", "id"), False),
            (("workspace", "status", "updated_at", "id"), False),
            # The interactions query (services/interactions.py): a page and
            # its count by channel, status and unread read only this index.
            (("workspace", "channel", "status", "last_direction", "updated_at"), False),
            # The inbox (models/inbox.py): a page under each filter is one
            # index range in its order; unread counts read the last one.
            (("workspace", "channel", "status", "updated_at", "id"), False),
            (("workspace", "agent", "status", "updated_at", "id"), False),
            (("workspace", "assigned_to", "status", "updated_at", "id"), False),
            (("workspace", "status", "last_inbound_at", "id"), False),
        )

    def save(self, *args, **kwargs):
        """As any model saves, but never last_direction nor last_inbound_at,
        which only triggers write: an instance read before a message was
        stored would otherwise put the old values back."""
        if not kwargs.get("force_insert") and kwargs.get("only") is None and self._pk:
            kwargs["only"] = _SAVED_FIELDS
        return super().save(*args, **kwargs)

    @classmethod
    def current_for(cls, workspace_id, contact_id, channel_id):
        """The contact's most recent conversation on the channel, open ones first.

        The unary + keeps SQLite (which has no statistics), and PostgreSQL
        before it has them, from choosing the channel_id index, which reads
        every conversation of the channel; the contact's are a handful."""
        return fetch_one(cls, CURRENT_FOR_CONTACT, contact_id, channel_id, workspace_id)

    @classmethod
    def of_thread(cls, channel_id, contact_id, external_ids):
        """The contact's conversation holding the first of `external_ids`
        (network message ids) stored on the channel, else None."""
        marks = ", ".join("?" for _ in external_ids)
        sql = (
            'SELECT m."external_id", m."conversation_id" FROM "message" AS m '
            'JOIN "conversation" AS c ON c."id" = m."conversation_id" '
            f'WHERE m."channel_id" = ? AND m."external_id" IN ({marks}) AND c."contact_id" = ?'
        )
        found = dict(execute(sql, channel_id, *external_ids, contact_id).fetchall())
        first = next((found[i] for i in external_ids if i in found), None)
        return None if first is None else cls.get_by_id(first)

    def touch(self, now):
        """A message is activity: count it and move the conversation up the lists."""
        execute(
            'UPDATE "conversation" SET "message_count" = "message_count" + 1, '
            '"last_message_at" = ?, "updated_at" = ? WHERE "id" = ?',
            now,
            now,
            self.id,
        )
        self.message_count += 1
        self.last_message_at = self.updated_at = now

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


_TRIGGER_FIELDS = ("last_direction", "last_inbound_at")
_SAVED_FIELDS = [
    field for field in Conversation._meta.sorted_fields if field.name not in _TRIGGER_FIELDS
]


CURRENT_FOR_CONTACT = (
    'SELECT * FROM "conversation" '
    'WHERE "contact_id" = ? AND +"channel_id" = ? AND +"workspace_id" = ? '
    """ORDER BY "status" IN ('open', 'handoff') DESC, "updated_at" DESC, "id" DESC """
    "LIMIT 1"
)
