"""Schemas of appointments, availability, free slots and appointment settings."""

import marshmallow as ma
from marshmallow import fields, validate

from ...models.appointments import STATUSES, WEEKDAYS
from ...services.appointment_calendar import is_time_zone
from ..pagination import ListQuery
from .common import Name, UtcDate, UtcDateTime
from .rendered import RenderedSchema

HOUR_MINUTE = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
HOUR_MINUTE_OR_MIDNIGHT = r"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"
MAX_OFFSET = 10080  # minutes: a reminder at most a week before


def _time_zone_name():
    description = "The workspace's time zone (an IANA name)"
    return fields.String(metadata={"description": description, "example": "Europe/Lisbon"})


def _local_time(description):
    return fields.String(metadata={"format": "date-time", "description": description})


class _Dicts(RenderedSchema):
    """Objects the service renders to dicts already."""

    render = staticmethod(dict)


# --- appointments ----------------------------------------------------------------------------


class AppointmentSchema(_Dicts):
    id = fields.String()
    contact_id = fields.String()
    conversation_id = fields.String(allow_none=True)
    agent_id = fields.String(
        allow_none=True, metadata={"description": "The agent's calendar; null: the workspace's"}
    )
    title = fields.String()
    notes = fields.String()
    location = fields.String(metadata={"description": "An address or a meeting link"})
    status = fields.String(metadata={"enum": list(STATUSES)})
    start_at = UtcDateTime()
    end_at = UtcDateTime()
    time_zone = _time_zone_name()
    start_at_local = _local_time("start_at in the workspace's time zone, with its offset")
    end_at_local = _local_time("end_at in the workspace's time zone, with its offset")
    reschedule_count = fields.Integer()
    cancel_reason = fields.String(allow_none=True)
    canceled_at = UtcDateTime(allow_none=True)
    completed_at = UtcDateTime(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


def _title(**kwargs):
    return Name(validate=validate.Length(min=1, max=200), **kwargs)


class AppointmentCreateSchema(ma.Schema):
    contact_id = fields.UUID(required=True)
    conversation_id = fields.UUID(
        allow_none=True,
        metadata={"description": "A conversation with the contact: reminders go on its channel"},
    )
    agent_id = fields.UUID(
        allow_none=True,
        metadata={"description": "Whose calendar; default the conversation's agent; null: "
                  "the workspace's own calendar"},
    )  # fmt: skip
    start_at = UtcDateTime(
        required=True,
        metadata={"description": "In the future; a time without an offset is UTC"},
    )
    end_at = UtcDateTime(
        metadata={"description": "After start_at, at most 24 hours later; default start_at plus "
                  "the slot length of the calendar's availability"},
    )  # fmt: skip
    title = _title()
    notes = fields.String(validate=validate.Length(max=4000))
    location = fields.String(validate=validate.Length(max=2000))


class AppointmentUpdateSchema(ma.Schema):
    title = _title()
    notes = fields.String(validate=validate.Length(max=4000))
    location = fields.String(validate=validate.Length(max=2000))


class RescheduleSchema(ma.Schema):
    start_at = UtcDateTime(required=True, metadata={"description": "In the future"})
    end_at = UtcDateTime(metadata={"description": "Default: the same length as before"})


class CancelSchema(ma.Schema):
    reason = fields.String(validate=validate.Length(max=2000))


class AppointmentListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at", "start_at")

    status = fields.String(validate=validate.OneOf(STATUSES))
    agent_id = fields.UUID()
    contact_id = fields.UUID()
    conversation_id = fields.UUID()
    start_from = UtcDateTime(data_key="from", metadata={"description": "start_at at or after"})
    start_to = UtcDateTime(data_key="to", metadata={"description": "start_at before"})


class ReminderSchema(ma.Schema):
    offset_minutes = fields.Integer()
    start_at = UtcDateTime(metadata={"description": "The start it was for"})
    outcome = fields.String(metadata={"enum": ["sent", "skipped"]})
    reason = fields.String(allow_none=True, metadata={"description": "Why it was skipped"})
    message_id = fields.String(allow_none=True)
    created_at = UtcDateTime()


# --- availability and free slots --------------------------------------------------------------


class IntervalSchema(ma.Schema):
    start = fields.String(
        required=True, validate=validate.Regexp(HOUR_MINUTE), metadata={"pattern": HOUR_MINUTE}
    )
    end = fields.String(
        required=True,
        validate=validate.Regexp(HOUR_MINUTE_OR_MIDNIGHT),
        metadata={"pattern": HOUR_MINUTE_OR_MIDNIGHT, "description": "After start; 24:00 ends "
                  "the day"},
    )  # fmt: skip


WeeklyHoursSchema = ma.Schema.from_dict(
    {
        day: fields.List(fields.Nested(IntervalSchema), validate=validate.Length(max=12))
        for day in WEEKDAYS
    },
    name="WeeklyHoursSchema",
)


def _week(**kwargs):
    return fields.Nested(WeeklyHoursSchema, **kwargs)


class AvailabilitySchema(ma.Schema):
    agent_id = fields.String(allow_none=True)
    weekly_hours = _week()
    slot_minutes = fields.Integer()
    buffer_minutes = fields.Integer()
    holidays = fields.List(fields.String(metadata={"format": "date"}))
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class AvailabilityPutSchema(ma.Schema):
    weekly_hours = _week(
        required=True,
        metadata={"description": "Opening hours per weekday, local times of the workspace's "
                  "time zone; a day left out is closed"},
    )  # fmt: skip
    slot_minutes = fields.Integer(required=True, validate=validate.Range(min=5, max=1440))
    buffer_minutes = fields.Integer(
        validate=validate.Range(min=0, max=1440),
        metadata={"description": "Kept free before and after each appointment (default 0)"},
    )
    holidays = fields.List(
        UtcDate(), validate=validate.Length(max=1000), metadata={"description": "Closed days"}
    )


class FreeSlotsQuery(ma.Schema):
    agent_id = fields.UUID(
        metadata={"description": "Whose calendar (its own availability, else the "
                  "workspace's); default the workspace's own calendar"},
    )  # fmt: skip
    start = UtcDateTime(data_key="from", metadata={"description": "Default: now"})
    end = UtcDateTime(
        data_key="to", metadata={"description": "Default: 7 days after from; at most 31 days"}
    )


class SlotSchema(ma.Schema):
    start_at = UtcDateTime()
    end_at = UtcDateTime()
    start_at_local = _local_time("In the workspace's time zone")
    end_at_local = _local_time("In the workspace's time zone")


class FreeSlotsSchema(ma.Schema):
    agent_id = fields.String(allow_none=True)
    time_zone = _time_zone_name()
    slot_minutes = fields.Integer()
    slots = fields.List(fields.Nested(SlotSchema), metadata={"description": "At most 500"})


# --- settings ---------------------------------------------------------------------------------


class AppointmentSettingsSchema(ma.Schema):
    time_zone = _time_zone_name()
    reminder_offsets_minutes = fields.List(fields.Integer())
    updated_at = UtcDateTime(allow_none=True)


def _known_time_zone(name):
    if not is_time_zone(name):
        raise ma.ValidationError("unknown time zone: give an IANA name such as Europe/Lisbon")


class AppointmentSettingsPutSchema(ma.Schema):
    # A plain string in the document, checked here against the tz database:
    # an enum of the host's zones made the document change with the host, and
    # broke client generators on its aliases (GMT0, GMT-0, GMT+0).
    time_zone = fields.String(
        validate=_known_time_zone,
        metadata={"description": "An IANA time zone name such as Europe/Lisbon (default UTC): "
                  "appointment times are shown and opening hours read in it",
                  "example": "Europe/Lisbon"},
    )  # fmt: skip
    reminder_offsets_minutes = fields.List(
        fields.Integer(validate=validate.Range(min=1, max=MAX_OFFSET)),
        validate=validate.Length(max=10),
        metadata={"description": "Minutes before the start a reminder is sent, each once "
                  "(default [1440, 60]); [] sends none"},
    )  # fmt: skip
