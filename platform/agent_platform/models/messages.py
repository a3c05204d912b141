"""Messages of a conversation, inbound from the contact or outbound to them."""

from datetime import datetime

from peewee import SQL, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from ..formats import jsonable
from .base import JSONField, TimestampedModel, WorkspaceScoped
from .channels import Channel
from .conversations import Conversation
from .fastsql import execute, fetch_all, fetch_one, scalar
from .pagination import Page
from .streamed import with_the_rest

DIRECTIONS = ("inbound", "outbound")
SENDER_TYPES = ("contact", "agent", "human", "system")
MEDIA_TYPES = ("image", "audio", "video", "document")
# Outbound statuses in the order they happen; failed can follow any but read.
OUTBOUND_STATUSES = ("queued", "sent", "delivered", "read", "failed")
INBOUND_STATUS = "received"
# A message's rendered form: (name, field); the foreign keys render as their ids.
RENDERED_FIELDS = (
    ("id", "id"),
    ("conversation_id", "conversation"),
    ("contact_id", "contact_id"),
    ("channel_id", "channel"),
    ("direction", "direction"),
    ("sender_type", "sender_type"),
    ("author_user_id", "author_user_id"),
    ("type", "type"),
    ("text", "text"),
    ("caption", "caption"),
    ("media_url", "media_url"),
    ("media_mime_type", "media_mime_type"),
    ("external_id", "external_id"),
    ("reply_to_id", "reply_to_id"),
    ("status", "status"),
    ("error", "error"),
    ("metadata", "metadata"),
    ("edit_history", "edit_history"),
    ("sent_at", "sent_at"),
    ("delivered_at", "delivered_at"),
    ("read_at", "read_at"),
    ("failed_at", "failed_at"),
    ("created_at", "created_at"),
    ("updated_at", "updated_at"),
    ("edited_at", "edited_at"),
    ("deleted_at", "deleted_at"),
)


# The versions an edited message keeps: its first, and the latest replaced.
KEPT_VERSIONS = 20


class Message(TimestampedModel, WorkspaceScoped):
    """The workspace is the conversation's (no column of its own): every
    lookup from the API joins the conversation.

    `contact_id` and `reply_to_id` are plain columns, not foreign keys: a
    foreign key makes SQLite search this (large) table on every delete of the
    parent, and both always point inside the same conversation anyway.
    """

    conversation = ForeignKeyField(
        Conversation, backref="messages", on_delete="CASCADE", index=False
    )
    channel = ForeignKeyField(
        Channel, null=True, backref="messages", on_delete="SET NULL", index=False
    )
    contact_id = CharField(max_length=36, null=True)
    direction = CharField(max_length=10)
    sender_type = CharField(max_length=10)
    type = CharField(max_length=20, default="text")
    text = TextField(null=True)
    caption = TextField(null=True)
    media_url = TextField(null=True)
    media_mime_type = CharField(max_length=100, null=True)
    external_id = CharField(max_length=200, null=True)
    reply_to_id = CharField(max_length=36, null=True)
    status = CharField(max_length=20)
    error = JSONField(null=True)
    metadata = JSONField(default=dict)
    edit_history = JSONField(default=list)
    edited_at = DateTimeField(null=True)
    deleted_at = DateTimeField(null=True)
    sent_at = DateTimeField(null=True)
    delivered_at = DateTimeField(null=True)
    read_at = DateTimeField(null=True)
    failed_at = DateTimeField(null=True)
    # The send job's bookkeeping (outbound only).
    send_attempts = IntegerField(default=0)
    lease_until = DateTimeField(null=True)
    # The workspace user who wrote a human message (None: not a person's, or
    # written through the API). No foreign key: a message outlives its author.
    author_user_id = CharField(max_length=200, null=True)
    # Its row in message_fts, given by a trigger (migration 0021) and never
    # written by save(): an instance stored before the trigger set it holds None.
    search_rowid = IntegerField(null=True, unique=True)

    class Meta:
        indexes = (
            # A conversation's page, in either order, without sorting.
            (("conversation", "created_at", "id"), False),
            # Idempotent inbound: one message per network id on a channel.
            (("channel", "external_id"), True),
        )

    def keep_replaced(self, text, caption, replaced_at):
        """Add the version an edit replaces to `edit_history`. The first
        version and the latest ones are kept, KEPT_VERSIONS in all: a
        contact may edit a message on Telegram as often as they like, and
        every edit rewrote the whole history."""
        replaced = jsonable({"text": text, "caption": caption, "replaced_at": replaced_at})
        history = [*self.edit_history, replaced]
        if len(history) > KEPT_VERSIONS:
            history = history[:1] + history[1 - KEPT_VERSIONS :]
        self.edit_history = history

    def save(self, *args, **kwargs):
        if not kwargs.get("force_insert") and kwargs.get("only") is None and self._pk:
            kwargs["only"] = _SAVED_FIELDS
        return super().save(*args, **kwargs)

    @classmethod
    def in_workspace(cls, workspace_id):
        return cls.select(cls).join(Conversation).where(Conversation.workspace == workspace_id)

    @classmethod
    def by_external_id(cls, channel_id, external_id):
        sql = 'SELECT * FROM "message" WHERE "channel_id" = ? AND "external_id" = ?'
        return fetch_one(cls, sql, channel_id, external_id)

    @classmethod
    def id_by_external_id(cls, channel_id, external_id):
        sql = 'SELECT "id" FROM "message" WHERE "channel_id" = ? AND "external_id" = ?'
        return scalar(sql, channel_id, external_id)

    @classmethod
    def page(cls, conversation_id, paging):
        """A page of the conversation's messages by created_at (then id): two
        index range reads whatever the size of the table. Only the columns
        stored before the edit history are read at once; each message's
        others when the answer reaches it (a Streamed): with 20 versions of
        its text, one message is half a megabyte of JSON, and a page of 100
        was read and encoded whole, holding the server's loop 0.3 s."""
        direction = "ASC" if paging.order == "asc" else "DESC"
        sql = (
            f'SELECT {_LEADING_SQL} FROM "message" WHERE "conversation_id" = ? '
            f'ORDER BY "created_at" {direction}, "id" {direction} LIMIT ? OFFSET ?'
        )
        offset = (paging.page - 1) * paging.limit
        items = fetch_all(cls, sql, conversation_id, paging.limit, offset)
        total = scalar(
            'SELECT COUNT(*) FROM "message" WHERE "conversation_id" = ?', conversation_id
        )
        return Page(with_the_rest(cls, items, TRAILING_COLUMNS), paging, total)

    @classmethod
    def queued_batch(cls, now, limit):
        """Queued outbound messages free to claim, on active channels."""
        return (
            cls.select(cls, Channel)
            .join(Channel)
            .where(
                cls.status == "queued",
                (cls.lease_until.is_null()) | (cls.lease_until <= now),
                Channel.is_active == True,  # noqa: E712
            )
            .order_by(cls.created_at)
            .limit(limit)
        )

    @classmethod
    def visible_since(cls, conversation_id, since, limit):
        """The conversation's messages a website visitor sees (theirs, and
        outbound ones once sent) changed after `since` (None: all), in the
        order they changed. A message becomes visible when it is sent, after
        it was created, so this reads updated_at, not created_at."""
        sql = (
            'SELECT * FROM "message" WHERE "conversation_id" = ? '
            f'AND {_VISIBLE} AND "updated_at" > ? ORDER BY "updated_at", "id" LIMIT ?'
        )
        # datetime.min, not "": PostgreSQL compares a time with times only.
        return fetch_all(cls, sql, conversation_id, since or datetime.min, limit)

    @classmethod
    def unread_by_visitor(cls, conversation_id, up_to):
        """External ids of the outbound messages up to `up_to` (a created_at)
        the visitor has not read yet."""
        sql = (
            'SELECT "external_id" FROM "message" WHERE "conversation_id" = ? '
            """AND "direction" = 'outbound' AND "status" IN ('sent', 'delivered') """
            'AND "created_at" <= ? AND "external_id" IS NOT NULL'
        )
        return [row[0] for row in execute(sql, conversation_id, up_to).fetchall()]

    @classmethod
    def latest_of_agent(cls, workspace_id, agent_id, limit):
        """The `limit` latest messages (not deleted) of the agent's
        conversations, by conversation, then in the order sent."""
        sql = (
            'SELECT * FROM (SELECT m.* FROM "message" m JOIN "conversation" c '
            'ON c."id" = m."conversation_id" WHERE c."agent_id" = ? AND c."workspace_id" = ? '
            'AND m."deleted_at" IS NULL ORDER BY m."created_at" DESC LIMIT ?) AS "latest" '
            'ORDER BY "conversation_id", "created_at", "id"'
        )
        return fetch_all(cls, sql, agent_id, workspace_id, limit)

    def as_dict(self):
        data = self.__data__  # read directly: a descriptor call per field costs more
        return {name: data.get(field) for name, field in RENDERED_FIELDS}


_SAVED_FIELDS = [field for field in Message._meta.sorted_fields if field.name != "search_rowid"]


def _split_at(column):
    names = tuple(field.column_name for field in Message._meta.sorted_fields)
    return names[: names.index(column)], names[names.index(column) :]


# The columns of a message stored before its edit history (up to 20
# versions of its text), and those from it on: SQLite reaches a column
# stored after a long value only by walking all of that value's pages. (The
# fields are declared in the table's order; a test holds them to it.)
LEADING_COLUMNS, TRAILING_COLUMNS = _split_at("edit_history")
_LEADING_SQL = ", ".join(f'"{name}"' for name in LEADING_COLUMNS)

# The send job's claim query reads only queued rows: a partial index keeps it
# from touching the (many) delivered and received ones.
Message.add_index(
    Message.index(
        Message.created_at, where=(Message.status == SQL("'queued'")), name="message_queued"
    )
)


# What a website visitor sees of their conversation: what they wrote, and
# what was sent to them (queued and failed replies are not theirs to see).
_VISIBLE = """("direction" = 'inbound' OR "status" IN ('sent', 'delivered', 'read'))"""
