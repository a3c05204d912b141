"""Where each e-mail channel's mailbox poll stands: the mailbox's
UIDVALIDITY and the highest UID read under it. Advanced in the transaction
that stores each mail, so a poll cut off at any point resumes with the first
mail it had not stored. `since`: when the reading of this mailbox began, set
when another mailbox replaces the channel's (None: when the channel was
created)."""

from peewee import BigIntegerField, DateTimeField, ForeignKeyField

from .base import BaseModel
from .channels import Channel
from .fastsql import execute


class EmailMailbox(BaseModel):
    channel = ForeignKeyField(Channel, primary_key=True, on_delete="CASCADE")
    uidvalidity = BigIntegerField()
    last_uid = BigIntegerField()
    polled_at = DateTimeField()
    since = DateTimeField(null=True)

    class Meta:
        table_name = "email_mailbox"

    @classmethod
    def position(cls, channel_id):
        """(uidvalidity, last_uid, since) of the channel's mailbox, else None."""
        row = cls.get_or_none(cls.channel == channel_id)
        return None if row is None else (row.uidvalidity, row.last_uid, row.since)

    @classmethod
    def start(cls, channel_id, now):
        """Read the channel's mailbox afresh, the mail arrived from `now` on
        (another mailbox was set): no UIDVALIDITY yet (0, which no server gives)."""
        execute(
            'INSERT INTO "email_mailbox" ("channel_id", "uidvalidity", "last_uid", "polled_at", '
            '"since") VALUES (?, 0, 0, ?, ?) ON CONFLICT ("channel_id") DO UPDATE SET '
            '"uidvalidity" = 0, "last_uid" = 0, "since" = excluded."since"',
            channel_id,
            cls.polled_at.db_value(now),
            cls.since.db_value(now),
        )

    @classmethod
    def advance(cls, channel_id, uidvalidity, uid, now):
        """Record `uid` read under `uidvalidity`; never moves back within one
        UIDVALIDITY (two processes polling at once)."""
        execute(
            'INSERT INTO "email_mailbox" ("channel_id", "uidvalidity", "last_uid", "polled_at") '
            'VALUES (?, ?, ?, ?) ON CONFLICT ("channel_id") DO UPDATE SET '
            '"last_uid" = CASE WHEN "email_mailbox"."uidvalidity" = excluded."uidvalidity" '
            'AND "email_mailbox"."last_uid" > excluded."last_uid" '
            'THEN "email_mailbox"."last_uid" ELSE excluded."last_uid" END, '
            '"uidvalidity" = excluded."uidvalidity", "polled_at" = excluded."polled_at"',
            channel_id,
            uidvalidity,
            uid,
            cls.polled_at.db_value(now),
        )
