"""Per-agent webhooks and an agent's history: the events of one agent's
conversations (and of the agent itself), delivered only to its webhooks and
listed as its history; another agent's, or nobody's, are not."""

import json

import pytest

from agent_platform.events import delivery
from conftest import assert_error
from conversations_helpers import (
    data,
    inbound,
    make_agent,
    make_channel,
    make_contact,
    make_conversation,
)
from webhooks_helpers import Receiver


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


@pytest.fixture
def receivers():
    made = [Receiver(), Receiver()]
    yield made
    for receiver in made:
        receiver.close()


@pytest.fixture
def two_agents(caller):
    """Agents A and B, each with a channel of its own."""
    made = {}
    for name in "AB":
        agent_id = make_agent(caller, name=name)
        channel = make_channel(caller, name=f"Site {name}", type="website", agent_id=agent_id)
        made[name] = {"id": agent_id, "channel": channel["id"]}
    return made


def received_events(receiver):
    delivery.deliver_due()
    return [json.loads(request.body)["event"] for request in receiver.requests]


def conversation_of(caller, agent, name="Bia"):
    contact = make_contact(caller, name=name)
    return make_conversation(caller, contact["id"], agent["channel"])


def hook_for(caller, agent_id, url):
    body = {"url": url, "events": ["*"]}
    return data(caller.post(f"/v1/agents/{agent_id}/webhooks", json=body), 201)


def test_an_agents_webhook_gets_only_that_agents_events(caller, two_agents, receivers):
    mine, everything = receivers
    hook = hook_for(caller, two_agents["A"]["id"], mine.url)
    assert hook["agent_id"] == two_agents["A"]["id"] and hook["secret"].startswith("whsec_")
    data(caller.post("/v1/webhooks", json={"url": everything.url, "events": ["*"]}), 201)
    ours = conversation_of(caller, two_agents["A"])
    conversation_of(caller, two_agents["B"], name="Other")
    caller.post(f"/v1/conversations/{ours['id']}/close")
    assert received_events(mine) == ["conversation.created", "conversation.closed"]
    assert received_events(everything) == [
        "contact.created",
        "conversation.created",
        "contact.created",
        "conversation.created",
        "conversation.closed",
    ]


def test_message_events_follow_their_conversations_agent(caller, two_agents, receivers):
    mine, _ = receivers
    hook_for(caller, two_agents["A"]["id"], mine.url)
    inbound(two_agents["A"]["channel"], "ext-1", sender_id="visitor-1", text="Hi A")
    inbound(two_agents["B"]["channel"], "ext-2", sender_id="visitor-2", text="Hi B")
    assert received_events(mine) == ["conversation.created", "message.received"]


def test_the_agents_webhooks_are_listed_and_read_like_any(caller, two_agents, receivers):
    hook = hook_for(caller, two_agents["A"]["id"], receivers[0].url)
    data(caller.post("/v1/webhooks", json={"url": receivers[1].url, "events": ["*"]}), 201)
    listed = data(caller.get(f"/v1/agents/{two_agents['A']['id']}/webhooks"))
    assert [item["id"] for item in listed] == [hook["id"]] and "secret" not in listed[0]
    assert data(caller.get(f"/v1/agents/{two_agents['B']['id']}/webhooks")) == []
    filtered = data(caller.get(f"/v1/webhooks?agent_id={two_agents['A']['id']}"))
    assert [item["id"] for item in filtered] == [hook["id"]]
    assert len(data(caller.get("/v1/webhooks"))) == 2
    assert data(caller.get(f"/v1/webhooks/{hook['id']}"))["agent_id"] == two_agents["A"]["id"]
    response = caller.patch(f"/v1/webhooks/{hook['id']}", json={"agent_id": None})
    assert_error(response, 400, "VALIDATION_ERROR", "agent_id")
    assert caller.delete(f"/v1/webhooks/{hook['id']}").status_code == 204
    assert data(caller.get(f"/v1/agents/{two_agents['A']['id']}/webhooks")) == []


def test_an_agent_webhook_made_through_v1_webhooks(caller, two_agents, receivers):
    body = {"url": receivers[0].url, "events": ["conversations"], "agent_id": two_agents["B"]["id"]}
    hook = data(caller.post("/v1/webhooks", json=body), 201)
    conversation_of(caller, two_agents["A"])
    conversation_of(caller, two_agents["B"])
    assert hook["agent_id"] == two_agents["B"]["id"]
    assert received_events(receivers[0]) == ["conversation.created"]


def test_the_history_lists_the_agents_events_newest_first(caller, two_agents):
    agent_a = two_agents["A"]
    ours = conversation_of(caller, agent_a)
    conversation_of(caller, two_agents["B"], name="Other")
    caller.post(f"/v1/conversations/{ours['id']}/close")
    body = caller.get(f"/v1/agents/{agent_a['id']}/history").get_json()
    assert [entry["event"] for entry in body["data"]] == [
        "conversation.closed",
        "conversation.created",
        "channel.connected",
    ]
    assert body["pagination"]["total"] == 3
    closed = body["data"][0]
    assert set(closed) == {"event_id", "event", "data", "created_at"}
    assert closed["data"]["id"] == ours["id"] and closed["created_at"].endswith("Z")
    only = data(caller.get(f"/v1/agents/{agent_a['id']}/history?event=conversation.created"))
    assert [entry["data"]["id"] for entry in only] == [ours["id"]]
    oldest = data(caller.get(f"/v1/agents/{agent_a['id']}/history?order=asc&limit=1"))
    assert oldest[0]["event"] == "channel.connected"
    bad = caller.get(f"/v1/agents/{agent_a['id']}/history?event=nothing.happened")
    assert_error(bad, 400, "VALIDATION_ERROR", "event")


def test_unknown_or_foreign_agents_are_404(caller, other, two_agents, receivers):
    theirs = make_agent(other, name="Theirs")
    for path in (f"/v1/agents/{theirs}/webhooks", f"/v1/agents/{theirs}/history"):
        assert_error(caller.get(path), 404, "AGENT_NOT_FOUND")
    body = {"url": receivers[0].url, "events": ["*"]}
    assert_error(caller.post(f"/v1/agents/{theirs}/webhooks", json=body), 404, "AGENT_NOT_FOUND")
    response = caller.post("/v1/webhooks", json={**body, "agent_id": theirs})
    assert_error(response, 404, "AGENT_NOT_FOUND")
    assert data(caller.get("/v1/webhooks")) == []
    assert_error(caller.get(f"/v1/webhooks?agent_id={theirs}"), 404, "AGENT_NOT_FOUND")


def test_agents_read_covers_the_agents_webhooks_and_history(caller, make_caller, two_agents):
    agent_id = two_agents["A"]["id"]
    reader = make_caller(["agents:read"], workspace_id=caller.workspace_id)
    assert reader.get(f"/v1/agents/{agent_id}/webhooks").status_code == 200
    assert reader.get(f"/v1/agents/{agent_id}/history").status_code == 200
    hooks_only = make_caller(["webhooks:read"], workspace_id=caller.workspace_id)
    assert hooks_only.get(f"/v1/agents/{agent_id}/webhooks").status_code == 200
    response = hooks_only.get(f"/v1/agents/{agent_id}/history")
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "agents:read")
    creating = reader.post(
        f"/v1/agents/{agent_id}/webhooks", json={"url": "https://x.example", "events": ["*"]}
    )
    assert_error(creating, 403, "INSUFFICIENT_SCOPE", "webhooks:write")
