"""Where each e-mail channel's mailbox poll stands: the mailbox's
UIDVALIDITY and the highest UID read under it. Advanced in the transaction
that stores each mail, so a poll cut off at any point resumes with the first
mail it had not stored."""

from peewee import BigIntegerField, DateTimeField, ForeignKeyField

from .base import BaseModel
from .channels import Channel
from .fastsql import execute


class EmailMailbox(BaseModel):
    channel = ForeignKeyField(Channel, primary_key=True, on_delete="CASCADE")
    uidvalidity = BigIntegerField()
    last_uid = BigIntegerField()
    polled_at = DateTimeField()

    class Meta:
        table_name = "email_mailbox"

    @classmethod
    def position(cls, channel_id):
        """(uidvalidity, last_uid) of the channel's mailbox, else None."""
        row = cls.get_or_none(cls.channel == channel_id)
        return None if row is None else (row.uidvalidity, row.last_uid)

    @classmethod
    def advance(cls, channel_id, uidvalidity, uid, now):
        """Record `uid` read under `uidvalidity`; never moves back within one
        UIDVALIDITY (two processes polling at once)."""
        execute(
            'INSERT INTO "email_mailbox" ("channel_id", "uidvalidity", "last_uid", "polled_at") '
            'VALUES (?, ?, ?, ?) ON CONFLICT ("channel_id") DO UPDATE SET '
            '"last_uid" = CASE WHEN "uidvalidity" = excluded."uidvalidity" '
            'THEN MAX("last_uid", excluded."last_uid") ELSE excluded."last_uid" END, '
            '"uidvalidity" = excluded."uidvalidity", "polled_at" = excluded."polled_at"',
            channel_id,
            uidvalidity,
            uid,
            cls.polled_at.db_value(now),
        )
