"""receive_inbound: the adapters' way in. Contact and conversation upserts,
idempotency on the network id, reopening, events in one transaction."""

import threading
import time
from datetime import UTC, datetime

import pytest

from agent_platform.channels import InboundMessage
from agent_platform.db import database
from agent_platform.errors import NotFound
from agent_platform.models import Channel, Contact, ContactIdentity, Conversation, Event, Message
from agent_platform.services import inbound as inbound_service
from agent_platform.services import replies
from conversations_helpers import (
    data,
    event_names,
    events,
    inbound,
    make_agent,
    make_channel,
    make_contact,
)


@pytest.fixture
def channel(caller):
    return make_channel(caller, agent_id=make_agent(caller))


def test_a_first_message_creates_contact_conversation_and_message(caller, channel):
    sent_at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    result = inbound(
        channel["id"],
        "wamid.HBgM1",
        sender_id="5511987654321",
        text="Oi, tudo bem?",
        sender_name="Ana Souza",
        sender_phone="+5511987654321",
        timestamp=sent_at,
    )
    assert result.duplicate is False
    message = data(caller.get(f"/v1/messages/{result.message.id}"))
    assert (message["direction"], message["sender_type"], message["status"]) == (
        "inbound",
        "contact",
        "received",
    )
    assert (message["text"], message["external_id"]) == ("Oi, tudo bem?", "wamid.HBgM1")
    assert message["metadata"] == {"network_timestamp": "2026-01-02T03:04:05.000000Z"}
    contact = data(caller.get(f"/v1/contacts/{message['contact_id']}"))
    assert (contact["name"], contact["phone"]) == ("Ana Souza", "+5511987654321")
    assert [(i["type"], i["external_id"], i["channel_id"]) for i in contact["identities"]] == [
        ("whatsapp", "5511987654321", channel["id"])
    ]
    conversation = data(caller.get(f"/v1/conversations/{message['conversation_id']}"))
    assert (conversation["status"], conversation["agent_id"], conversation["channel_id"]) == (
        "open",
        channel["agent_id"],
        channel["id"],
    )
    assert conversation["message_count"] == 1
    assert events(caller.workspace_id)[-3:] == [
        ("contact.created", data(caller.get(f"/v1/contacts/{contact['id']}"))),
        (
            "conversation.created",
            {
                **conversation,
                "message_count": 0,
                "last_message_at": None,
                "updated_at": conversation["created_at"],
            },
        ),
        (
            "message.received",
            {
                **message,
                "contact": {
                    "id": contact["id"],
                    "name": "Ana Souza",
                    "phone": "+5511987654321",
                    "email": None,
                },
            },
        ),
    ]


def test_the_same_network_message_is_stored_once(caller, channel):
    first = inbound(channel["id"], "wamid.1")
    before = event_names(caller.workspace_id)
    again = inbound(channel["id"], "wamid.1", text="different text, same id")
    assert again.duplicate is True
    assert again.message.id == first.message.id
    assert Message.select().count() == 1
    assert Message.get_by_id(first.message.id).text == "Oi"
    assert event_names(caller.workspace_id) == before
    assert (
        data(caller.get(f"/v1/conversations/{first.message.conversation_id}"))["message_count"] == 1
    )


def test_the_same_id_on_another_channel_is_another_message(caller, channel):
    second = make_channel(caller, name="Second")
    inbound(channel["id"], "wamid.1")
    inbound(second["id"], "wamid.1")
    assert Message.select().count() == 2


def test_a_second_message_joins_the_conversation(caller, channel):
    first = inbound(channel["id"], "wamid.1")
    before = event_names(caller.workspace_id)
    second = inbound(channel["id"], "wamid.2", text="Are you there?")
    assert second.message.conversation_id == first.message.conversation_id
    assert second.message.contact_id == first.message.contact_id
    assert event_names(caller.workspace_id) == before + ["message.received"]
    assert Conversation.get_by_id(first.message.conversation_id).message_count == 2


def test_a_known_contact_is_recognised_by_phone(caller, channel):
    known = make_contact(caller, name="Ana", phone="+5511987654321")
    result = inbound(
        channel["id"],
        "wamid.1",
        sender_id="5511987654321",
        sender_phone="+5511987654321",
        sender_name="Someone else",
    )
    assert result.message.contact_id == known["id"]
    contact = data(caller.get(f"/v1/contacts/{known['id']}"))
    assert contact["name"] == "Ana"  # a known name is not overwritten
    assert [i["type"] for i in contact["identities"]] == ["whatsapp"]
    assert event_names(caller.workspace_id)[-3:] == [
        "contact.updated",
        "conversation.created",
        "message.received",
    ]
    assert Contact.select().count() == 1


def test_a_known_contact_is_recognised_by_email(caller):
    email = make_channel(caller, name="Mail", type="email")
    known = make_contact(caller, email="ana@example.com")
    result = inbound(
        email["id"], "<m1@example.com>", sender_id="ana@example.com", sender_email="ANA@example.com"
    )
    assert result.message.contact_id == known["id"]


def test_one_contact_writes_from_several_channels(caller, channel):
    second = make_channel(caller, name="Second number")
    telegram = make_channel(caller, name="TG", type="telegram")
    first = inbound(channel["id"], "wamid.1", sender_id="5511987654321")
    same_number = inbound(second["id"], "wamid.9", sender_id="5511987654321")
    assert same_number.message.contact_id == first.message.contact_id
    assert same_number.message.conversation_id != first.message.conversation_id
    contact_id = first.message.contact_id
    # Telegram knows nothing about the number until the contact is linked.
    caller.patch(
        f"/v1/contacts/{contact_id}",
        json={
            "identities": [
                {"type": "whatsapp", "external_id": "5511987654321"},
                {"type": "telegram", "external_id": "424242"},
            ]
        },
    )
    via_telegram = inbound(telegram["id"], "tg.1", sender_id="424242")
    assert via_telegram.message.contact_id == contact_id


def test_a_closed_conversation_is_reopened_and_a_handoff_kept(caller, channel):
    first = inbound(channel["id"], "wamid.1")
    conversation_id = first.message.conversation_id
    caller.post(f"/v1/conversations/{conversation_id}/close")
    inbound(channel["id"], "wamid.2")
    assert Conversation.get_by_id(conversation_id).status == "open"
    assert event_names(caller.workspace_id)[-2:] == ["conversation.reopened", "message.received"]
    caller.post(f"/v1/chats/{conversation_id}/handoff")
    inbound(channel["id"], "wamid.3")
    assert Conversation.get_by_id(conversation_id).status == "handoff"


def test_a_reopened_conversation_is_raised_whole(caller, channel):
    first = inbound(channel["id"], "wamid.1")
    conversation_id = first.message.conversation_id
    caller.post(f"/v1/conversations/{conversation_id}/close")
    inbound(channel["id"], "wamid.2")
    reopened = events(caller.workspace_id, "conversation.reopened")[-1][1]
    shown = data(caller.get(f"/v1/conversations/{conversation_id}"))
    assert reopened == {**shown, "message_count": 1, "last_message_at": reopened["last_message_at"]}
    assert reopened["contact_id"] == first.message.contact_id
    assert reopened["channel_id"] == channel["id"]


def test_a_contact_learns_its_name_from_a_later_message(caller, channel):
    first = inbound(channel["id"], "wamid.1", sender_phone="+5511933334444")
    contact_id = first.message.contact_id
    assert data(caller.get(f"/v1/contacts/{contact_id}"))["name"] == ""
    second = inbound(channel["id"], "wamid.2", sender_name="Ana Souza")
    shown = data(caller.get(f"/v1/contacts/{contact_id}"))
    assert shown["name"] == "Ana Souza" and shown["phone"] == "+5511933334444"
    assert ("contact.updated", shown) in events(caller.workspace_id)
    received = events(caller.workspace_id, "message.received")[-1][1]
    assert received["contact"]["name"] == "Ana Souza"
    assert second.message.conversation_id == first.message.conversation_id


def test_a_conversation_without_agent_gets_the_channels_later(caller):
    channel = make_channel(caller)
    first = inbound(channel["id"], "wamid.1")
    assert Conversation.get_by_id(first.message.conversation_id).agent_id is None
    agent_id = make_agent(caller)
    caller.post(f"/v1/channels/{channel['id']}/connect", json={"agent_id": agent_id})
    inbound(channel["id"], "wamid.2")
    assert Conversation.get_by_id(first.message.conversation_id).agent_id == agent_id


def test_replies_and_media_and_unknown_types(caller, channel):
    first = inbound(channel["id"], "wamid.1")
    reply = inbound(
        channel["id"],
        "wamid.2",
        type="image",
        text=None,
        caption="this one",
        media_url="https://media.example.com/x.jpg",
        media_mime_type="image/jpeg",
        reply_to_external_id="wamid.1",
    )
    assert reply.message.reply_to_id == first.message.id
    assert (reply.message.type, reply.message.caption) == ("image", "this one")
    odd = inbound(
        channel["id"], "wamid.3", type="reaction", text=None, reply_to_external_id="wamid.unknown"
    )
    assert odd.message.type == "unsupported"
    assert odd.message.reply_to_id is None
    assert odd.message.metadata == {
        "network_type": "reaction",
        "reply_to_external_id": "wamid.unknown",
    }


def test_workspaces_stay_apart(caller, other, channel):
    theirs = make_channel(other)
    mine = inbound(channel["id"], "wamid.1", sender_id="5511987654321")
    their = inbound(theirs["id"], "wamid.1", sender_id="5511987654321")
    assert mine.message.contact_id != their.message.contact_id
    assert [c["id"] for c in data(other.get("/v1/contacts"))] == [their.message.contact_id]
    assert [n for n in event_names(other.workspace_id) if n.startswith("message.")] == [
        "message.received"
    ]


def test_an_inactive_channel_receives_nothing(caller, channel):
    caller.delete(f"/v1/channels/{channel['id']}")
    with pytest.raises(NotFound) as error:
        inbound(channel["id"], "wamid.1")
    assert error.value.code == "CHANNEL_NOT_FOUND"
    assert Message.select().count() == 0


def test_malformed_input_is_a_value_error(caller, channel):
    with pytest.raises(ValueError):
        inbound(channel["id"], "", sender_id="1")
    with pytest.raises(ValueError):
        inbound(channel["id"], "wamid.1", sender_id="")


def test_everything_happens_in_one_transaction(caller, channel, monkeypatch):
    real_emit = inbound_service.emit

    def failing_emit(workspace_id, name, payload, now=None):
        if name == "message.received":
            raise RuntimeError("crash before commit")
        return real_emit(workspace_id, name, payload, now=now)

    monkeypatch.setattr(inbound_service, "emit", failing_emit)
    with pytest.raises(RuntimeError):
        inbound(channel["id"], "wamid.1", sender_name="Ana")
    for model in (Contact, ContactIdentity, Conversation, Message):
        assert model.select().count() == 0
    assert Event.select().where(Event.name.startswith("contact.")).count() == 0
    monkeypatch.undo()
    assert inbound(channel["id"], "wamid.1").duplicate is False


def test_receive_accepts_a_stale_channel_object(caller, channel):
    stale = Channel.get_by_id(channel["id"])
    caller.post(f"/v1/channels/{channel['id']}/disconnect")
    result = inbound_service.receive_inbound(
        stale, InboundMessage(external_id="w", sender_id="5511900000000")
    )
    assert Conversation.get_by_id(result.message.conversation_id).agent_id is None


def test_a_channel_row_loaded_earlier_is_checked_again_inside_the_transaction(caller):
    # Adapters load the channel before calling (the WhatsApp intake checks the
    # signature with it): its agent and its being active are read again.
    channel = make_channel(caller)
    loaded = Channel.get_by_id(channel["id"])
    agent_id = make_agent(caller)
    caller.post(f"/v1/channels/{channel['id']}/connect", json={"agent_id": agent_id})
    message = InboundMessage(external_id="wamid.1", sender_id="5511933334444", text="Oi")
    stored = inbound_service.receive_inbound(loaded, message).message
    assert Conversation.get_by_id(stored.conversation_id).agent_id == agent_id
    caller.delete(f"/v1/channels/{channel['id']}")
    late = InboundMessage(external_id="wamid.2", sender_id="5511933334444", text="Oi")
    with pytest.raises(NotFound) as error:
        inbound_service.receive_inbound(loaded, late)
    assert error.value.code == "CHANNEL_NOT_FOUND"
    assert Message.select().count() == 1


@pytest.mark.parametrize("external_ids", [("wamid.same", "wamid.same"), ("wamid.1", "wamid.2")])
def test_a_new_senders_messages_stored_at_once_make_one_contact(
    monkeypatch, app, caller, channel, external_ids
):
    """Two servers or greenlets store a new sender's messages at the same
    moment (the same one redelivered, or two): the second waits for the
    first's commit, then finds its message or its contact; nothing fails."""
    storing, real_schedule = threading.Event(), replies.schedule_reply

    def slow_schedule(*args):
        storing.set()
        time.sleep(0.5)  # inside the first's transaction: the second arrives
        real_schedule(*args)

    monkeypatch.setattr(replies, "schedule_reply", slow_schedule)
    results = {}

    def first():
        with app.app_context():
            results["first"] = inbound(channel["id"], external_ids[0], sender_id="5511955556666")
        database.close()

    writer = threading.Thread(target=first)
    writer.start()
    assert storing.wait(10)
    second = inbound(channel["id"], external_ids[1], sender_id="5511955556666")
    writer.join(10)
    assert second.duplicate == (external_ids[0] == external_ids[1])
    assert second.message.contact_id == results["first"].message.contact_id
    assert Contact.select().count() == 1
    assert Message.select().count() == len(set(external_ids))
