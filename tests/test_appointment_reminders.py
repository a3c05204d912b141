"""Appointment reminders: the job (driven with now=) queues one message per
offset on the conversation's channel, once, raises appointment.reminder_sent,
and records what it could not send; the send job takes the messages out
through the channel's sender like any other."""

from datetime import timedelta

from agent_platform.models import Message
from agent_platform.models.base import utcnow
from agent_platform.services import sending
from agent_platform.services.appointment_reminders import send_reminders
from conversations_helpers import data, events, setup_chat
from replies_helpers import fake  # noqa: F401  (fixture)
from test_appointments import contact, iso, open_hours

START = (utcnow() + timedelta(days=3)).replace(hour=14, minute=0, second=0, microsecond=0)


def book(caller, chat, start=START, **values):
    body = {
        "contact_id": chat["contact"]["id"],
        "conversation_id": chat["conversation"]["id"],
        "start_at": iso(start),
        "title": "Dental check-up",
        "location": "Rua Augusta 100",
        **values,
    }
    return data(caller.post("/v1/appointments", json=body), 201)


def reminders(caller, appointment):
    return data(caller.get(f"/v1/appointments/{appointment['id']}/reminders"))


def reminder_messages(conversation_id):
    query = Message.select().where(Message.conversation == conversation_id)
    return [m for m in query.order_by(Message.created_at) if "appointment_id" in m.metadata]


def test_each_offset_is_sent_once_on_the_conversation_channel(caller, fake):  # noqa: F811
    chat = setup_chat(caller)
    data(caller.put("/v1/appointments/settings", json={"time_zone": "Europe/Lisbon"}))
    open_hours(caller)
    appointment = book(caller, chat)
    conversation_id = chat["conversation"]["id"]
    send_reminders(now=START - timedelta(hours=25))
    assert reminder_messages(conversation_id) == []
    day_before = START - timedelta(hours=24) + timedelta(minutes=1)
    send_reminders(now=day_before)
    send_reminders(now=day_before + timedelta(minutes=5))  # nothing new: once
    [first] = reminder_messages(conversation_id)
    assert first.text.startswith("Reminder: Dental check-up, ")
    assert "(Europe/Lisbon)" in first.text and "Where: Rua Augusta 100" in first.text
    assert START.strftime("%d %B %Y") in first.text
    assert (first.status, first.sender_type, first.direction) == ("queued", "system", "outbound")
    assert first.metadata == {"appointment_id": appointment["id"], "reminder_offset_minutes": 1440}
    sending.send_queued(now=day_before + timedelta(minutes=6))
    assert [message_id for _, message_id, _ in fake.sent] == [first.id]
    assert Message.get_by_id(first.id).status == "sent"
    send_reminders(now=START - timedelta(minutes=59))
    assert len(reminder_messages(conversation_id)) == 2
    send_reminders(now=START + timedelta(minutes=1))  # begun: nothing more
    done = reminders(caller, appointment)
    assert [(r["offset_minutes"], r["outcome"]) for r in done] == [(1440, "sent"), (60, "sent")]
    raised = [d for _, d in events(caller.workspace_id, "appointment.reminder_sent")]
    assert [d["reminder"]["offset_minutes"] for d in raised] == [1440, 60]
    assert raised[0]["id"] == appointment["id"]
    assert raised[0]["reminder"]["message_id"] == first.id


def test_a_rescheduled_appointment_is_reminded_again_a_canceled_one_never(caller, fake):  # noqa: F811
    chat = setup_chat(caller)
    open_hours(caller)
    appointment = book(caller, chat)
    send_reminders(now=START - timedelta(minutes=30))
    later = START + timedelta(days=2)
    path = f"/v1/appointments/{appointment['id']}"
    data(caller.post(f"{path}/reschedule", json={"start_at": iso(later)}))
    send_reminders(now=later - timedelta(minutes=30))
    outcomes = [
        (r["offset_minutes"], r["outcome"], r["start_at"]) for r in reminders(caller, appointment)
    ]
    assert [o[:2] for o in outcomes] == [
        (1440, "skipped"),
        (60, "sent"),
        (1440, "skipped"),
        (60, "sent"),
    ]
    other = book(caller, chat, START + timedelta(days=5))
    data(caller.post(f"/v1/appointments/{other['id']}/cancel", json={}))
    send_reminders(now=START + timedelta(days=5) - timedelta(minutes=30))
    assert reminders(caller, other) == []


def test_reminders_that_cannot_go_are_recorded_with_the_reason(caller, fake):  # noqa: F811
    open_hours(caller)
    data(caller.put("/v1/appointments/settings", json={"reminder_offsets_minutes": [120, 60, 30]}))
    person = contact(caller, "Caio", "+5511911113333")
    body = {"contact_id": person, "start_at": iso(START)}
    lone = data(caller.post("/v1/appointments", json=body), 201)
    send_reminders(now=START - timedelta(minutes=45))
    done = reminders(caller, lone)
    assert sorted((r["offset_minutes"], r["reason"]) for r in done) == [
        (60, "the appointment has no conversation to send it on"),
        (120, "superseded by the 60-minute reminder"),
    ]
    send_reminders(now=START - timedelta(minutes=29))
    last = reminders(caller, lone)[-1]
    assert (last["offset_minutes"], last["outcome"]) == (30, "skipped")
    assert events(caller.workspace_id, "appointment.reminder_sent") == []


def test_changed_offsets_apply_to_booked_appointments(caller, fake):  # noqa: F811
    chat = setup_chat(caller)
    open_hours(caller)
    appointment = book(caller, chat)
    send_reminders(now=START - timedelta(hours=30))
    data(caller.put("/v1/appointments/settings", json={"reminder_offsets_minutes": [2880]}))
    send_reminders(now=START - timedelta(hours=30))
    [done] = reminders(caller, appointment)
    assert (done["offset_minutes"], done["outcome"]) == (2880, "sent")
