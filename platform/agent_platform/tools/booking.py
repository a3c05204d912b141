"""Built-in appointment tools, offered to a model next to the agent's MCP
tools when an availability applies to the agent (its own or the
workspace's), so a customer can book in the chat: free slots, book, the
customer's appointments, reschedule, cancel.

They act for the conversation's contact on the agent's calendar, through the
same services as the API (so the same events, and the same SLOT_TAKEN when
two bookings race). A model may only book a slot that is free and in the
opening hours; it sees and moves only this contact's appointments. Times
given to and by the model are in the workspace's time zone, with the offset.
"""

import json
from datetime import UTC, datetime, timedelta

from ..errors import ApiError
from ..models import Appointment, Availability, Conversation, fastsql
from ..models.appointments import ACTIVE_STATUSES
from ..models.base import utcnow
from ..services import appointment_calendar as calendar
from ..services import appointments

MAX_DAYS = 14  # of one free-slots call
MAX_SLOTS = 30  # slots shown to the model
HORIZON = timedelta(days=366)  # how far from now a model's times may be
_START = {"type": "string", "description": "Start, ISO 8601 with the offset, as listed"}
_ID = {"type": "string", "description": "The appointment's id, as listed"}
FUNCTIONS = {
    "appointments_free_slots": (
        "List free appointment slots (times in the business's time zone).",
        {
            "from_date": {"type": "string", "description": "First day, YYYY-MM-DD (default today)"},
            "days": {"type": "integer", "description": f"Days to look at, 1 to {MAX_DAYS}"},
        },
        [],
    ),
    "appointments_book": (
        "Book a free slot for this customer. Use a start listed by appointments_free_slots.",
        {"start_at": _START, "title": {"type": "string"}, "notes": {"type": "string"}},
        ["start_at"],
    ),
    "appointments_list": ("List this customer's upcoming appointments.", {}, []),
    "appointments_reschedule": (
        "Move one of this customer's appointments to another free slot.",
        {"appointment_id": _ID, "start_at": _START},
        ["appointment_id", "start_at"],
    ),
    "appointments_cancel": (
        "Cancel one of this customer's appointments.",
        {"appointment_id": _ID, "reason": {"type": "string"}},
        ["appointment_id"],
    ),
}


class ToolRefused(Exception):
    """What the model is told instead of a result."""


class AppointmentTools:
    names = tuple(FUNCTIONS)

    def __init__(self, workspace_id, agent_id, conversation_id):
        self.workspace_id, self.agent_id = workspace_id, agent_id
        self.conversation_id = conversation_id

    @classmethod
    def for_agent(cls, agent, conversation_id):
        """The tools, when an availability applies to the agent; else None."""
        sql = (
            'SELECT 1 FROM "availability" WHERE "workspace_id" = ? '
            'AND ("agent_id" IS NULL OR "agent_id" = ?) LIMIT 1'
        )
        if fastsql.scalar(sql, agent.workspace_id, agent.id) is None:
            return None
        return cls(agent.workspace_id, agent.id, conversation_id)

    def functions(self):
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": {"type": "object", "properties": properties, "required": needs},
                },
            }
            for name, (description, properties, needs) in FUNCTIONS.items()
        ]

    def call(self, name, arguments):
        """The result as JSON text; raises ToolRefused with what went wrong."""
        handler = getattr(self, "_" + name.removeprefix("appointments_"))
        try:
            return json.dumps(handler(arguments), ensure_ascii=False)
        except ApiError as error:
            raise ToolRefused(f"{error.code}: {error.message}") from None

    # --- the tools --------------------------------------------------------------------------

    def _free_slots(self, arguments):
        zone = calendar.zone_of(self.workspace_id)
        days = _integer(arguments.get("days", 7), "days", 1, MAX_DAYS)
        first = arguments.get("from_date")
        start = _moment(str(first)[:10], zone, "from_date") if first else utcnow()
        _, zone, slots = calendar.free_slots(
            self.workspace_id, self.agent_id, start, start + timedelta(days=days)
        )
        shown = [calendar.slot_dict(slot, zone) for slot in slots[:MAX_SLOTS]]
        return {
            "time_zone": zone.key,
            "slots": [
                {"start_at": s["start_at_local"], "end_at": s["end_at_local"]} for s in shown
            ],
        }

    def _book(self, arguments):
        conversation = self._conversation()
        start = self._free_start(arguments)
        values = {
            "contact_id": conversation.contact_id,
            "conversation_id": conversation.id,
            "agent_id": self.agent_id,
            "start_at": start,
            "title": _text(arguments.get("title"), 200) or "Appointment",
            "notes": _text(arguments.get("notes"), 4000) or "",
        }
        return _summary(appointments.create_appointment(self.workspace_id, values))

    def _list(self, arguments):
        conversation = self._conversation()
        query = Appointment.in_workspace(self.workspace_id).where(
            Appointment.contact == conversation.contact_id,
            Appointment.status.in_(ACTIVE_STATUSES),
            Appointment.start_at > utcnow(),
        )
        zone = calendar.zone_of(self.workspace_id)
        rows = query.order_by(Appointment.start_at).limit(20)
        return {"appointments": [_summary(appointments.render(row, zone)) for row in rows]}

    def _reschedule(self, arguments):
        appointment = self._own(arguments)
        start = self._free_start(arguments, exclude=appointment)
        values = {"start_at": start}
        return _summary(appointments.reschedule(self.workspace_id, appointment.id, values))

    def _cancel(self, arguments):
        appointment = self._own(arguments)
        reason = _text(arguments.get("reason"), 2000)
        return _summary(appointments.cancel(self.workspace_id, appointment.id, reason))

    # --- checks -------------------------------------------------------------------------------

    def _conversation(self):
        conversation = self.conversation_id and Conversation.get_or_none(
            Conversation.id == self.conversation_id
        )
        if not conversation or not conversation.contact_id:
            raise ToolRefused("there is no customer in this conversation to book for")
        return conversation

    def _own(self, arguments):
        """An appointment of this conversation's contact (others are not found)."""
        conversation = self._conversation()
        found = Appointment.get_or_none(
            Appointment.id == str(arguments.get("appointment_id", "")),
            Appointment.workspace == self.workspace_id,
            Appointment.contact == conversation.contact_id,
        )
        if found is None:
            raise ToolRefused("this customer has no appointment with that id")
        return found

    def _free_start(self, arguments, exclude=None):
        """The UTC start given, when it begins a free slot of the calendar."""
        zone = calendar.zone_of(self.workspace_id)
        start = _moment(arguments.get("start_at"), zone, "start_at")
        availability = Availability.of(self.workspace_id, self.agent_id) or Availability.of(
            self.workspace_id, None
        )
        end = start + timedelta(minutes=availability.slot_minutes)
        exclude_id = exclude.id if exclude else None
        slots = calendar.free_slots(
            self.workspace_id, self.agent_id, start, end, exclude_id=exclude_id
        )[2]
        if not slots or slots[0][0] != start:
            raise ToolRefused(
                "that time is not a free slot: list the free slots and use a start from them"
            )
        return start


def _moment(text, zone, name):
    """An ISO 8601 time (local to `zone` without an offset) as naive UTC,
    from now to a year ahead."""
    try:
        moment = datetime.fromisoformat(str(text))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=zone)
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, TypeError, OverflowError):
        raise ToolRefused(f"{name} must be an ISO 8601 date or time") from None
    now = utcnow()
    if not now - HORIZON <= moment <= now + HORIZON:
        raise ToolRefused(f"{name} must be within a year from now")
    return moment


def _summary(rendered):
    return {
        "id": rendered["id"],
        "title": rendered["title"],
        "status": rendered["status"],
        "start_at": rendered["start_at_local"],
        "end_at": rendered["end_at_local"],
    }


def _integer(value, name, low, high):
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ToolRefused(f"{name} must be an integer from {low} to {high}")
    return value


def _text(value, limit):
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolRefused("title, notes and reason must be strings")
    # One line of visible text, as the API's names are.
    return "".join(char for char in value if char.isprintable()).strip()[:limit]
