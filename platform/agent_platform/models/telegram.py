"""What the Telegram channel keeps of the Bot API's updates: the ids of the
updates it stored, per channel. They make a redelivered update (webhook
retries, a poll that overlaps another) a no-op, and the highest one is where
long polling resumes: the getUpdates offset lives here, in the database."""

from peewee import BigIntegerField, DateTimeField, ForeignKeyField

from .base import BaseModel, new_id
from .channels import Channel
from .fastsql import execute, scalar

# Update ids kept per channel: far more than one poll or webhook retry spans.
KEPT_UPDATES = 1000


class TelegramUpdate(BaseModel):
    channel = ForeignKeyField(Channel, on_delete="CASCADE", index=False)
    update_id = BigIntegerField()
    received_at = DateTimeField()

    class Meta:
        table_name = "telegram_update"
        indexes = ((("channel", "update_id"), True),)

    @classmethod
    def claim(cls, channel_id, update_id, now):
        """Record `update_id` as stored on the channel; False when it was already."""
        cursor = execute(
            'INSERT INTO "telegram_update" ("id", "channel_id", "update_id", "received_at") '
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            new_id(),
            channel_id,
            update_id,
            cls.received_at.db_value(now),
        )
        return cursor.rowcount == 1

    @classmethod
    def next_offset(cls, channel_id):
        """getUpdates' offset: one past the highest update stored, else None."""
        sql = 'SELECT MAX("update_id") FROM "telegram_update" WHERE "channel_id" = ?'
        highest = scalar(sql, channel_id)
        return None if highest is None else highest + 1

    @classmethod
    def prune(cls, channel_id):
        """Forget all but the newest KEPT_UPDATES update ids of the channel."""
        execute(
            'DELETE FROM "telegram_update" WHERE "channel_id" = ? AND "update_id" < ('
            'SELECT "update_id" FROM "telegram_update" WHERE "channel_id" = ? '
            'ORDER BY "update_id" DESC LIMIT 1 OFFSET ?)',
            channel_id,
            channel_id,
            KEPT_UPDATES - 1,
        )
