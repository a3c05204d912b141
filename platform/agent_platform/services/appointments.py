"""Appointments: booked, rescheduled any number of times, then completed or
canceled; each move raises its events in the transaction that makes it.

Two appointments of one calendar (an agent's, or the workspace's own when
no agent is named) never come closer than the availability's buffer: the
check and the insert run in one write transaction (BEGIN IMMEDIATE), so of
two bookings racing for one slot one wins and the other is 409 SLOT_TAKEN.
"""

from datetime import timedelta

from .. import formats
from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import emit
from ..models import Appointment, AppointmentReminder, Conversation
from ..models.appointments import ACTIVE_STATUSES
from ..models.base import utcnow
from ..models.pagination import paginate
from . import agents, appointment_calendar, contacts, scoring

MAX_LENGTH = timedelta(hours=24)
# How far ahead an appointment may be: its times, with any buffer and in any
# time zone, stay far from the end of the calendar (no overflow).
HORIZON = appointment_calendar.HORIZON


def not_found(appointment_id):
    return NotFound(f"Appointment {appointment_id} not found.", code="APPOINTMENT_NOT_FOUND")


def get_appointment(workspace_id, appointment_id):
    return Appointment.get_in_workspace(workspace_id, appointment_id, not_found(appointment_id))


def render(appointment, zone=None):
    """The appointment's JSON form: UTC times, and the same in the workspace's zone."""
    zone = zone or appointment_calendar.zone_of(appointment.workspace_id)
    return {
        **appointment.as_dict(),
        "time_zone": zone.key,
        "start_at_local": appointment_calendar.local_text(appointment.start_at, zone),
        "end_at_local": appointment_calendar.local_text(appointment.end_at, zone),
    }


def show(workspace_id, appointment_id):
    return render(get_appointment(workspace_id, appointment_id))


def list_appointments(workspace_id, paging, **filters):
    query = Appointment.in_workspace(workspace_id)
    for name in ("status", "agent_id", "contact_id", "conversation_id"):
        if filters.get(name) is not None:
            query = query.where(getattr(Appointment, name) == str(filters[name]))
    if filters.get("start_from") is not None:
        query = query.where(Appointment.start_at >= filters["start_from"])
    if filters.get("start_to") is not None:
        query = query.where(Appointment.start_at < filters["start_to"])
    page = paginate(query, Appointment, paging)
    zone = appointment_calendar.zone_of(workspace_id)
    page.items = [render(item, zone) for item in page.items]
    return page


def reminders_of(workspace_id, appointment_id):
    appointment = get_appointment(workspace_id, appointment_id)
    rows = AppointmentReminder.select().where(AppointmentReminder.appointment == appointment.id)
    return [
        row.as_dict()
        for row in rows.order_by(AppointmentReminder.created_at, AppointmentReminder.id)
    ]


# --- moves ---------------------------------------------------------------------------------


def create_appointment(workspace_id, values, now=None):
    """Book an appointment (status scheduled): appointment.created and
    appointment.scheduled."""
    now = now or utcnow()
    with transaction():
        contact = contacts.get_contact(workspace_id, str(values["contact_id"]))
        conversation = _conversation(workspace_id, values.get("conversation_id"), contact.id)
        agent_id = _agent_id(workspace_id, values, conversation)
        start, end = _period(workspace_id, agent_id, values, now)
        check_free(workspace_id, agent_id, start, end)
        appointment = Appointment.create(
            workspace=workspace_id,
            contact=contact.id,
            conversation=conversation.id if conversation else None,
            agent=agent_id,
            start_at=start,
            end_at=end,
            title=values.get("title") or "Appointment",
            notes=values.get("notes", ""),
            location=values.get("location", ""),
            next_reminder_at=now,  # the reminder job works out the first one
            created_at=now,
            updated_at=now,
        )
        data = formats.jsonable(render(appointment))
        emit(workspace_id, "appointment.created", data, now=now)
        emit(workspace_id, "appointment.scheduled", data, now=now)
        scoring.on_appointment(workspace_id, contact.id, now)  # the lead's appointment_booked
        return render(appointment)


def update_appointment(workspace_id, appointment_id, changes, now=None):
    """Change the title, notes or location (no event: the catalog has none)."""
    with transaction():
        appointment = get_appointment(workspace_id, appointment_id)
        for name in ("title", "notes", "location"):
            if name in changes:
                setattr(appointment, name, changes[name])
        appointment.updated_at = now or utcnow()
        appointment.save(keep_updated_at=True)
        return render(appointment)


def reschedule(workspace_id, appointment_id, values, now=None):
    """Move an active appointment (status rescheduled): appointment.rescheduled,
    with the previous times; its reminders are due again for the new start."""
    now = now or utcnow()
    with transaction():
        appointment = _active(workspace_id, appointment_id, "rescheduled")
        previous = {"start_at": appointment.start_at, "end_at": appointment.end_at}
        length = appointment.end_at - appointment.start_at
        values = {"end_at": values["start_at"] + length, **values}
        start, end = _period(workspace_id, appointment.agent_id, values, now)
        check_free(workspace_id, appointment.agent_id, start, end, exclude_id=appointment.id)
        appointment.start_at, appointment.end_at = start, end
        appointment.status = "rescheduled"
        appointment.reschedule_count += 1
        appointment.next_reminder_at = now
        _saved(appointment, now)
        data = formats.jsonable({**render(appointment), "previous": previous})
        emit(workspace_id, "appointment.rescheduled", data, now=now)
        return render(appointment)


def cancel(workspace_id, appointment_id, reason=None, now=None):
    """Cancel an active appointment: appointment.cancelled and appointment.canceled."""
    now = now or utcnow()
    with transaction():
        appointment = _active(workspace_id, appointment_id, "canceled")
        appointment.status, appointment.canceled_at = "canceled", now
        appointment.cancel_reason = reason
        appointment.next_reminder_at = None
        _saved(appointment, now)
        data = formats.jsonable(render(appointment))
        emit(workspace_id, "appointment.cancelled", data, now=now)
        emit(workspace_id, "appointment.canceled", data, now=now)
        scoring.on_appointment(workspace_id, appointment.contact_id, now)
        return render(appointment)


def complete(workspace_id, appointment_id, now=None):
    """Mark an active appointment done: appointment.completed."""
    now = now or utcnow()
    with transaction():
        appointment = _active(workspace_id, appointment_id, "completed")
        appointment.status, appointment.completed_at = "completed", now
        appointment.next_reminder_at = None
        _saved(appointment, now)
        emit(workspace_id, "appointment.completed", formats.jsonable(render(appointment)), now=now)
        return render(appointment)


def check_free(workspace_id, agent_id, start, end, exclude_id=None):
    """409 SLOT_TAKEN when an active appointment of the calendar is closer
    than the buffer. Call it in the write transaction that books."""
    availability = appointment_calendar.applicable(workspace_id, agent_id)
    buffer = timedelta(minutes=availability.buffer_minutes if availability else 0)
    clash = Appointment.overlapping(workspace_id, agent_id, start, end, buffer, exclude_id).first()
    if clash is not None:
        raise Conflict(
            f"The slot is taken: appointment {clash.id} is booked from "
            f"{formats.utc_timestamp(clash.start_at)} to {formats.utc_timestamp(clash.end_at)}"
            + (f", and {buffer.seconds // 60} minutes are kept free around it." if buffer else "."),
            code="SLOT_TAKEN",
        )


def _active(workspace_id, appointment_id, move):
    appointment = get_appointment(workspace_id, appointment_id)
    if appointment.status not in ACTIVE_STATUSES:
        raise Conflict(
            f"Appointment {appointment.id} is {appointment.status}: it cannot be {move}.",
            code="APPOINTMENT_NOT_ACTIVE",
        )
    return appointment


def _saved(appointment, now):
    appointment.updated_at = now
    appointment.save(keep_updated_at=True)


def _conversation(workspace_id, conversation_id, contact_id):
    if conversation_id is None:
        return None
    conversation = Conversation.get_in_workspace(
        workspace_id,
        str(conversation_id),
        NotFound(f"Conversation {conversation_id} not found.", code="CONVERSATION_NOT_FOUND"),
    )
    if conversation.contact_id != contact_id:
        raise ValidationError("conversation_id", "the conversation is with another contact")
    return conversation


def _agent_id(workspace_id, values, conversation):
    """The agent named (null: the workspace's calendar), else the conversation's."""
    if "agent_id" in values:
        agent_id = values["agent_id"]
        return agents.live_agent_id(workspace_id, str(agent_id)) if agent_id else None
    return conversation.agent_id if conversation else None


def _period(workspace_id, agent_id, values, now):
    start, end = values["start_at"], values.get("end_at")
    if start <= now:
        raise ValidationError("start_at", "must be in the future")
    if start > now + HORIZON:
        raise ValidationError("start_at", "must be within 10 years from now")
    if end is None:
        availability = appointment_calendar.applicable(workspace_id, agent_id)
        if availability is None:
            raise ValidationError(
                "end_at",
                "required for a calendar without availability (its slot length is the default)",
                code="MISSING_REQUIRED_FIELD",
            )
        end = start + timedelta(minutes=availability.slot_minutes)
    if end <= start:
        raise ValidationError("end_at", "must be after start_at")
    if end - start > MAX_LENGTH:
        raise ValidationError("end_at", "an appointment lasts at most 24 hours")
    return start, end
