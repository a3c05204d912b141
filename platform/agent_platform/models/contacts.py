"""Contacts, the customers of a workspace, and their identities on each network."""

import threading

from peewee import CharField, DateTimeField, ForeignKeyField

from ..db import database
from .base import BaseModel, JSONField, TimestampedModel, WorkspaceScoped, utcnow
from .channels import Channel
from .dialect import engine
from .fastsql import execute, fetch_all, fetch_one, scalar
from .streamed import leading_fields, with_the_rest
from .tenancy import Workspace

# A contact's custom values (up to 100,000 characters), stored last.
_LONG = ("custom_fields",)


class Contact(TimestampedModel, WorkspaceScoped):
    """`phone` is E.164 and `email` lower case, each unique in the workspace.
    `custom_fields` is keyed by custom field id (so renaming a field keeps its
    values) and rendered by name."""

    workspace = ForeignKeyField(Workspace, backref="contacts", on_delete="CASCADE")
    name = CharField(max_length=200, default="")
    phone = CharField(max_length=20, null=True)
    email = CharField(max_length=254, null=True)
    custom_fields = JSONField(default=dict)

    class Meta:
        indexes = (
            (("workspace", "phone"), True),
            (("workspace", "email"), True),
            (("workspace", "created_at", "id"), False),
            # The inbox's search reads names from this index, not the rows.
            (("workspace", "name"), False),
        )

    @classmethod
    def by_id(cls, contact_id):
        return fetch_one(cls, 'SELECT * FROM "contact" WHERE "id" = ?', contact_id)

    @classmethod
    def by_identity(cls, workspace_id, identity_type, external_id):
        """The contact with this identity on a network (one indexed lookup)."""
        sql = (
            'SELECT "contact".* FROM "contact_identity" '
            'JOIN "contact" ON "contact"."id" = "contact_identity"."contact_id" '
            'WHERE "contact_identity"."workspace_id" = ? AND "contact_identity"."type" = ? '
            'AND "contact_identity"."external_id" = ?'
        )
        return fetch_one(cls, sql, workspace_id, identity_type, external_id)

    @classmethod
    def with_phone(cls, workspace_id, phone):
        sql = 'SELECT * FROM "contact" WHERE "workspace_id" = ? AND "phone" = ?'
        return fetch_one(cls, sql, workspace_id, phone)

    @classmethod
    def with_email(cls, workspace_id, email):
        sql = 'SELECT * FROM "contact" WHERE "workspace_id" = ? AND "email" = ?'
        return fetch_one(cls, sql, workspace_id, email)

    @classmethod
    def leading_columns(cls):
        """Every column but the custom values (stored last), as fields."""
        return leading_fields(cls, _LONG)

    @classmethod
    def with_custom_values(cls, contacts):
        """`contacts`, read without their custom values, as a Streamed that
        reads each one's when it is reached: a contact's values may hold
        100,000 characters, and a page of 100 was 60 MB of JSON read and
        encoded whole."""
        return with_the_rest(cls, contacts, _LONG)

    def as_dict(self, field_names):
        """`field_names` maps custom field ids to their names."""
        return {
            "id": self.id,
            "name": self.name,
            "phone": self.phone,
            "email": self.email,
            "custom_fields": {
                field_names[field_id]: value
                for field_id, value in self.custom_fields.items()
                if field_id in field_names
            },
            "identities": [identity.as_dict() for identity in self.identity_rows()],
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    def identity_rows(self):
        sql = 'SELECT * FROM "contact_identity" WHERE "contact_id" = ? ORDER BY "created_at", "id"'
        return fetch_all(ContactIdentity, sql, self.id)


class ContactIdentity(BaseModel):
    """Who the contact is on one network: WhatsApp wa_id, Telegram chat id,
    e-mail address, widget visitor id. Unique per workspace and type, so the
    same person writing through two WhatsApp numbers is one contact."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    contact = ForeignKeyField(Contact, backref="identities", on_delete="CASCADE")
    type = CharField(max_length=20)
    external_id = CharField(max_length=254)
    # The channel it was first seen on (None when written through the API).
    channel = ForeignKeyField(Channel, null=True, on_delete="SET NULL")
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "type", "external_id"), True),)

    @classmethod
    def find(cls, workspace_id, identity_type, external_id):
        sql = (
            'SELECT * FROM "contact_identity" '
            'WHERE "workspace_id" = ? AND "type" = ? AND "external_id" = ?'
        )
        return fetch_one(cls, sql, workspace_id, identity_type, external_id)

    @classmethod
    def external_ids(cls, contact_id, identity_type):
        """The contact's external ids on one network (through the contact's index)."""
        sql = 'SELECT "external_id" FROM "contact_identity" WHERE "contact_id" = ? AND "type" = ?'
        return frozenset(row[0] for row in execute(sql, contact_id, identity_type))

    @classmethod
    def hold(cls, workspace_id, identity_type, external_id):
        """Hold the identity to the end of the write transaction: a message
        from the same sender stored at once waits for this one's commit, then
        sees its contact and message. SQLite's write transaction holds the
        whole file already; on PostgreSQL, whose transactions see only
        committed rows, both would create the contact or store a redelivered
        message, the second failing on the unique key, so a lock on the
        identity's name (pg_advisory_xact_lock) holds it there."""
        if engine.postgresql:
            _hold([_lock_name(workspace_id, identity_type, external_id)])

    @classmethod
    def hold_in_order(cls, identities):
        """Hold `identities` ((workspace, type, external id) each) in the one
        order every transaction takes them: one that stores several senders'
        messages (a group commit's batch) then never holds an identity that
        another waits for while it waits for one the other holds (on
        PostgreSQL, a deadlock). All in one statement; holding one again
        later in the transaction (each message's own hold) costs nothing."""
        if engine.postgresql:
            _hold(sorted({_lock_name(*identity) for identity in identities}))

    @classmethod
    def address_on(cls, contact_id, identity_type, channel_id):
        """The contact's external id of the type to send through the
        channel: the one first seen on it, else the first of theirs, else None."""
        return scalar(_ADDRESS_ON, contact_id, identity_type, channel_id)

    def as_dict(self):
        return {
            "type": self.type,
            "external_id": self.external_id,
            "channel_id": self.channel_id,
            "created_at": self.created_at,
        }


# A CASE, not `"channel_id" = ? DESC`: an identity written through the API
# has no channel, and PostgreSQL sorts that NULL first when descending.
_ADDRESS_ON = (
    'SELECT "external_id" FROM "contact_identity" WHERE "contact_id" = ? AND "type" = ? '
    'ORDER BY CASE WHEN "channel_id" = ? THEN 0 ELSE 1 END, "created_at", "id" LIMIT 1'
)

# Two keys (a namespace, the name): apart from db.claiming's one-key locks.
# unnest yields the names in their order, and the locks are taken in it.
_HOLD = (
    "SELECT count(pg_advisory_xact_lock(hashtext('identity'), hashtext(name)))"
    " FROM unnest(?::text[]) AS name"
)
_held = threading.local()  # the identities held by this thread's (greenlet's) transaction


def _lock_name(workspace_id, identity_type, external_id):
    return f"{workspace_id}:{identity_type}:{external_id}"


def _hold(names):
    """Lock `names`, in their order, but those this transaction holds
    already: each a round trip saved. Only locks taken outside any savepoint
    are remembered, as rolling one back releases the locks taken since."""
    top = database.top_transaction()
    if top is None:  # no transaction: the lock ends with its statement
        execute(_HOLD, names)
        return
    if getattr(_held, "transaction", None) is not top:
        _held.transaction, _held.names = top, set()
    wanted = [name for name in names if name not in _held.names]
    if wanted:
        execute(_HOLD, wanted)
        if database.transaction_depth() == 1:
            _held.names.update(wanted)
