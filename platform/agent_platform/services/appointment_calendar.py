"""The calendar appointments are booked in: the workspace's appointment
settings (its time zone and reminder offsets), availability (the
workspace's, or an agent's own, which replaces it for that agent) and the
free slots it leaves.

Opening hours and holidays are read in the workspace's time zone; a local
time that does not exist (the hour skipped when clocks go forward) offers no
slot. Appointments are stored in UTC.
"""

from datetime import UTC, datetime, time, timedelta
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..models import Appointment, AppointmentSettings, Availability
from ..models.appointments import WEEKDAYS
from ..models.base import new_id, utcnow
from . import agents

MAX_SPAN = timedelta(days=31)  # of one free-slots query
HORIZON = timedelta(days=3660)  # as far ahead as appointments may be
MAX_SLOTS = 500  # of one free-slots answer
DEFAULT_SPAN = timedelta(days=7)


@cache
def _time_zones():
    """Every IANA time zone name the system knows. `localtime` is left out:
    it is the host's own setting, not a name, and would move with the host."""
    return frozenset(available_timezones()) - {"localtime"}


def is_time_zone(name):
    return name in _time_zones()


# --- settings --------------------------------------------------------------------------


def settings_of(workspace_id):
    """The workspace's settings (the defaults, unsaved, when never changed)."""
    found = AppointmentSettings.in_workspace(workspace_id).first()
    return found or AppointmentSettings(workspace=workspace_id, id=None, updated_at=None)


def zone_of(workspace_id):
    return ZoneInfo(settings_of(workspace_id).time_zone)


def update_settings(workspace_id, changes, now=None):
    now = now or utcnow()
    with transaction():
        settings = settings_of(workspace_id)
        if "time_zone" in changes:
            settings.time_zone = changes["time_zone"]
        if "reminder_offsets_minutes" in changes:
            settings.reminder_offsets = sorted(
                set(changes["reminder_offsets_minutes"]), reverse=True
            )
            # Each active appointment's next reminder is worked out again.
            Appointment.update(next_reminder_at=now).where(
                Appointment.workspace == workspace_id,
                Appointment.status.in_(("scheduled", "rescheduled")),
                Appointment.start_at > now,
            ).execute()
        settings.updated_at = now
        _save(settings)
        return settings


# --- availability ----------------------------------------------------------------------


def availability_not_set(agent_id=None):
    whose = f"agent {agent_id}" if agent_id else "the workspace"
    return NotFound(f"No availability is set for {whose}.", code="AVAILABILITY_NOT_FOUND")


def get_availability(workspace_id, agent_id=None):
    """The availability set for the agent itself, or the workspace's (agent None)."""
    if agent_id is not None:
        agent_id = agents.live_agent_id(workspace_id, agent_id)
    found = Availability.of(workspace_id, agent_id)
    if found is None:
        raise availability_not_set(agent_id)
    return found


def applicable(workspace_id, agent_id):
    """The availability booking on the agent's calendar follows: its own,
    else the workspace's; None when neither is set."""
    found = Availability.of(workspace_id, agent_id) if agent_id else None
    return found or Availability.of(workspace_id, None)


def set_availability(workspace_id, values, agent_id=None, now=None):
    now = now or utcnow()
    weekly_hours = _checked_hours(values["weekly_hours"])
    with transaction():
        if agent_id is not None:
            agent_id = agents.live_agent_id(workspace_id, agent_id)
        found = Availability.of(workspace_id, agent_id)
        found = found or Availability(workspace=workspace_id, agent=agent_id, id=None)
        found.weekly_hours = weekly_hours
        found.slot_minutes = values["slot_minutes"]
        found.buffer_minutes = values.get("buffer_minutes", 0)
        found.holidays = sorted({day.isoformat() for day in values.get("holidays", [])})
        found.updated_at = now
        return _save(found)


def _save(row):
    """Insert a new row (id None) with an id of its own, else update it."""
    if row.id is None:
        row.id, row.created_at = new_id(), row.updated_at
        row.save(force_insert=True)
    else:
        row.save(keep_updated_at=True)
    return row


def delete_availability(workspace_id, agent_id=None):
    with transaction():
        get_availability(workspace_id, agent_id).delete_instance()


def _checked_hours(weekly_hours):
    """Each day's intervals sorted, each ending after it starts, none overlapping."""
    checked = {}
    for day in WEEKDAYS:
        intervals = sorted(weekly_hours.get(day, []), key=lambda item: item["start"])
        for index, interval in enumerate(intervals):
            field = f"weekly_hours.{day}[{index}]"
            if _minutes(interval["end"]) <= _minutes(interval["start"]):
                raise ValidationError(field, "end must be after start")
            if index and _minutes(interval["start"]) < _minutes(intervals[index - 1]["end"]):
                raise ValidationError(field, "intervals of a day must not overlap")
        if intervals:
            checked[day] = [{"start": i["start"], "end": i["end"]} for i in intervals]
    return checked


def _minutes(text):
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


# --- free slots --------------------------------------------------------------------------


def week_after(moment):
    """The default end of a period; near the year 9999, the last time there is."""
    return moment + min(DEFAULT_SPAN, datetime.max - moment)


def check_period(start, end):
    if start > end:
        raise ValidationError("from", "must not be after to")
    if end - start > MAX_SPAN:
        raise ValidationError("to", f"the period may span at most {MAX_SPAN.days} days")


def free_slots(workspace_id, agent_id=None, start=None, end=None, now=None, exclude_id=None):
    """The free slots of the agent's calendar (None: the workspace's) from
    `start` to `end` (UTC, default now and a week later): in opening hours,
    not on a holiday, not in the past, and not closer than the buffer to an
    active appointment (but `exclude_id`, one being moved). Returns
    (availability, zone, [(start, end), ...])."""
    now = now or utcnow()
    if agent_id is not None:
        agent_id = agents.live_agent_id(workspace_id, agent_id)
    start = max(start or now, now)
    # Nothing is booked beyond HORIZON: no slot there (and no date overflows).
    end = min(end or week_after(start), now + HORIZON)
    start = min(start, end)
    availability = applicable(workspace_id, agent_id)
    if availability is None:
        raise Conflict(
            f"No availability applies to {'agent ' + agent_id if agent_id else 'the workspace'}"
            ": set the workspace's (PUT /v1/appointments/availability) or the agent's.",
            code="AVAILABILITY_NOT_SET",
        )
    zone = zone_of(workspace_id)
    buffer = timedelta(minutes=availability.buffer_minutes)
    taken = [
        (row.start_at - buffer, row.end_at + buffer)
        for row in Appointment.overlapping(workspace_id, agent_id, start, end, buffer, exclude_id)
    ]
    slots = []
    for slot in _opening_slots(availability, zone, start, end):
        if not any(slot[0] < until and since < slot[1] for since, until in taken):
            slots.append(slot)
            if len(slots) == MAX_SLOTS:
                break
    return availability, zone, slots


def _opening_slots(availability, zone, start, end):
    """Every slot of the opening hours from `start` to `end` (UTC), in order."""
    length = timedelta(minutes=availability.slot_minutes)
    step = length + timedelta(minutes=availability.buffer_minutes)
    holidays = set(availability.holidays)
    day = _local(start, zone).date() - timedelta(days=1)
    last = _local(end, zone).date()
    while day <= last:
        if day.isoformat() not in holidays:
            for interval in availability.weekly_hours.get(WEEKDAYS[day.weekday()], []):
                yield from _interval_slots(day, interval, zone, length, step, start, end)
        day += timedelta(days=1)


def _interval_slots(day, interval, zone, length, step, start, end):
    midnight = datetime.combine(day, time())
    moment = midnight + timedelta(minutes=_minutes(interval["start"]))
    closing = midnight + timedelta(minutes=_minutes(interval["end"]))
    while moment + length <= closing:
        begins = to_utc(moment, zone)
        if begins is not None and start <= begins and begins + length <= end:
            yield begins, begins + length
        moment += step


def to_utc(local, zone):
    """A naive local time as naive UTC; None for one that does not exist."""
    aware = local.replace(tzinfo=zone)
    utc = aware.astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) != local:
        return None  # in the gap of a clock change
    return utc.replace(tzinfo=None)


def _local(moment, zone):
    return moment.replace(tzinfo=UTC).astimezone(zone)


def local_text(moment, zone):
    """A stored UTC time in the zone, ISO 8601 with its offset."""
    return _local(moment, zone).isoformat(timespec="seconds")


def free_slots_view(workspace_id, agent_id=None, start=None, end=None, now=None):
    """free_slots as the API shows them."""
    now = now or utcnow()
    check_period(start or now, end or week_after(start or now))
    agent_id = str(agent_id) if agent_id else None
    availability, zone, slots = free_slots(workspace_id, agent_id, start, end, now)
    return {
        "agent_id": agent_id,
        "time_zone": zone.key,
        "slot_minutes": availability.slot_minutes,
        "slots": [slot_dict(slot, zone) for slot in slots],
    }


def slot_dict(slot, zone):
    return {
        "start_at": slot[0],
        "end_at": slot[1],
        "start_at_local": local_text(slot[0], zone),
        "end_at_local": local_text(slot[1], zone),
    }
