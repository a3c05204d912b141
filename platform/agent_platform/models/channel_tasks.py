"""Work an adapter does after a network's POST was answered: downloading a
message's media, marking a message read on the network.

A row exists only while its work is pending: done or given-up tasks are
deleted (the outcome is recorded on the message). `due_at` is both the
retry time and the lease: a worker that claims a task moves its due_at past
the lease, so no other worker takes it meanwhile, and a crashed worker's
task becomes due again when the lease runs out.
"""

from peewee import CharField, DateTimeField, ForeignKeyField, IntegerField

from .base import BaseModel, JSONField, utcnow
from .channels import Channel
from .fastsql import insert

TASK_KINDS = ("media_download", "mark_read", "telegram_media", "telegram_answer")


class ChannelTask(BaseModel):
    channel = ForeignKeyField(Channel, on_delete="CASCADE", index=False)
    # A plain column: the message may be erased meanwhile (the task then ends).
    message_id = CharField(max_length=36)
    kind = CharField(max_length=20)
    payload = JSONField(default=dict)
    attempts = IntegerField(default=0)
    due_at = DateTimeField(default=utcnow)
    last_error = JSONField(null=True)
    created_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "channel_task"
        indexes = (
            (("due_at",), False),
            (("channel",), False),
        )

    @classmethod
    def add(cls, channel_id, message_id, kind, payload, now=None):
        now = now or utcnow()
        task = cls(
            channel=channel_id,
            message_id=message_id,
            kind=kind,
            payload=payload,
            attempts=0,
            due_at=now,
            last_error=None,
            created_at=now,
        )
        return insert(task)

    @classmethod
    def due(cls, now, kinds, limit):
        return (
            cls.select(cls, Channel)
            .join(Channel)
            .where(cls.due_at <= now, cls.kind.in_(kinds))
            .order_by(cls.due_at, cls.id)
            .limit(limit)
        )

    @classmethod
    def claim(cls, now, kinds, limit, lease):
        """Up to `limit` due tasks of `kinds`, leased until now + `lease`
        (call inside a transaction), with their attempts counted."""
        tasks = list(cls.due(now, kinds, limit))
        if tasks:
            cls.update(due_at=now + lease, attempts=cls.attempts + 1).where(
                cls.id.in_([task.id for task in tasks])
            ).execute()
        for task in tasks:
            task.attempts += 1
        return tasks

    def finish(self):
        """The work is done or given up: the row goes."""
        type(self).delete().where(type(self).id == self.id).execute()

    def retry_at(self, due_at, error):
        """Due again at `due_at`, with the failure kept as last_error."""
        type(self).update(due_at=due_at, last_error=error).where(type(self).id == self.id).execute()
