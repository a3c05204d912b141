"""Leads through HTTP: creation, explained scores from rules over facts the
platform knows, manual adjustments, qualification, settings, isolation."""

from datetime import datetime, timedelta

import pytest

from conftest import assert_error
from conversations_helpers import (
    WA_SETTINGS,
    data,
    event_names,
    events,
    inbound,
    make_channel,
    make_contact,
    send,
    setup_chat,
)
from replies_helpers import agent_channel, at, customer_says, fake, make_agent, run_replies  # noqa: F401

T0 = datetime(2026, 3, 2, 9, 0)


def make_lead(caller, contact_id, **values):
    return data(caller.post("/v1/leads", json={"contact_id": contact_id, **values}), 201)


def make_rule(caller, kind, points, **params):
    body = {"name": f"{kind} {points}", "kind": kind, "points": points, "params": params}
    return data(caller.post("/v1/leads/scoring-rules", json=body), 201)


def lead_of(caller, lead_id):
    return data(caller.get(f"/v1/leads/{lead_id}"))


def test_a_lead_is_created_listed_updated_and_deleted_with_events(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"], owner="ana@example.com", notes="met at the fair")
    assert lead["status"] == "new" and lead["source"] == "api" and lead["score"] == 0
    assert lead["score_reasons"] == [] and lead["contact_id"] == contact["id"]

    page = caller.get("/v1/leads?status=new").get_json()
    assert [item["id"] for item in page["data"]] == [lead["id"]]
    assert page["pagination"]["total"] == 1 and page["meta"]["total"] == 1

    changed = data(caller.patch(f"/v1/leads/{lead['id']}", json={"status": "contacted"}))
    assert changed["status"] == "contacted"
    assert caller.delete(f"/v1/leads/{lead['id']}").status_code == 204
    assert_error(caller.get(f"/v1/leads/{lead['id']}"), 404, "LEAD_NOT_FOUND")
    names = event_names(caller.workspace_id)
    assert [n for n in names if n.startswith("lead.")] == [
        "lead.created",
        "lead.updated",
        "lead.deleted",
    ]


def test_a_contact_is_one_lead_and_must_be_in_the_workspace(caller, other):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    make_lead(caller, contact["id"])
    again = caller.post("/v1/leads", json={"contact_id": contact["id"]})
    assert_error(again, 409, "LEAD_EXISTS")
    theirs = other.post("/v1/leads", json={"contact_id": contact["id"]})
    assert_error(theirs, 404, "CONTACT_NOT_FOUND")


def test_converted_is_reached_by_converting_only(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    response = caller.patch(f"/v1/leads/{lead['id']}", json={"status": "converted"})
    assert_error(response, 400, "VALIDATION_ERROR", "status")
    assert lead_of(caller, lead["id"])["status"] == "new"


def test_the_score_explains_itself_and_follows_new_messages(caller):
    chat = setup_chat(caller, agent=False)
    channel_id = chat["channel"]["id"]
    rule = make_rule(caller, "messages_received", 30, at_least=2)
    inbound(channel_id, "wamid.1", sender_phone="+5511911112222", now=T0)
    lead = make_lead(caller, chat["contact"]["id"])
    assert lead["score"] == 0  # one message so far: the rule wants two

    inbound(channel_id, "wamid.2", sender_phone="+5511911112222", now=T0 + timedelta(minutes=1))
    lead = lead_of(caller, lead["id"])
    assert lead["score"] == 30
    assert lead["score_reasons"] == [
        {"rule_id": rule["id"], "name": rule["name"], "kind": "messages_received", "points": 30}
    ]
    updated = events(caller.workspace_id, "lead.updated")
    assert updated[-1][1]["score"] == 30


def test_the_history_of_a_contact_counts_when_its_lead_is_made(caller):
    chat = setup_chat(caller, agent=False)
    for number in range(3):
        inbound(chat["channel"]["id"], f"wamid.{number}", sender_phone="+5511911112222")
    make_rule(caller, "messages_received", 25, at_least=3)
    assert make_lead(caller, chat["contact"]["id"])["score"] == 25


@pytest.mark.parametrize(
    ("delay", "points"), [(timedelta(seconds=90), 20), (timedelta(hours=2), 0)]
)
def test_a_quick_reply_to_our_message_scores(caller, delay, points):
    chat = setup_chat(caller, agent=False)
    conversation_id, channel_id = chat["conversation"]["id"], chat["channel"]["id"]
    make_rule(caller, "replied_within", 20, seconds=600)
    lead = make_lead(caller, chat["contact"]["id"])
    sent = data(send(caller, conversation_id, "Would Tuesday suit you?"), 201)
    sent_at = datetime.fromisoformat(sent["created_at"][:-1])
    inbound(channel_id, "wamid.answer", sender_phone="+5511911112222", now=sent_at + delay)
    assert lead_of(caller, lead["id"])["score"] == points


def test_custom_field_values_score_when_the_contact_changes(caller):
    field = data(
        caller.post(
            "/v1/custom-fields",
            json={"name": "Plan", "field_type": "select", "options": ["free", "pro"]},
        ),
        201,
    )
    make_rule(caller, "custom_field_value", 40, custom_field_id=field["id"], value="pro")
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    caller.patch(f"/v1/contacts/{contact['id']}", json={"custom_fields": {"Plan": "pro"}})
    assert lead_of(caller, lead["id"])["score"] == 40
    caller.patch(f"/v1/contacts/{contact['id']}", json={"custom_fields": {"Plan": "free"}})
    assert lead_of(caller, lead["id"])["score"] == 0


def test_an_intention_the_agent_matches_scores_the_lead(caller, fake):  # noqa: F811
    agent_id = make_agent(caller)
    channel = agent_channel(caller, agent_id)
    body = {"name": "Buy", "examples": ["I want to buy the pro plan"], "action": "reply",
            "reply_text": "Great!"}  # fmt: skip
    intention = data(caller.post(f"/v1/agents/{agent_id}/intentions", json=body), 201)
    rule = make_rule(caller, "intention_matched", 35, intention_id=intention["id"])
    data(caller.patch("/v1/leads/settings", json={"auto_create_leads": True}))
    first = customer_says(channel["id"], "hello there", at(0))
    run_replies(at(2))
    [lead] = caller.get("/v1/leads").get_json()["data"]
    assert lead["score"] == 0 and lead["contact_id"] == first.contact_id
    customer_says(channel["id"], "i want to buy the pro plan", at(10))
    run_replies(at(12))
    scored = lead_of(caller, lead["id"])
    assert scored["score"] == 35
    assert scored["score_reasons"][0]["rule_id"] == rule["id"]
    customer_says(channel["id"], "I want to buy the pro plan, really", at(20))
    run_replies(at(22))
    assert lead_of(caller, lead["id"])["score"] == 35  # a fact, counted once


def test_rules_are_checked_for_their_kind(caller, other):
    bad = caller.post(
        "/v1/leads/scoring-rules",
        json={"name": "x", "kind": "messages_received", "points": 5, "params": {"seconds": 3}},
    )
    assert_error(bad, 400, "VALIDATION_ERROR", "params.seconds")
    missing = caller.post(
        "/v1/leads/scoring-rules",
        json={"name": "x", "kind": "replied_within", "points": 5, "params": {}},
    )
    assert_error(missing, 400, "MISSING_REQUIRED_FIELD", "params.seconds")
    too_many = caller.post(
        "/v1/leads/scoring-rules",
        json={"name": "x", "kind": "replied_within", "points": 500, "params": {"seconds": 3}},
    )
    assert_error(too_many, 400, "VALIDATION_ERROR", "points")
    field = data(caller.post("/v1/custom-fields", json={"name": "Plan", "field_type": "text"}), 201)
    theirs = other.post(
        "/v1/leads/scoring-rules",
        json={"name": "x", "kind": "custom_field_value", "points": 5,
              "params": {"custom_field_id": field["id"], "value": "pro"}},
    )  # fmt: skip
    assert_error(theirs, 404, "CUSTOM_FIELD_NOT_FOUND")
    assert caller.get("/v1/leads/scoring-rules").get_json()["pagination"]["total"] == 0


def test_changing_rules_rescores_leads_and_lists_them(caller):
    chat = setup_chat(caller, agent=False)
    inbound(chat["channel"]["id"], "wamid.1", sender_phone="+5511911112222")
    lead = make_lead(caller, chat["contact"]["id"])
    rule = make_rule(caller, "messages_received", 10, at_least=1)
    assert lead_of(caller, lead["id"])["score"] == 10
    caller.patch(f"/v1/leads/scoring-rules/{rule['id']}", json={"points": 15})
    assert lead_of(caller, lead["id"])["score"] == 15
    caller.patch(f"/v1/leads/scoring-rules/{rule['id']}", json={"is_active": False})
    assert lead_of(caller, lead["id"])["score"] == 0
    listed = caller.get("/v1/leads/scoring-rules").get_json()["data"]
    assert [r["id"] for r in listed] == [rule["id"]] and listed[0]["points"] == 15
    assert caller.delete(f"/v1/leads/scoring-rules/{rule['id']}").status_code == 204
    names = event_names(caller.workspace_id)
    assert {"scoring_rule.created", "scoring_rule.updated", "scoring_rule.deleted"} <= set(names)


def test_a_manual_adjustment_is_recorded_with_who_and_why(caller, make_caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    sales = make_caller(scopes=["leads:read", "leads:write"], workspace_id=caller.workspace_id,
                        name="sales desk")  # fmt: skip
    adjusted = data(
        sales.post(f"/v1/leads/{lead['id']}/adjustments",
                   json={"points": 70, "reason": "asked for a quote by phone"}),
        201,
    )  # fmt: skip
    assert adjusted["score"] == 70
    assert adjusted["score_reasons"][-1]["kind"] == "manual"
    listed = sales.get(f"/v1/leads/{lead['id']}/adjustments").get_json()["data"]
    assert listed[0]["points"] == 70 and listed[0]["reason"] == "asked for a quote by phone"
    assert listed[0]["actor"].startswith("sales desk (")
    zero = sales.post(f"/v1/leads/{lead['id']}/adjustments", json={"points": 0, "reason": "x"})
    assert_error(zero, 400, "VALIDATION_ERROR", "points")
    capped = data(
        sales.post(f"/v1/leads/{lead['id']}/adjustments", json={"points": 50, "reason": "vip"}),
        201,
    )
    assert capped["score"] == 100  # bounded, the reasons still add to 120


def test_a_score_reaching_the_threshold_qualifies_the_lead(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    settings = data(caller.patch("/v1/leads/settings", json={"qualify_threshold": 60}))
    assert settings == {"qualify_threshold": 60, "auto_create_leads": False}
    caller.post(f"/v1/leads/{lead['id']}/adjustments", json={"points": 59, "reason": "call"})
    assert lead_of(caller, lead["id"])["status"] == "new"
    caller.post(f"/v1/leads/{lead['id']}/adjustments", json={"points": 1, "reason": "mail"})
    qualified = lead_of(caller, lead["id"])
    assert qualified["status"] == "qualified" and qualified["qualified_at"]
    raised = events(caller.workspace_id, "lead.qualified")
    assert len(raised) == 1 and raised[0][1]["automatic"] is True


def test_lowering_the_threshold_qualifies_leads_already_past_it(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    caller.post(f"/v1/leads/{lead['id']}/adjustments", json={"points": 30, "reason": "call"})
    caller.patch("/v1/leads/settings", json={"qualify_threshold": 30})
    assert lead_of(caller, lead["id"])["status"] == "qualified"


def test_an_unqualified_lead_is_not_qualified_automatically(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"], status="unqualified")
    caller.patch("/v1/leads/settings", json={"qualify_threshold": 10})
    caller.post(f"/v1/leads/{lead['id']}/adjustments", json={"points": 30, "reason": "call"})
    assert lead_of(caller, lead["id"])["status"] == "unqualified"


def test_qualifying_by_hand_is_idempotent(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    first = data(caller.post(f"/v1/leads/{lead['id']}/qualify"))
    again = data(caller.post(f"/v1/leads/{lead['id']}/qualify"))
    assert first["status"] == again["status"] == "qualified"
    assert first["qualified_at"] == again["qualified_at"]
    assert len(events(caller.workspace_id, "lead.qualified")) == 1


def test_a_lead_created_qualified_raises_lead_qualified_once(caller):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"], status="qualified")
    assert lead["status"] == "qualified" and lead["qualified_at"]
    [(_, raised)] = events(caller.workspace_id, "lead.qualified")
    assert (raised["id"], raised["automatic"]) == (lead["id"], False)
    data(caller.post(f"/v1/leads/{lead['id']}/qualify"))
    assert len(events(caller.workspace_id, "lead.qualified")) == 1


def test_a_first_inbound_conversation_makes_a_lead_when_turned_on(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    inbound(channel["id"], "wamid.off", sender_id="5511900000001")
    assert caller.get("/v1/leads").get_json()["pagination"]["total"] == 0
    caller.patch("/v1/leads/settings", json={"auto_create_leads": True})
    inbound(channel["id"], "wamid.on", sender_id="5511900000002")
    inbound(channel["id"], "wamid.on2", sender_id="5511900000002")
    made = caller.get("/v1/leads").get_json()
    assert made["pagination"]["total"] == 1
    assert made["data"][0]["source"] == "whatsapp"
    assert len(events(caller.workspace_id, "lead.created")) == 1


def test_another_workspace_sees_no_lead_of_this_one(caller, other):
    contact = make_contact(caller, name="Rita", phone="+5511955556666")
    lead = make_lead(caller, contact["id"])
    rule = make_rule(caller, "messages_received", 5, at_least=1)
    for method, path in [
        ("GET", f"/v1/leads/{lead['id']}"),
        ("PATCH", f"/v1/leads/{lead['id']}"),
        ("DELETE", f"/v1/leads/{lead['id']}"),
        ("POST", f"/v1/leads/{lead['id']}/qualify"),
        ("GET", f"/v1/leads/{lead['id']}/adjustments"),
    ]:
        assert_error(other.request(method, path, json={"notes": "x"}), 404, "LEAD_NOT_FOUND")
    adjust = {"points": 50, "reason": "x"}
    adjusted = other.post(f"/v1/leads/{lead['id']}/adjustments", json=adjust)
    assert_error(adjusted, 404, "LEAD_NOT_FOUND")
    data(other.post("/v1/pipeline/columns", json={"name": "Theirs", "probability": 5}), 201)
    deal = {"value": "1.00", "currency": "EUR"}
    converted = other.post(f"/v1/leads/{lead['id']}/convert", json=deal)
    assert_error(converted, 404, "LEAD_NOT_FOUND")
    for method in ("GET", "PATCH", "DELETE"):
        path = f"/v1/leads/scoring-rules/{rule['id']}"
        response = other.request(method, path, json={"points": 99})
        assert_error(response, 404, "SCORING_RULE_NOT_FOUND")
    assert data(caller.get(f"/v1/leads/scoring-rules/{rule['id']}"))["points"] == 5
    assert caller.get(f"/v1/leads/{lead['id']}/adjustments").get_json()["data"] == []
    assert other.get("/v1/opportunities").get_json()["pagination"]["total"] == 0
    assert other.get("/v1/leads").get_json()["pagination"]["total"] == 0
    assert other.get("/v1/leads/scoring-rules").get_json()["pagination"]["total"] == 0
    assert lead_of(caller, lead["id"])["notes"] == ""


def test_lead_routes_need_their_scopes(make_caller):
    reader = make_caller(scopes=["leads:read"])
    assert_error(reader.post("/v1/leads", json={}), 403, "INSUFFICIENT_SCOPE", "leads:write")
    assert reader.get("/v1/leads").status_code == 200


def test_converting_needs_pipeline_write_too_as_it_creates_an_opportunity(make_caller, client):
    admin = make_caller()
    data(admin.post("/v1/pipeline/columns", json={"name": "New", "probability": 10}), 201)
    lead = make_lead(admin, make_contact(admin, name="Rita", phone="+5511955556666")["id"])
    body = {"value": "10.00", "currency": "EUR"}
    path = f"/v1/leads/{lead['id']}/convert"
    for scopes, lacking in (
        (["leads:read", "leads:write"], "pipeline:write"),
        (["pipeline:read", "pipeline:write"], "leads:write"),
    ):
        narrow = make_caller(scopes=scopes, workspace_id=admin.workspace_id)
        assert_error(narrow.post(path, json=body), 403, "INSUFFICIENT_SCOPE", lacking)
    assert lead_of(admin, lead["id"])["status"] == "new"
    assert admin.get("/v1/opportunities").get_json()["pagination"]["total"] == 0
    both = make_caller(scopes=["leads:write", "pipeline:write"], workspace_id=admin.workspace_id)
    assert data(both.post(path, json=body), 201)["lead"]["status"] == "converted"
    operation = client.get("/openapi.json").get_json()["paths"]["/v1/leads/{lead_id}/convert"]
    assert operation["post"]["x-required-scope"] == "leads:write"
    assert operation["post"]["x-also-required-scopes"] == ["pipeline:write"]
    assert {"ApiKeyHeader": ["leads:write", "pipeline:write"]} in operation["post"]["security"]
