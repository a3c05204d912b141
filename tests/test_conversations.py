"""Conversations: starting one, the state machine (every move, valid or not),
assignment, transfer, listing filters, events, isolation and scopes."""

from datetime import timedelta

import pytest

from agent_platform.models.base import utcnow
from conftest import assert_error
from conversations_helpers import (
    WA_SETTINGS,
    data,
    event_names,
    events,
    id_forms,
    inbound,
    make_agent,
    make_channel,
    make_contact,
    make_conversation,
    send,
    setup_chat,
)

# Each action's path and the states it is allowed from, with the state it leads to.
ACTIONS = {
    "close": ("/v1/conversations/{id}/close", {"open": "closed", "handoff": "closed"}),
    "reopen": ("/v1/conversations/{id}/reopen", {"closed": "open"}),
    "handoff": ("/v1/chats/{id}/handoff", {"open": "handoff"}),
    "complete": ("/v1/chats/{id}/handoff/complete", {"handoff": "open"}),
}
EVENTS = {
    "close": "conversation.closed",
    "reopen": "conversation.reopened",
    "handoff": "agent.handoff_started",
    "complete": "agent.handoff_completed",
}
# How to bring a fresh (open) conversation into each state.
REACH = {"open": [], "handoff": ["handoff"], "closed": ["close"]}


def act(caller, conversation_id, action):
    return caller.post(ACTIONS[action][0].format(id=conversation_id))


def test_start_a_conversation(caller):
    agent_id = make_agent(caller)
    channel = make_channel(caller, agent_id=agent_id)
    contact = make_contact(caller, name="Ana")
    conversation = make_conversation(caller, contact["id"], channel["id"])
    assert set(conversation) == {
        "id",
        "contact_id",
        "channel_id",
        "agent_id",
        "status",
        "assigned_to",
        "message_count",
        "last_message_at",
        "handoff_started_at",
        "closed_at",
        "created_at",
        "updated_at",
    }
    assert conversation["status"] == "open"
    assert (conversation["contact_id"], conversation["channel_id"]) == (
        contact["id"],
        channel["id"],
    )
    assert conversation["agent_id"] == agent_id  # the channel's agent
    assert conversation["message_count"] == 0
    assert events(caller.workspace_id, "conversation.created") == [
        ("conversation.created", conversation)
    ]
    assert data(caller.get(f"/v1/conversations/{conversation['id']}")) == conversation


def test_start_with_an_agent_and_an_operator(caller):
    chosen = make_agent(caller, name="Chosen")
    channel = make_channel(caller)
    contact = make_contact(caller)
    conversation = make_conversation(
        caller, contact["id"], channel["id"], agent_id=chosen, assigned_to="maria@shop.example"
    )
    assert (conversation["agent_id"], conversation["assigned_to"]) == (chosen, "maria@shop.example")


def test_one_live_conversation_per_contact_and_channel(caller):
    channel = make_channel(caller)
    contact = make_contact(caller)
    first = make_conversation(caller, contact["id"], channel["id"])
    body = {"contact_id": contact["id"], "channel_id": channel["id"]}
    assert_error(
        caller.post("/v1/conversations", json=body), 409, "CONVERSATION_EXISTS", first["id"]
    )
    assert act(caller, first["id"], "close").status_code == 200
    second = make_conversation(caller, contact["id"], channel["id"])
    assert second["id"] != first["id"]
    other_channel = make_channel(caller, name="TG", type="telegram")
    make_conversation(caller, contact["id"], other_channel["id"])


def test_start_needs_things_of_the_workspace(caller, other):
    channel = make_channel(caller)
    contact = make_contact(caller)
    foreign_contact = make_contact(other)
    foreign_channel = make_channel(other)
    foreign_agent = make_agent(other)
    cases = [
        ({"contact_id": foreign_contact["id"], "channel_id": channel["id"]}, "CONTACT_NOT_FOUND"),
        ({"contact_id": contact["id"], "channel_id": foreign_channel["id"]}, "CHANNEL_NOT_FOUND"),
        (
            {"contact_id": contact["id"], "channel_id": channel["id"], "agent_id": foreign_agent},
            "AGENT_NOT_FOUND",
        ),
    ]
    for body, code in cases:
        assert_error(caller.post("/v1/conversations", json=body), 404, code)
    assert_error(
        caller.post("/v1/conversations", json={"contact_id": contact["id"]}),
        400,
        "MISSING_REQUIRED_FIELD",
        "channel_id",
    )
    assert_error(
        caller.post("/v1/conversations", json={"contact_id": "x", "channel_id": channel["id"]}),
        400,
        "VALIDATION_ERROR",
        "contact_id",
    )
    assert event_names(caller.workspace_id).count("conversation.created") == 0


@pytest.mark.parametrize("state", ["open", "handoff", "closed"])
@pytest.mark.parametrize("action", list(ACTIONS))
def test_every_move_from_every_state(caller, state, action):
    chat = setup_chat(caller)
    conversation_id = chat["conversation"]["id"]
    for step in REACH[state]:
        assert act(caller, conversation_id, step).status_code == 200
    before = event_names(caller.workspace_id)
    response = act(caller, conversation_id, action)
    allowed = ACTIONS[action][1]
    if state in allowed:
        moved = data(response)
        assert moved["status"] == allowed[state]
        assert event_names(caller.workspace_id) == before + [EVENTS[action]]
        assert events(caller.workspace_id)[-1][1] == moved
        assert data(caller.get(f"/v1/conversations/{conversation_id}")) == moved
    else:
        error = assert_error(response, 409, "INVALID_STATE_TRANSITION", f"its state is {state}")
        assert conversation_id in error["message"]
        assert event_names(caller.workspace_id) == before
        assert data(caller.get(f"/v1/conversations/{conversation_id}"))["status"] == state


def test_times_follow_the_moves(caller):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    handed = data(act(caller, conversation_id, "handoff"))
    assert handed["handoff_started_at"] is not None
    closed = data(act(caller, conversation_id, "close"))
    assert closed["closed_at"] is not None and closed["handoff_started_at"] is None
    reopened = data(act(caller, conversation_id, "reopen"))
    assert reopened["closed_at"] is None and reopened["status"] == "open"


def test_assign_and_unassign(caller):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    path = f"/v1/conversations/{conversation_id}/assign"
    assigned = data(caller.post(path, json={"assigned_to": "maria@shop.example"}))
    assert assigned["assigned_to"] == "maria@shop.example"
    assert data(caller.post(path, json={"assigned_to": "maria@shop.example"})) == assigned
    unassigned = data(caller.post(path, json={"assigned_to": None}))
    assert unassigned["assigned_to"] is None
    assert events(caller.workspace_id, "conversation.assigned") == [
        ("conversation.assigned", {**assigned, "previous_assigned_to": None}),
        ("conversation.assigned", {**unassigned, "previous_assigned_to": "maria@shop.example"}),
    ]
    assert_error(caller.post(path, json={}), 400, "MISSING_REQUIRED_FIELD", "assigned_to")
    assert_error(
        caller.post(path, json={"assigned_to": ""}), 400, "VALIDATION_ERROR", "assigned_to"
    )


def test_a_user_id_is_assigned_and_found_in_its_canonical_form(caller):
    from web_helpers import make_user

    zed = make_user(caller.workspace_id, email="zed@example.com", name="Zed")
    chat = setup_chat(caller)
    path = f"/v1/conversations/{chat['conversation']['id']}/assign"
    assigned = data(caller.post(path, json={"assigned_to": zed["id"].upper()}))
    assert assigned["assigned_to"] == zed["id"]
    for form in id_forms(zed["id"]):
        assert data(caller.post(path, json={"assigned_to": form})) == assigned, form
    assert len(events(caller.workspace_id, "conversation.assigned")) == 1
    other = make_contact(caller, name="Cid")
    started = make_conversation(
        caller, other["id"], chat["channel"]["id"], assigned_to="{" + zed["id"].upper() + "}"
    )
    assert started["assigned_to"] == zed["id"]
    for form in id_forms(zed["id"]):
        for listing in ("/v1/conversations", "/v1/interactions"):
            found = data(caller.get(f"{listing}?assigned_to={form}&sort=created_at&order=asc"))
            assert [c["id"] for c in found] == [assigned["id"], started["id"]], (listing, form)


def test_assigning_works_in_every_state(caller):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    act(caller, conversation_id, "close")
    path = f"/v1/conversations/{conversation_id}/assign"
    assert data(caller.post(path, json={"assigned_to": "joao"}))["status"] == "closed"


def test_transfer_to_another_agent(caller, other):
    chat = setup_chat(caller)
    conversation_id = chat["conversation"]["id"]
    path = f"/v1/conversations/{conversation_id}/transfer"
    second = make_agent(caller, name="Second")
    moved = data(caller.post(path, json={"agent_id": second}))
    assert moved["agent_id"] == second
    expected = {**moved, "previous_agent_id": chat["agent_id"]}
    assert events(caller.workspace_id, "conversation.transferred") == [
        ("conversation.transferred", expected)
    ]
    assert events(caller.workspace_id, "agent.transferred") == [("agent.transferred", expected)]
    assert_error(
        caller.post(path, json={"agent_id": second}), 409, "CONVERSATION_ALREADY_WITH_AGENT"
    )
    assert_error(caller.post(path, json={"agent_id": make_agent(other)}), 404, "AGENT_NOT_FOUND")
    gone = make_agent(caller, name="Gone")
    caller.delete(f"/v1/agents/{gone}")
    assert_error(caller.post(path, json={"agent_id": gone}), 404, "AGENT_NOT_FOUND")
    assert len(events(caller.workspace_id, "agent.transferred")) == 1


def test_listing_filters(caller):
    agent_a = make_agent(caller, name="A")
    agent_b = make_agent(caller, name="B")
    wa = make_channel(caller, settings=WA_SETTINGS, agent_id=agent_a)
    tg = make_channel(caller, name="TG", type="telegram", agent_id=agent_b)
    ana = make_contact(caller, name="Ana")
    bia = make_contact(caller, name="Bia")
    one = make_conversation(caller, ana["id"], wa["id"])
    two = make_conversation(caller, bia["id"], tg["id"])
    three = make_conversation(caller, bia["id"], wa["id"])
    send(caller, one["id"], text="Where is my parcel?")
    act(caller, two["id"], "close")
    caller.post(f"/v1/conversations/{three['id']}/assign", json={"assigned_to": "maria"})

    def ids(query=""):
        return [item["id"] for item in data(caller.get("/v1/conversations?" + query))]

    assert ids() == [three["id"], two["id"], one["id"]]  # most recent activity first
    assert ids("sort=created_at&order=asc") == [one["id"], two["id"], three["id"]]
    assert ids("status=closed") == [two["id"]]
    assert ids(f"agent_id={agent_b}") == [two["id"]]
    assert ids(f"channel_id={wa['id']}") == [three["id"], one["id"]]
    assert ids(f"contact_id={bia['id']}") == [three["id"], two["id"]]
    assert ids("assigned_to=maria") == [three["id"]]
    assert ids("q=parcel") == [one["id"]]
    assert ids("q=PARCEL") == [one["id"]]
    assert ids("q=%25") == []
    future = (utcnow() + timedelta(hours=1)).isoformat() + "Z"
    assert ids(f"updated_since={future}") == []
    past = (utcnow() - timedelta(hours=1)).isoformat() + "Z"
    assert len(ids(f"updated_since={past}")) == 3
    listed = caller.get("/v1/conversations?limit=2").get_json()
    assert listed["pagination"] == {"page": 1, "limit": 2, "total": 3, "total_pages": 2}
    assert_error(caller.get("/v1/conversations?status=pending"), 400, "VALIDATION_ERROR", "status")
    assert_error(caller.get("/v1/conversations?sort=status"), 400, "VALIDATION_ERROR", "sort")
    assert_error(
        caller.get("/v1/conversations?updated_since=yesterday"),
        400,
        "VALIDATION_ERROR",
        "updated_since",
    )


def test_a_message_moves_its_conversation_up(caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    first = make_conversation(caller, make_contact(caller, name="A")["id"], channel["id"])
    second = make_conversation(caller, make_contact(caller, name="B")["id"], channel["id"])
    listed = [c["id"] for c in data(caller.get("/v1/conversations"))]
    assert listed == [second["id"], first["id"]]
    send(caller, first["id"])
    listed = data(caller.get("/v1/conversations"))
    assert [c["id"] for c in listed] == [first["id"], second["id"]]
    assert listed[0]["message_count"] == 1
    assert listed[0]["last_message_at"] is not None


def test_unknown_and_other_workspace_conversations_are_404(caller, other):
    conversation_id = setup_chat(caller)["conversation"]["id"]
    agent_id = make_agent(other)
    for method, path, body in (
        ("GET", "", None),
        ("POST", "/close", None),
        ("POST", "/reopen", None),
        ("POST", "/assign", {"assigned_to": "x"}),
        ("POST", "/transfer", {"agent_id": agent_id}),
        ("GET", "/messages", None),
        ("POST", "/messages", {"text": "hi"}),
    ):
        response = other.request(method, f"/v1/conversations/{conversation_id}{path}", json=body)
        assert_error(response, 404, "CONVERSATION_NOT_FOUND", conversation_id)
    assert data(other.get("/v1/conversations")) == []
    assert_error(caller.get("/v1/conversations/nope"), 404, "CONVERSATION_NOT_FOUND")
    assert data(caller.get(f"/v1/conversations/{conversation_id}"))["status"] == "open"


def test_inbound_reopens_a_closed_conversation(caller):
    channel = make_channel(caller)
    first = inbound(channel["id"], "wamid.1")
    conversation_id = first.message.conversation_id
    act(caller, conversation_id, "close")
    second = inbound(channel["id"], "wamid.2")
    assert second.message.conversation_id == conversation_id
    assert data(caller.get(f"/v1/conversations/{conversation_id}"))["status"] == "open"
    assert event_names(caller.workspace_id).count("conversation.reopened") == 1


def test_scopes(make_caller):
    owner = make_caller()
    conversation_id = setup_chat(owner)["conversation"]["id"]
    reader = make_caller(scopes=["conversations:read"], workspace_id=owner.workspace_id)
    assert data(reader.get(f"/v1/conversations/{conversation_id}"))["id"] == conversation_id
    for path in ("close", "reopen", "assign", "transfer"):
        response = reader.post(f"/v1/conversations/{conversation_id}/{path}", json={})
        assert_error(response, 403, "INSUFFICIENT_SCOPE", "chats:write")
    assert_error(
        reader.post("/v1/conversations", json={}), 403, "INSUFFICIENT_SCOPE", "chats:write"
    )
    operator = make_caller(scopes=["chats:write"], workspace_id=owner.workspace_id)
    assert data(operator.post(f"/v1/conversations/{conversation_id}/close"))["status"] == "closed"
    assert_error(operator.get("/v1/conversations"), 403, "INSUFFICIENT_SCOPE", "conversations:read")
