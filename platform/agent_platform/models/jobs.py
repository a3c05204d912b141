"""Turns of the jobs that run once per interval across every process.

Several processes on one PostgreSQL database each run the scheduler; a job
that polls a mailbox or prunes a table must still run once per interval, not
once per process. Its row says when it is next due and until when a process
running it holds it (a process that dies holding it is forgotten when that
lease ends).
"""

from peewee import CharField, Model

from ..db import database
from .base import UtcDateTimeField


class JobTurn(Model):
    name = CharField(primary_key=True, max_length=200)
    due_at = UtcDateTimeField()
    held_until = UtcDateTimeField(null=True)

    class Meta:
        database = database
        table_name = "job_turn"

    @classmethod
    def take(cls, name, now, interval, lease):
        """Whether this process runs job `name` now: the first to ask once it
        is due and not held holds it for `lease` and moves it `interval` on."""
        cls.insert(name=name, due_at=now).on_conflict_ignore().execute()
        free = cls.held_until.is_null() | (cls.held_until <= now)
        taken = cls.update(due_at=now + interval, held_until=now + lease)
        return taken.where(cls.name == name, cls.due_at <= now, free).execute() == 1

    @classmethod
    def give_back(cls, name):
        cls.update(held_until=None).where(cls.name == name).execute()
