"""The adapter contract seen from the API: a channel type without an adapter
is never said yes to for messages (refused when connected, when a message is
posted, at its callback URL), and nothing it queued stays queued.

Every type the platform offers has an adapter now: here the e-mail type
stands for one without (its adapter taken out of the registry), as a type
declared with settings only would be."""

import pytest

from agent_platform.channels import adapters, senders
from agent_platform.models import Message
from agent_platform.services import sending
from conftest import assert_error
from conversations_helpers import (
    data,
    events,
    make_agent,
    make_channel,
    make_contact,
    make_conversation,
    send,
)


@pytest.fixture(autouse=True)
def email_without_adapter(app, monkeypatch):
    adapters.load()
    monkeypatch.delitem(adapters._ADAPTERS, "email")
    monkeypatch.delitem(senders._SENDERS, "email")


def chat_on(caller, kind):
    """A conversation with a contact on a new channel of type `kind`."""
    settings = {"from_address": "help@example.com"} if kind == "email" else {"title": "Help"}
    channel = make_channel(caller, name=kind, type=kind, settings=settings)
    contact = make_contact(caller, name="Bia", email="bia@example.com")
    return make_conversation(caller, contact["id"], channel["id"])


@pytest.fixture
def email_chat(caller):
    return chat_on(caller, "email")


@pytest.mark.parametrize("kind", ["email"])
def test_a_message_on_a_type_without_adapter_is_refused_when_posted(caller, kind):
    chat = chat_on(caller, kind)
    assert_error(
        send(caller, chat["id"]),
        409,
        "CHANNEL_CANNOT_SEND",
        f"Channels of type {kind} cannot send messages yet",
    )
    assert data(caller.get(f"/v1/conversations/{chat['id']}/messages")) == []
    assert [name for name, _ in events(caller.workspace_id) if name.startswith("message.")] == []


@pytest.mark.parametrize("kind", ["email"])
def test_a_type_without_adapter_cannot_be_connected_to_an_agent(caller, kind):
    channel = make_channel(caller, name=kind, type=kind)
    assert_error(
        caller.post(f"/v1/channels/{channel['id']}/connect", json={"agent_id": make_agent(caller)}),
        409,
        "CHANNEL_TYPE_NOT_AVAILABLE",
        f"type {kind} cannot carry messages",
    )
    assert data(caller.get(f"/v1/channels/{channel['id']}"))["agent_id"] is None
    # Its settings, QR code and widget stay available (they need no network).
    assert caller.get(f"/v1/channels/{channel['id']}/settings").status_code == 200


def test_a_message_left_queued_on_a_type_without_adapter_fails(caller, email_chat):
    """A row queued before its type lost its adapter (or by an older version)."""
    Message.insert(
        id="01a20000-0000-7000-8000-000000000001",
        conversation=email_chat["id"],
        channel=email_chat["channel_id"],
        contact_id=email_chat["contact_id"],
        direction="outbound",
        sender_type="human",
        status="queued",
        type="text",
        text="Hello",
    ).execute()
    assert sending.send_queued() == 1
    failed = data(caller.get("/v1/messages/01a20000-0000-7000-8000-000000000001"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "CHANNEL_CANNOT_SEND")
    assert "type email" in failed["error"]["title"]
    [(_, event)] = events(caller.workspace_id, "message.failed")
    assert event["id"] == failed["id"]


# sms is no type at all: its URL names a real channel of another type.
@pytest.mark.parametrize(("kind", "channel_type"), [("email",) * 2, ("sms", "email")])
def test_types_without_adapter_have_no_callback_url(client, caller, kind, channel_type):
    channel = make_channel(caller, name="x", type=channel_type)
    assert data(caller.get(f"/v1/channels/{channel['id']}"))["type"] == channel_type
    response = client.post(f"/inbound/{kind}/{channel['id']}", json={"x": 1})
    assert_error(response, 404, "CHANNEL_NOT_FOUND", kind)
