"""Appointment reminders: at each of the workspace's offsets before the start
(24 h and 1 h by default), a message to the customer on the channel of the
appointment's conversation, queued for the send job like any outbound
message, and appointment.reminder_sent.

Each offset is done once per start time, recorded in appointment_reminder
(unique, so a restart or a second process never sends one twice). A reminder
that cannot go is recorded as skipped with the reason; of several due at
once (an appointment booked 30 minutes ahead) only the nearest is sent.
`next_reminder_at` on the appointment says when the job next looks at it.
"""

from datetime import timedelta

from peewee import IntegrityError

from .. import formats, scheduler
from ..channels import adapters
from ..db import transaction
from ..events import emit
from ..models import Appointment, AppointmentReminder, Channel, Conversation
from ..models.appointments import ACTIVE_STATUSES
from ..models.base import utcnow
from . import appointment_calendar, appointments
from .messages import queue_text

BATCH = 200  # appointments looked at per run


@scheduler.job("APPOINTMENTS_REMINDER_POLL_SECONDS")
def send_reminders(now=None):
    """Do every reminder that is due; returns how many appointments were looked at."""
    now = now or utcnow()
    due = [row.id for row in Appointment.reminders_due(now, BATCH)]
    for appointment_id in due:
        try:
            _remind(appointment_id, now)
        except IntegrityError:
            pass  # another process recorded it first: it is done
    return len(due)


def _remind(appointment_id, now):
    with transaction():
        appointment = Appointment.get_or_none(Appointment.id == appointment_id)
        if appointment is None or appointment.status not in ACTIVE_STATUSES:
            return
        if appointment.next_reminder_at is None or appointment.next_reminder_at > now:
            return  # done by another process since it was listed
        offsets = appointment_calendar.settings_of(appointment.workspace_id).reminder_offsets
        done = AppointmentReminder.done_offsets(appointment)
        due = sorted(o for o in offsets if o not in done and _due_at(appointment, o) <= now)
        if due:
            _do(appointment, due, now)
        waiting = [_due_at(appointment, o) for o in offsets if o not in done and o not in due]
        begun = appointment.start_at <= now
        appointment.next_reminder_at = None if begun or not waiting else min(waiting)
        appointment.save(keep_updated_at=True)


def _due_at(appointment, offset):
    return appointment.start_at - timedelta(minutes=offset)


def _do(appointment, due, now):
    nearest, *older = due
    for offset in older:
        _record(appointment, offset, now, "skipped", f"superseded by the {nearest}-minute reminder")
    if appointment.start_at <= now:
        _record(appointment, nearest, now, "skipped", "the appointment had begun")
        return
    conversation, refusal = _sendable(appointment)
    if refusal:
        _record(appointment, nearest, now, "skipped", refusal)
        return
    zone = appointment_calendar.zone_of(appointment.workspace_id)
    metadata = {"appointment_id": appointment.id, "reminder_offset_minutes": nearest}
    message = queue_text(conversation, "system", reminder_text(appointment, zone), metadata, now)
    _record(appointment, nearest, now, "sent", None, message.id)
    data = appointments.render(appointment, zone)
    data["reminder"] = {"offset_minutes": nearest, "message_id": message.id}
    emit(appointment.workspace_id, "appointment.reminder_sent", formats.jsonable(data), now=now)


def _sendable(appointment):
    """(conversation, None), or (None, why no reminder can go)."""
    conversation = appointment.conversation_id and Conversation.get_or_none(
        Conversation.id == appointment.conversation_id
    )
    if not conversation:
        return None, "the appointment has no conversation to send it on"
    channel = conversation.channel_id and Channel.get_or_none(Channel.id == conversation.channel_id)
    if not channel or not channel.is_active:
        return None, "the conversation has no active channel"
    refusal = adapters.send_refusal(channel)
    return (None, refusal) if refusal else (conversation, None)


def reminder_text(appointment, zone):
    local = appointment.start_at.replace(tzinfo=appointment_calendar.UTC).astimezone(zone)
    when = local.strftime("%A %d %B %Y at %H:%M") + f" ({zone.key})"
    text = f"Reminder: {appointment.title}, {when}."
    if appointment.location:
        text += f" Where: {appointment.location}"
    return text


def _record(appointment, offset, now, outcome, reason, message_id=None):
    AppointmentReminder.create(
        appointment=appointment.id,
        offset_minutes=offset,
        start_at=appointment.start_at,
        outcome=outcome,
        reason=reason,
        message=message_id,
        created_at=now,
    )
