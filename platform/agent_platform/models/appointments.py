"""Appointments of a workspace's contacts, the availability they are booked
in, the workspace's appointment settings (time zone, reminder offsets), and
the reminders sent for them."""

from peewee import CharField, ForeignKeyField, IntegerField, TextField

from .agents import Agent
from .base import BaseModel, JSONField, TimestampedModel, UtcDateTimeField, WorkspaceScoped, utcnow
from .contacts import Contact
from .conversations import Conversation
from .dialect import engine
from .fastsql import execute
from .messages import Message
from .tenancy import Workspace

# scheduled -> rescheduled (any number of times) -> completed or canceled.
STATUSES = ("scheduled", "rescheduled", "completed", "canceled")
ACTIVE_STATUSES = ("scheduled", "rescheduled")
DEFAULT_TIME_ZONE = "UTC"
DEFAULT_REMINDER_OFFSETS = (1440, 60)  # minutes before the start: 24 h and 1 h
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


class AppointmentSettings(TimestampedModel, WorkspaceScoped):
    """One row per workspace that changed the defaults."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", unique=True)
    time_zone = CharField(max_length=64, default=DEFAULT_TIME_ZONE)
    reminder_offsets = JSONField(default=lambda: list(DEFAULT_REMINDER_OFFSETS))

    class Meta:
        table_name = "appointment_settings"

    def as_dict(self):
        return {
            "time_zone": self.time_zone,
            "reminder_offsets_minutes": list(self.reminder_offsets),
            "updated_at": self.updated_at,
        }


class Availability(TimestampedModel, WorkspaceScoped):
    """When appointments can be booked: the workspace's (agent NULL), or one
    agent's own, which replaces the workspace's for that agent."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    agent = ForeignKeyField(Agent, null=True, on_delete="CASCADE", index=False)
    # {"monday": [{"start": "09:00", "end": "12:00"}, ...], ...}, local times
    weekly_hours = JSONField(default=dict)
    slot_minutes = IntegerField()
    buffer_minutes = IntegerField(default=0)
    holidays = JSONField(default=list)  # "YYYY-MM-DD" local dates, sorted

    class Meta:
        indexes = ((("workspace", "agent"), False),)

    @classmethod
    def of(cls, workspace_id, agent_id):
        """The availability set for the agent itself (None: the workspace's)."""
        owner = cls.agent.is_null() if agent_id is None else cls.agent == agent_id
        return cls.in_workspace(workspace_id).where(owner).first()

    def as_dict(self):
        return {
            "agent_id": self.agent_id,
            "weekly_hours": self.weekly_hours,
            "slot_minutes": self.slot_minutes,
            "buffer_minutes": self.buffer_minutes,
            "holidays": self.holidays,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class Appointment(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", index=False)
    # Erasing a contact erases its appointments, as its conversations.
    contact = ForeignKeyField(Contact, on_delete="CASCADE")
    conversation = ForeignKeyField(Conversation, null=True, on_delete="SET NULL")
    # The agent's calendar; None is the workspace's own calendar.
    agent = ForeignKeyField(Agent, null=True, on_delete="SET NULL", index=False)
    start_at = UtcDateTimeField()
    end_at = UtcDateTimeField()
    title = CharField(max_length=200)
    notes = TextField(default="")
    location = TextField(default="")
    status = CharField(max_length=20, default="scheduled")
    reschedule_count = IntegerField(default=0)
    cancel_reason = TextField(null=True)
    canceled_at = UtcDateTimeField(null=True)
    completed_at = UtcDateTimeField(null=True)
    # When the reminder job next has something to do for it (None: nothing).
    next_reminder_at = UtcDateTimeField(null=True, index=True)

    class Meta:
        indexes = (
            (("workspace", "start_at", "id"), False),
            (("workspace", "created_at", "id"), False),
            (("agent", "start_at"), False),
        )

    @classmethod
    def overlapping(cls, workspace_id, agent_id, start, end, buffer, exclude_id=None):
        """Active appointments of the calendar closer than `buffer` to [start,
        end); the calendar stays locked until the transaction ends, so no
        other booking can come between this check and the insert after it
        (SQLite's write lock, BEGIN IMMEDIATE, is held already; PostgreSQL
        locks rows, not a slot no row holds yet)."""
        if engine.postgresql:
            execute("SELECT pg_advisory_xact_lock(hashtext(?))", f"{workspace_id}/{agent_id}")
        owner = cls.agent.is_null() if agent_id is None else cls.agent == agent_id
        query = cls.in_workspace(workspace_id).where(
            owner,
            cls.status.in_(ACTIVE_STATUSES),
            cls.start_at < end + buffer,
            cls.end_at > start - buffer,
        )
        if exclude_id is not None:
            query = query.where(cls.id != exclude_id)
        return query

    @classmethod
    def reminders_due(cls, now, batch):
        return (
            cls.select()
            .where(cls.next_reminder_at <= now, cls.status.in_(ACTIVE_STATUSES))
            .order_by(cls.next_reminder_at, cls.id)
            .limit(batch)
        )

    def as_dict(self):
        return {
            "id": self.id,
            "contact_id": self.contact_id,
            "conversation_id": self.conversation_id,
            "agent_id": self.agent_id,
            "title": self.title,
            "notes": self.notes,
            "location": self.location,
            "status": self.status,
            "start_at": self.start_at,
            "end_at": self.end_at,
            "reschedule_count": self.reschedule_count,
            "cancel_reason": self.cancel_reason,
            "canceled_at": self.canceled_at,
            "completed_at": self.completed_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class AppointmentReminder(BaseModel):
    """One reminder offset done for one start time of an appointment: the
    unique key makes each reminder once, even with two processes; a start
    moved by a reschedule gets its reminders again."""

    appointment = ForeignKeyField(Appointment, on_delete="CASCADE", index=False)
    offset_minutes = IntegerField()
    start_at = UtcDateTimeField()
    outcome = CharField(max_length=20)  # sent | skipped
    reason = TextField(null=True)
    message = ForeignKeyField(Message, null=True, on_delete="SET NULL", index=False)
    created_at = UtcDateTimeField(default=utcnow)

    class Meta:
        table_name = "appointment_reminder"
        indexes = ((("appointment", "offset_minutes", "start_at"), True),)

    @classmethod
    def done_offsets(cls, appointment):
        sql = (
            'SELECT "offset_minutes" FROM "appointment_reminder" '
            'WHERE "appointment_id" = ? AND "start_at" = ?'
        )
        return {row[0] for row in execute(sql, appointment.id, appointment.start_at)}

    def as_dict(self):
        return {
            "offset_minutes": self.offset_minutes,
            "start_at": self.start_at,
            "outcome": self.outcome,
            "reason": self.reason,
            "message_id": self.message_id,
            "created_at": self.created_at,
        }
