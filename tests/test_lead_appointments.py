"""The appointment_booked scoring rule: an appointment the contact has
(booked through the API or by the agent in the chat) scores its lead, a
cancellation takes the points back, and the threshold qualifies on it."""

from conftest import assert_error
from conversations_helpers import data, events
from openai_stub import answer, tool_calls
from replies_helpers import at, customer_says, fake, run_replies  # noqa: F401  (fixture)
from test_appointment_tools import clinic, fresh_stub, local, settings, stub  # noqa: F401
from test_appointments import book, contact, next_monday, open_hours, soon
from test_leads import lead_of, make_lead, make_rule


def booked_rule(caller, points=40):
    return make_rule(caller, "appointment_booked", points)


def test_an_appointment_scores_until_it_is_canceled(caller):
    open_hours(caller)
    person = contact(caller)
    rule = booked_rule(caller)
    lead = make_lead(caller, person)
    assert lead["score"] == 0

    first = book(caller, person, soon(days=2))
    scored = lead_of(caller, lead["id"])
    assert scored["score"] == 40
    assert scored["score_reasons"] == [
        {"rule_id": rule["id"], "name": rule["name"], "kind": "appointment_booked", "points": 40}
    ]
    assert events(caller.workspace_id, "lead.updated")[-1][1]["score"] == 40

    second = book(caller, person, soon(days=3))
    later = (soon(days=4)).isoformat() + "Z"
    moved = caller.post(f"/v1/appointments/{first['id']}/reschedule", json={"start_at": later})
    assert moved.status_code == 200
    data(caller.post(f"/v1/appointments/{first['id']}/cancel", json={}))
    assert lead_of(caller, lead["id"])["score"] == 40  # the second one still stands
    data(caller.post(f"/v1/appointments/{second['id']}/complete"))
    assert lead_of(caller, lead["id"])["score"] == 40  # a visit that took place counts
    third = book(caller, person, soon(days=5))
    data(caller.post(f"/v1/appointments/{third['id']}/cancel", json={"reason": "ill"}))
    assert lead_of(caller, lead["id"])["score"] == 40


def test_canceling_the_only_appointment_takes_the_points_back(caller):
    open_hours(caller)
    person = contact(caller)
    booked_rule(caller, 25)
    lead = make_lead(caller, person)
    appointment = book(caller, person, soon(days=2))
    assert lead_of(caller, lead["id"])["score"] == 25
    data(caller.post(f"/v1/appointments/{appointment['id']}/cancel", json={}))
    unscored = lead_of(caller, lead["id"])
    assert (unscored["score"], unscored["score_reasons"]) == (0, [])


def test_a_booking_reaching_the_threshold_qualifies_the_lead(caller):
    open_hours(caller)
    person = contact(caller)
    booked_rule(caller, 60)
    data(caller.patch("/v1/leads/settings", json={"qualify_threshold": 60}))
    lead = make_lead(caller, person)
    assert lead["status"] == "new"
    book(caller, person, soon(days=2))
    qualified = lead_of(caller, lead["id"])
    assert (qualified["status"], qualified["score"]) == ("qualified", 60)
    [(_, raised)] = events(caller.workspace_id, "lead.qualified")
    assert raised["automatic"] is True and raised["id"] == lead["id"]


def test_appointments_booked_before_the_lead_count_when_it_is_made(caller):
    open_hours(caller)
    person, other_person = contact(caller), contact(caller, "Caio", "+5511922223333")
    booked_rule(caller, 30)
    book(caller, person, soon(days=2))
    canceled = book(caller, other_person, soon(days=3))
    data(caller.post(f"/v1/appointments/{canceled['id']}/cancel", json={}))
    assert make_lead(caller, person)["score"] == 30
    assert make_lead(caller, other_person)["score"] == 0  # its one appointment was canceled


def test_a_rule_added_later_scores_leads_that_have_appointments(caller):
    open_hours(caller)
    person = contact(caller)
    lead = make_lead(caller, person)
    book(caller, person, soon(days=2))
    assert lead_of(caller, lead["id"])["score"] == 0  # no rule yet
    booked_rule(caller, 15)
    assert lead_of(caller, lead["id"])["score"] == 15


def test_the_rule_takes_no_params(caller):
    body = {"name": "Booked", "kind": "appointment_booked", "points": 10}
    refused = caller.post("/v1/leads/scoring-rules", json={**body, "params": {"at_least": 1}})
    assert_error(refused, 400, "VALIDATION_ERROR", "params.at_least")
    made = data(caller.post("/v1/leads/scoring-rules", json={**body, "params": {}}), 201)
    assert (made["kind"], made["params"]) == ("appointment_booked", {})


def test_the_agent_booking_in_the_chat_scores_the_lead(caller, clinic, stub):  # noqa: F811
    booked_rule(caller, 50)
    data(caller.patch("/v1/leads/settings", json={"auto_create_leads": True}))
    day = next_monday().date()
    stub.script(
        tool_calls(("appointments_book", {"start_at": local(day, 9), "title": "First visit"})),
        answer("You are booked on Monday at 9:00."),
    )
    customer_says(clinic["channel_id"], "Can I book a visit on Monday at 9?", at(0))
    [lead] = caller.get("/v1/leads").get_json()["data"]
    assert lead["score"] == 0
    run_replies(at(2))
    [appointment] = data(caller.get("/v1/appointments"))
    assert appointment["contact_id"] == lead["contact_id"]
    scored = lead_of(caller, lead["id"])
    assert scored["score"] == 50 and scored["score_reasons"][0]["kind"] == "appointment_booked"
