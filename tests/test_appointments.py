"""Appointments through HTTP: booking, the moves and their events, free
slots in the workspace's time zone (holidays, buffer, a clock change), the
race of two bookings for one slot, refusals, scopes and isolation."""

import threading
from datetime import datetime, timedelta

from agent_platform.models.base import utcnow
from conftest import Caller, assert_error
from conversations_helpers import data, event_names, events, make_agent, setup_chat

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NINE_TO_FIVE = {day: [{"start": "09:00", "end": "17:00"}] for day in WEEKDAYS}


def iso(moment):
    return moment.isoformat() + "Z"


def shown(moment):
    """A time as the API renders it."""
    return moment.isoformat(timespec="microseconds") + "Z"


def soon(days=2, hour=10, minute=0):
    return (utcnow() + timedelta(days=days)).replace(
        hour=hour, minute=minute, second=0, microsecond=0
    )


def next_monday():
    """The Monday at least a week away, 00:00 UTC."""
    day = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=7)
    return day + timedelta(days=(7 - day.weekday()) % 7)


def contact(caller, name="Bia", phone="+5511911112222"):
    return data(caller.post("/v1/contacts", json={"name": name, "phone": phone}), 201)["id"]


def open_hours(caller, path="/v1/appointments/availability", **values):
    body = {"weekly_hours": NINE_TO_FIVE, "slot_minutes": 30, **values}
    return data(caller.put(path, json=body))


def book(caller, contact_id, start, status=201, **values):
    body = {"contact_id": contact_id, "start_at": iso(start), **values}
    response = caller.post("/v1/appointments", json=body)
    return data(response, status) if status < 300 else response


def free(caller, start, end, **query):
    params = {"from": iso(start), "to": iso(end), **query}
    return data(caller.get("/v1/appointments/free-slots", query_string=params))


def test_a_booking_moves_through_its_states_and_raises_each_event(caller):
    open_hours(caller)
    person = contact(caller)
    start = soon()
    booked = book(caller, person, start, title="Haircut", location="Rua Augusta 100")
    assert booked["status"] == "scheduled"
    assert (booked["start_at"], booked["end_at"]) == (
        shown(start),
        shown(start + timedelta(minutes=30)),  # the availability's slot length
    )
    assert (booked["time_zone"], booked["title"], booked["location"]) == (
        "UTC",
        "Haircut",
        "Rua Augusta 100",
    )
    path = f"/v1/appointments/{booked['id']}"
    later = {"start_at": iso(start + timedelta(hours=2))}
    moved = data(caller.post(f"{path}/reschedule", json=later))
    assert (moved["status"], moved["reschedule_count"]) == ("rescheduled", 1)
    assert moved["end_at"] == shown(start + timedelta(hours=2, minutes=30))  # same length
    again = {"start_at": iso(start + timedelta(hours=3)), "end_at": iso(start + timedelta(hours=4))}
    moved = data(caller.post(f"{path}/reschedule", json=again))
    assert (moved["status"], moved["reschedule_count"]) == ("rescheduled", 2)
    assert moved["end_at"] == shown(start + timedelta(hours=4))
    done = data(caller.post(f"{path}/complete"))
    assert done["status"] == "completed" and done["completed_at"]
    assert_error(caller.post(f"{path}/cancel", json={}), 409, "APPOINTMENT_NOT_ACTIVE")
    refused = caller.post(f"{path}/reschedule", json={"start_at": iso(start)})
    assert_error(refused, 409, "APPOINTMENT_NOT_ACTIVE")
    other = book(caller, person, start + timedelta(days=1))
    canceled = data(caller.post(f"/v1/appointments/{other['id']}/cancel", json={"reason": "Ill"}))
    assert (canceled["status"], canceled["cancel_reason"]) == ("canceled", "Ill")
    assert_error(
        caller.post(f"/v1/appointments/{other['id']}/complete"), 409, "APPOINTMENT_NOT_ACTIVE"
    )
    names = [name for name in event_names(caller.workspace_id) if name.startswith("appointment.")]
    assert names == [
        "appointment.created",
        "appointment.scheduled",
        "appointment.rescheduled",
        "appointment.rescheduled",
        "appointment.completed",
        "appointment.created",
        "appointment.scheduled",
        "appointment.cancelled",
        "appointment.canceled",
    ]
    [first, second] = [d for _, d in events(caller.workspace_id, "appointment.rescheduled")]
    assert first["previous"] == {"start_at": shown(start), "end_at": booked["end_at"]}
    assert second["previous"]["start_at"] == shown(start + timedelta(hours=2))
    [cancelled] = [d for _, d in events(caller.workspace_id, "appointment.cancelled")]
    assert cancelled["id"] == other["id"] and cancelled["status"] == "canceled"


def test_an_appointment_is_shown_in_the_workspace_time_zone(caller):
    settings = {"time_zone": "America/Sao_Paulo", "reminder_offsets_minutes": [60, 1440, 60]}
    saved = data(caller.put("/v1/appointments/settings", json=settings))
    assert saved["reminder_offsets_minutes"] == [1440, 60]
    assert data(caller.get("/v1/appointments/settings"))["time_zone"] == "America/Sao_Paulo"
    start = soon(hour=13)
    booked = book(caller, contact(caller), start, end_at=iso(start + timedelta(hours=1)))
    assert booked["time_zone"] == "America/Sao_Paulo"
    assert booked["start_at_local"] == start.replace(hour=10).isoformat() + "-03:00"
    assert booked["end_at_local"] == start.replace(hour=11).isoformat() + "-03:00"
    # The same instant given with an offset is the same UTC time.
    local = (start + timedelta(hours=2)).replace(hour=12).isoformat() + "-03:00"
    shifted = caller.post(
        "/v1/appointments",
        json={
            "contact_id": booked["contact_id"],
            "start_at": local,
            "end_at": iso(start + timedelta(hours=3, minutes=30)),
        },
    )
    assert data(shifted, 201)["start_at"] == shown(start + timedelta(hours=2))


def test_free_slots_follow_hours_holidays_buffer_and_bookings(caller):
    monday = next_monday()
    data(caller.put("/v1/appointments/settings", json={"time_zone": "America/Sao_Paulo"}))
    hours = {"monday": [{"start": "09:00", "end": "12:00"}], "wednesday": [
        {"start": "14:00", "end": "16:00"}, {"start": "09:00", "end": "10:00"}]}  # fmt: skip
    holiday = (monday + timedelta(days=7)).date().isoformat()
    availability = open_hours(
        caller, weekly_hours=hours, slot_minutes=60, buffer_minutes=30, holidays=[holiday]
    )
    assert availability["weekly_hours"]["wednesday"][0]["start"] == "09:00"  # sorted
    assert availability["holidays"] == [holiday]
    found = free(caller, monday, monday + timedelta(days=14))
    assert (found["time_zone"], found["slot_minutes"]) == ("America/Sao_Paulo", 60)
    starts = [slot["start_at_local"] for slot in found["slots"]]
    day = monday.date()
    wednesday = day + timedelta(days=2)
    assert starts == [
        # 09:00-12:00 in slots of 60 with 30 kept between: 09:00, 10:30.
        f"{day}T09:00:00-03:00",
        f"{day}T10:30:00-03:00",
        f"{wednesday}T09:00:00-03:00",
        f"{wednesday}T14:00:00-03:00",
        # the second Monday is a holiday
        f"{wednesday + timedelta(days=7)}T09:00:00-03:00",
        f"{wednesday + timedelta(days=7)}T14:00:00-03:00",
    ]
    assert found["slots"][0]["start_at"] == shown(monday.replace(hour=12))
    # A booking from 09:30 to 10:30 local, with its 30-minute buffer, takes
    # both Monday slots.
    book(caller, contact(caller), monday.replace(hour=12, minute=30))
    assert free(caller, monday, monday + timedelta(days=1))["slots"] == []
    assert_error(
        book(caller, contact(caller, "Caio", "+5511911113333"), monday.replace(hour=12), 409),
        409,
        "SLOT_TAKEN",
    )


def test_a_local_time_skipped_by_a_clock_change_offers_no_slot(caller):
    # Lisbon moves its clocks from 01:00 to 02:00 on Sunday 28 March 2027.
    data(caller.put("/v1/appointments/settings", json={"time_zone": "Europe/Lisbon"}))
    open_hours(
        caller, weekly_hours={"sunday": [{"start": "00:00", "end": "04:00"}]}, slot_minutes=60
    )
    found = free(caller, datetime(2027, 3, 27, 12), datetime(2027, 3, 29))
    assert [slot["start_at_local"] for slot in found["slots"]] == [
        "2027-03-28T00:00:00+00:00",
        "2027-03-28T02:00:00+01:00",
        "2027-03-28T03:00:00+01:00",
    ]
    assert [slot["start_at"] for slot in found["slots"]][1] == shown(datetime(2027, 3, 28, 1))


def test_two_bookings_racing_for_one_slot_one_wins(app, caller):
    open_hours(caller)
    people = [contact(caller, f"P{n}", f"+55119111100{n:02d}") for n in range(8)]
    start = soon(hour=11)
    barrier = threading.Barrier(len(people))
    statuses = []

    def race(person):
        client = Caller(app.test_client(), caller.key, caller.workspace_id)
        barrier.wait()
        response = client.post(
            "/v1/appointments", json={"contact_id": person, "start_at": iso(start)}
        )
        statuses.append((response.status_code, response.get_json()))

    threads = [threading.Thread(target=race, args=(person,)) for person in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(status for status, _ in statuses) == [201] + [409] * 7
    assert {body["error"]["code"] for status, body in statuses if status == 409} == {"SLOT_TAKEN"}
    listed = data(caller.get("/v1/appointments", query_string={"status": "scheduled"}))
    assert len(listed) == 1


def test_calendars_are_per_agent_and_an_agent_may_have_its_own_hours(caller):
    first, second = make_agent(caller, "Ana"), make_agent(caller, "Rui")
    open_hours(caller)
    own = {"monday": [{"start": "07:00", "end": "08:00"}]}
    open_hours(caller, f"/v1/agents/{second}/availability", weekly_hours=own, slot_minutes=60)
    assert_error(caller.get(f"/v1/agents/{first}/availability"), 404, "AVAILABILITY_NOT_FOUND")
    monday = next_monday()
    slots = free(caller, monday, monday + timedelta(days=1), agent_id=second)["slots"]
    assert [slot["start_at"] for slot in slots] == [shown(monday.replace(hour=7))]
    slots = free(caller, monday, monday + timedelta(days=1), agent_id=first)["slots"]
    assert len(slots) == 16  # the workspace's 09:00-17:00 in 30 minutes
    person = contact(caller)
    start = monday.replace(hour=9)
    book(caller, person, start, agent_id=first)
    book(caller, person, start, agent_id=second, end_at=iso(start + timedelta(minutes=30)))
    book(caller, person, start)  # the workspace's own calendar
    assert_error(book(caller, person, start, 409, agent_id=first), 409, "SLOT_TAKEN")
    assert caller.delete(f"/v1/agents/{second}/availability").status_code == 204
    slots = free(caller, monday, monday + timedelta(days=1), agent_id=second)["slots"]
    assert len(slots) == 15  # the workspace's hours now, but for its own booking


def test_a_booking_on_a_conversation_takes_its_agent(caller):
    chat = setup_chat(caller)
    open_hours(caller)
    body = {"conversation_id": chat["conversation"]["id"]}
    booked = book(caller, chat["contact"]["id"], soon(), **body)
    assert (booked["agent_id"], booked["conversation_id"]) == (
        chat["agent_id"],
        chat["conversation"]["id"],
    )
    other = contact(caller, "Caio", "+5511911113333")
    refused = book(caller, other, soon(hour=12), 400, **body)
    assert_error(refused, 400, "VALIDATION_ERROR", "conversation_id")


def test_bad_bookings_and_settings_are_refused_naming_the_field(caller):
    person = contact(caller)
    start = soon()
    assert_error(book(caller, person, start, 400), 400, "MISSING_REQUIRED_FIELD", "end_at")
    open_hours(caller)
    past = utcnow() - timedelta(minutes=1)
    assert_error(book(caller, person, past, 400), 400, "VALIDATION_ERROR", "start_at")
    backwards = book(caller, person, start, 400, end_at=iso(start))
    assert_error(backwards, 400, "VALIDATION_ERROR", "end_at: must be after start_at")
    long = book(caller, person, start, 400, end_at=iso(start + timedelta(hours=25)))
    assert_error(long, 400, "VALIDATION_ERROR", "end_at")
    for body in (
        {"contact_id": person, "start_at": "9999-12-31T23:59:59+99:00"},
        {"contact_id": person, "start_at": iso(start), "title": "\u0000"},
        {"contact_id": "nope", "start_at": iso(start)},
    ):
        assert caller.post("/v1/appointments", json=body).status_code == 400
    for body in (
        {"time_zone": "Mars/Olympus"},
        {"time_zone": "../../etc/passwd"},
        {"reminder_offsets_minutes": [0]},
        {"reminder_offsets_minutes": [10**20]},
        {"reminder_offsets_minutes": [1.5]},  # not rounded to 1
    ):
        refused = caller.put("/v1/appointments/settings", json=body)
        assert_error(refused, 400, "VALIDATION_ERROR", next(iter(body)))
    for hours, problem in (
        ({"monday": [{"start": "10:00", "end": "09:00"}]}, "end must be after start"),
        ({"monday": [{"start": "09:00", "end": "11:00"}, {"start": "10:00", "end": "12:00"}]},
         "must not overlap"),
        ({"monday": [{"start": "24:00", "end": "24:00"}]}, "weekly_hours"),
        ({"someday": []}, "weekly_hours"),
    ):  # fmt: skip
        refused = caller.put(
            "/v1/appointments/availability", json={"weekly_hours": hours, "slot_minutes": 30}
        )
        assert_error(refused, 400, "VALIDATION_ERROR", problem)
    for lengths in ({"slot_minutes": 30.5}, {"slot_minutes": 30, "buffer_minutes": 0.5}):
        refused = caller.put(
            "/v1/appointments/availability", json={"weekly_hours": NINE_TO_FIVE, **lengths}
        )
        assert_error(refused, 400, "VALIDATION_ERROR", list(lengths)[-1])
    assert data(caller.get("/v1/appointments/availability"))["weekly_hours"] == NINE_TO_FIVE
    wide = free(caller, start, start + timedelta(days=31))  # at most 31 days
    assert wide["slots"]
    for query in ({"from": iso(start), "to": iso(start + timedelta(days=32))},
                  {"from": iso(start), "to": iso(start - timedelta(days=1))}):  # fmt: skip
        refused = caller.get("/v1/appointments/free-slots", query_string=query)
        assert refused.status_code == 400
    assert data(caller.get("/v1/appointments")) == []  # nothing was booked


def test_the_edges_of_the_calendar_are_refused_or_empty_never_an_error(caller):
    data(caller.put("/v1/appointments/settings", json={"time_zone": "Pacific/Kiritimati"}))
    open_hours(caller, buffer_minutes=1440, slot_minutes=1440)
    person = contact(caller)
    far = datetime(9999, 12, 30, 23)
    refused = book(caller, person, far, 400, end_at="9999-12-30T23:59:59Z")
    assert_error(refused, 400, "VALIDATION_ERROR", "start_at: must be within 10 years")
    assert free(caller, far - timedelta(days=30), far)["slots"] == []
    last_day = caller.get("/v1/appointments/free-slots", query_string={"from": iso(far)})
    assert data(last_day)["slots"] == []  # its default end, a week on, is past 9999
    assert free(caller, datetime(1970, 1, 1), datetime(1970, 1, 20))["slots"] == []
    assert data(caller.get("/v1/appointments", query_string={"from": iso(far)})) == []


def test_free_slots_need_an_availability(caller):
    assert_error(caller.get("/v1/appointments/free-slots"), 409, "AVAILABILITY_NOT_SET")
    assert_error(caller.get("/v1/appointments/availability"), 404, "AVAILABILITY_NOT_FOUND")


def test_another_workspace_sees_nothing(caller, other, make_caller):
    open_hours(caller)
    booked = book(caller, contact(caller), soon())
    path = f"/v1/appointments/{booked['id']}"
    for method, suffix, body in (
        ("GET", "", None),
        ("PATCH", "", {"title": "Mine"}),
        ("POST", "/reschedule", {"start_at": iso(soon(hour=14))}),
        ("POST", "/cancel", {}),
        ("POST", "/complete", None),
        ("GET", "/reminders", None),
    ):
        response = other.request(method, path + suffix, json=body)
        assert_error(response, 404, "APPOINTMENT_NOT_FOUND")
    assert data(other.get("/v1/appointments")) == []
    open_hours(other)
    theirs = book(other, contact(caller, "Caio", "+5511911113333"), soon(), 404)
    assert_error(theirs, 404, "CONTACT_NOT_FOUND")
    agent = make_agent(caller)
    assert_error(other.get(f"/v1/agents/{agent}/availability"), 404, "AGENT_NOT_FOUND")
    assert data(caller.get(path))["title"] == "Appointment"
    reader = make_caller(["appointments:read"], workspace_id=caller.workspace_id)
    assert data(reader.get(path))["id"] == booked["id"]
    refused = reader.post(f"{path}/cancel", json={})
    assert_error(refused, 403, "INSUFFICIENT_SCOPE", "appointments:write")


def test_listing_filters_and_orders_by_start(caller):
    open_hours(caller)
    person, someone = contact(caller), contact(caller, "Caio", "+5511911113333")
    late = book(caller, person, soon(days=3))
    early = book(caller, someone, soon(days=2))
    data(caller.post(f"/v1/appointments/{late['id']}/cancel", json={}))
    listed = data(caller.get("/v1/appointments"))
    assert [item["id"] for item in listed] == [early["id"], late["id"]]  # newest booked first
    agenda = {"sort": "start_at", "order": "asc"}
    listed = data(caller.get("/v1/appointments", query_string=agenda))
    assert [item["id"] for item in listed] == [early["id"], late["id"]]
    agenda["order"] = "desc"
    listed = data(caller.get("/v1/appointments", query_string=agenda))
    assert [item["id"] for item in listed] == [late["id"], early["id"]]
    only = data(caller.get("/v1/appointments", query_string={"status": "canceled"}))
    assert [item["id"] for item in only] == [late["id"]]
    mine = data(caller.get("/v1/appointments", query_string={"contact_id": someone}))
    assert [item["id"] for item in mine] == [early["id"]]
    window = {"from": iso(soon(days=3)), "to": iso(soon(days=4))}
    assert [i["id"] for i in data(caller.get("/v1/appointments", query_string=window))] == [
        late["id"]
    ]
    changed = data(
        caller.patch(f"/v1/appointments/{early['id']}", json={"notes": "Bring the form"})
    )
    assert changed["notes"] == "Bring the form"
