"""Interactions through HTTP: the conversations as work items, queried with
combinable filters, and closed one at a time or many at once."""

from datetime import datetime, timedelta

from agent_platform.models import Conversation
from agent_platform.services import routing
from conftest import assert_error
from conversations_helpers import (
    WA_SETTINGS,
    data,
    events,
    inbound,
    make_agent,
    make_channel,
    send,
)

T0 = datetime(2026, 3, 2, 9, 0)


def customer(channel_id, number, text="Oi", now=None):
    """A message from customer `number`; returns its conversation id."""
    phone = f"+55119000000{number:02d}"
    result = inbound(
        channel_id, f"wamid.{number}.{text}", sender_id=phone[1:], sender_phone=phone, text=text,
        now=now,
    )  # fmt: skip
    return result.message.conversation_id


def ids(page):
    return sorted(item["id"] for item in page["data"])


def query(caller, params=""):
    response = caller.get(f"/v1/interactions{params}")
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_filters_combine(caller):
    whatsapp = make_channel(caller, settings=WA_SETTINGS)
    site = make_channel(caller, name="Site", type="website")
    a = customer(whatsapp["id"], 1, "I want a quote", now=T0)
    b = customer(whatsapp["id"], 2, "Where is my order", now=T0 + timedelta(days=1))
    c = customer(site["id"], 3, "I want a quote too", now=T0 + timedelta(days=2))
    assert query(caller)["pagination"]["total"] == 3
    assert ids(query(caller, f"?channel_id={whatsapp['id']}")) == sorted([a, b])
    assert ids(query(caller, "?channel_type=website")) == [c]
    assert ids(query(caller, "?q=quote")) == sorted([a, c])
    assert ids(query(caller, f"?q=quote&channel_id={whatsapp['id']}")) == [a]
    since = (T0 + timedelta(hours=12)).isoformat() + "Z"
    assert ids(query(caller, f"?active_from={since}&q=quote")) == [c]
    assert ids(query(caller, f"?created_to={since}")) == [a]
    assert ids(query(caller, f"?status=open&channel_type=whatsapp&active_from={since}")) == [b]


def test_unread_handoff_assignee_and_agent(caller):
    agent_id = make_agent(caller)
    channel = make_channel(caller, settings=WA_SETTINGS)
    a = customer(channel["id"], 1)
    b = customer(channel["id"], 2)
    assert data(send(caller, b, "We are on it"), 201)
    assert ids(query(caller, "?unread=true")) == [a]
    assert ids(query(caller, "?unread=false")) == [b]
    caller.post(f"/v1/chats/{a}/handoff", json={"assigned_to": "ana@example.com"})
    assert ids(query(caller, "?handoff=true")) == [a]
    assert ids(query(caller, "?handoff=false")) == [b]
    assert ids(query(caller, "?assigned_to=ana@example.com")) == [a]
    caller.post(f"/v1/conversations/{b}/transfer", json={"agent_id": agent_id})
    assert ids(query(caller, f"?agent_id={agent_id}")) == [b]
    page = query(caller, "?unread=true")
    assert page["data"][0]["unread"] is True and page["data"][0]["lead"] is None


def test_lead_status_tags_and_custom_fields(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    a = customer(channel["id"], 1)
    b = customer(channel["id"], 2)
    contact_a = data(caller.get(f"/v1/conversations/{a}"))["contact_id"]
    contact_b = data(caller.get(f"/v1/conversations/{b}"))["contact_id"]
    lead = data(caller.post("/v1/leads", json={"contact_id": contact_a}), 201)
    caller.post(f"/v1/leads/{lead['id']}/qualify")
    assert ids(query(caller, "?lead_status=qualified")) == [a]
    assert ids(query(caller, "?lead_status=new")) == []
    assert query(caller, f"?contact_id={contact_a}")["data"][0]["lead"]["status"] == "qualified"

    assert ids(query(caller, "?tag=vip")) == []  # no contact tagged yet
    for conversation_id, tag in ((a, "vip"), (b, "vip"), (b, "late")):
        conversation = Conversation.get_by_id(conversation_id)
        assert routing.add_lead_tag(conversation, tag, T0)["ok"]
    assert ids(query(caller, "?tag=vip")) == sorted([a, b])
    assert ids(query(caller, "?tag=vip&tag=late")) == [b]

    caller.post("/v1/custom-fields", json={"name": "Plan", "field_type": "text"})
    caller.patch(f"/v1/contacts/{contact_b}", json={"custom_fields": {"Plan": "pro"}})
    assert ids(query(caller, "?custom_field[Plan]=pro")) == [b]
    assert ids(query(caller, "?custom_field[Plan]=pro&tag=late&lead_status=new")) == []
    response = caller.get("/v1/interactions?custom_field[Nope]=1")
    assert_error(response, 400, "VALIDATION_ERROR", "custom_field.Nope")


def test_listing_is_paginated_and_sorted(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    made = [customer(channel["id"], n, now=T0 + timedelta(minutes=n)) for n in range(5)]
    first = query(caller, "?limit=2&sort=created_at&order=asc")
    assert [i["id"] for i in first["data"]] == made[:2]
    assert first["pagination"] == {"page": 1, "limit": 2, "total": 5, "total_pages": 3}
    last = query(caller, "?limit=2&page=3&sort=created_at&order=asc")
    assert [i["id"] for i in last["data"]] == made[4:]
    customer(channel["id"], 1, "Me again", now=T0 + timedelta(hours=1))
    latest_first = [i["id"] for i in query(caller)["data"]]  # updated_at, desc
    assert latest_first == [made[1], made[4], made[3], made[2], made[0]]


def test_bad_filters_are_400_naming_them(caller):
    for params, field in [
        ("?status=maybe", "status"),
        ("?unread=perhaps", "unread"),
        ("?lead_status=hot", "lead_status"),
        ("?created_from=yesterday", "created_from"),
        ("?channel_id=12", "channel_id"),
        ("?sort=title", "sort"),
    ]:
        assert_error(caller.get(f"/v1/interactions{params}"), 400, "VALIDATION_ERROR", field)


def test_closing_one_and_many(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    a = customer(channel["id"], 1)
    b = customer(channel["id"], 2)
    c = customer(channel["id"], 3)
    closed = data(caller.post(f"/v1/interactions/{a}/close"))
    assert closed["status"] == "closed" and closed["closed_at"]
    assert_error(caller.post(f"/v1/interactions/{a}/close"), 409, "INVALID_STATE_TRANSITION")
    missing = "0190b0a0-0000-7000-8000-000000000000"
    outcome = data(
        caller.post("/v1/interactions/close", json={"conversation_ids": [a, b, c, missing]})
    )
    assert outcome == {"closed": [b, c], "already_closed": [a], "not_found": [missing]}
    assert ids(query(caller, "?status=closed")) == sorted([a, b, c])
    closed_events = [d["id"] for _, d in events(caller.workspace_id, "conversation.closed")]
    assert closed_events == [a, b, c]
    repeated = caller.post("/v1/interactions/close", json={"conversation_ids": [a, a]})
    assert_error(repeated, 400, "VALIDATION_ERROR", "conversation_ids")
    too_many = caller.post("/v1/interactions/close", json={"conversation_ids": [a] * 101})
    assert_error(too_many, 400, "VALIDATION_ERROR", "conversation_ids")


def test_another_workspace_neither_sees_nor_closes_them(caller, other):
    channel = make_channel(caller, settings=WA_SETTINGS)
    a = customer(channel["id"], 1)
    assert other.get("/v1/interactions").get_json()["pagination"]["total"] == 0
    assert_error(other.get(f"/v1/interactions/{a}"), 404, "CONVERSATION_NOT_FOUND")
    assert_error(other.post(f"/v1/interactions/{a}/close"), 404, "CONVERSATION_NOT_FOUND")
    assert_error(other.get(f"/v1/interactions/{a}/messages"), 404, "CONVERSATION_NOT_FOUND")
    outcome = data(other.post("/v1/interactions/close", json={"conversation_ids": [a]}))
    assert outcome == {"closed": [], "already_closed": [], "not_found": [a]}
    assert data(caller.get(f"/v1/interactions/{a}"))["status"] == "open"
    contact_id = data(caller.get(f"/v1/interactions/{a}"))["contact_id"]
    caller.post("/v1/leads", json={"contact_id": contact_id})
    for params in (
        f"?channel_id={channel['id']}",
        f"?contact_id={contact_id}",
        "?lead_status=new",
        "?channel_type=whatsapp&unread=true&q=Oi",
    ):
        assert other.get(f"/v1/interactions{params}").get_json()["data"] == [], params
    theirs = customer(make_channel(other, settings=WA_SETTINGS)["id"], 2)
    assert ids(query(other, "?q=Oi&unread=true")) == [theirs]
    assert ids(query(caller, "?q=Oi&unread=true")) == [a]


def test_interaction_routes_need_their_scopes(make_caller):
    reader = make_caller(scopes=["interactions:read"])
    assert reader.get("/v1/interactions").status_code == 200
    admin = make_caller(workspace_id=reader.workspace_id)
    channel = make_channel(admin, settings=WA_SETTINGS)
    a = customer(channel["id"], 1, "Hello there")
    texts = [m["text"] for m in reader.get(f"/v1/interactions/{a}/messages").get_json()["data"]]
    assert texts == ["Hello there"]
    response = reader.post("/v1/interactions/close", json={"conversation_ids": []})
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "interactions:write")


def test_unread_survives_a_save_of_a_conversation_read_before_the_answer(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    a = customer(channel["id"], 1)
    stale = Conversation.get_by_id(a)
    assert stale.last_direction == "inbound"
    assert data(send(caller, a, "On it"), 201)
    stale.assigned_to = "ana@example.com"
    stale.save()  # must not write back the direction it read
    assert Conversation.get_by_id(a).last_direction == "outbound"
    late = inbound(
        channel["id"], "wamid.late", sender_id="5511900000001", sender_phone="+5511900000001",
        now=T0,
    )  # fmt: skip
    assert late.message.conversation_id == a
    assert Conversation.get_by_id(a).last_direction == "outbound"  # older than the answer
    assert ids(query(caller, "?unread=false")) == [a]
