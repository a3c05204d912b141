"""Sending queued messages through a channel type's sender, and delivery
receipts: statuses only move forward, each move raises its event once."""

from datetime import timedelta

import pytest

from agent_platform.channels import (
    InboundMessage,
    SendError,
    StatusUpdate,
    get_sender,
    register_sender,
    unregister_sender,
)
from agent_platform.channels.fake import FakeSender
from agent_platform.models import Channel, Message
from agent_platform.models.base import utcnow
from agent_platform.services import inbound, receipts, sending
from conftest import assert_error
from conversations_helpers import data, events, send, setup_chat


@pytest.fixture(autouse=True)
def without_real_senders(app):
    """These tests bring their own senders: the real WhatsApp sender (registered
    when the app's modules are imported) is set aside, and restored after."""
    real = get_sender("whatsapp")
    unregister_sender("whatsapp")
    yield
    if real is not None:
        register_sender("whatsapp", real)


@pytest.fixture
def fake():
    sender = FakeSender()
    register_sender("whatsapp", sender)
    yield sender
    unregister_sender("whatsapp")


@pytest.fixture
def chat(caller):
    return setup_chat(caller)


def message_events(caller):
    return [
        (name, body["id"], body["status"])
        for name, body in events(caller.workspace_id)
        if name.startswith("message.")
    ]


def test_without_a_sender_a_message_is_refused_when_posted(caller, chat):
    conversation_id = chat["conversation"]["id"]
    assert_error(
        send(caller, conversation_id), 409, "CHANNEL_CANNOT_SEND", "type whatsapp cannot send"
    )
    assert data(caller.get(f"/v1/conversations/{conversation_id}/messages")) == []
    assert message_events(caller) == []


def test_a_queued_message_whose_sender_went_away_fails_with_the_reason(caller, chat, fake):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    unregister_sender("whatsapp")
    assert sending.send_queued() == 1
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "CHANNEL_CANNOT_SEND")
    assert "type whatsapp cannot send" in failed["error"]["title"]
    assert message_events(caller) == [("message.failed", message["id"], "failed")]
    assert sending.send_queued() == 0  # nothing left queued


def test_a_sender_sends_the_queue_once(caller, chat, fake):
    first = data(send(caller, chat["conversation"]["id"], text="one"), 201)
    second = data(send(caller, chat["conversation"]["id"], text="two"), 201)
    assert sending.send_queued() == 2
    assert [(message_id, external_id) for _, message_id, external_id in fake.sent] == [
        (first["id"], "fake-1"),
        (second["id"], "fake-2"),
    ]
    sent = data(caller.get(f"/v1/messages/{first['id']}"))
    assert (sent["status"], sent["external_id"]) == ("sent", "fake-1")
    assert sent["sent_at"] is not None
    assert sending.send_queued() == 0  # nothing is sent twice
    assert message_events(caller) == [
        ("message.sent", first["id"], "sent"),
        ("message.sent", second["id"], "sent"),
    ]
    assert events(caller.workspace_id, "message.sent")[0][1] == sent


def test_a_claimed_message_is_not_claimed_again_while_leased(caller, chat):
    now = utcnow()
    nested = []

    class ReentrantSender(FakeSender):
        def send(self, channel, msg):
            # Another worker running at the same moment finds nothing to claim.
            nested.append(sending.send_queued(now=now))
            return super().send(channel, msg)

    sender = ReentrantSender()
    register_sender("whatsapp", sender)
    message = data(send(caller, chat["conversation"]["id"]), 201)
    try:
        assert sending.send_queued(now=now) == 1
    finally:
        unregister_sender("whatsapp")
    assert nested == [0]
    assert [message_id for _, message_id, _ in sender.sent] == [message["id"]]


def test_a_permanent_error_fails_the_message(caller, chat, fake):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    fake.fail_next(SendError("131026", "Receiver is incapable of receiving this message", {"x": 1}))
    sending.send_queued()
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert failed["status"] == "failed"
    assert failed["error"] == {
        "code": "131026",
        "title": "Receiver is incapable of receiving this message",
        "details": {"x": 1},
    }
    assert message_events(caller) == [("message.failed", message["id"], "failed")]


def test_temporary_errors_are_retried_then_fail(caller, chat, fake):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    now = utcnow()
    for _ in range(3):
        fake.fail_next(SendError("503", "Unavailable", retryable=True))
    assert sending.send_queued(now=now, max_attempts=3) == 1
    assert Message.get_by_id(message["id"]).status == "queued"
    assert sending.send_queued(now=now, max_attempts=3) == 0  # waiting for its retry time
    now += timedelta(seconds=5)
    assert sending.send_queued(now=now, max_attempts=3) == 1
    now += timedelta(seconds=10)
    assert sending.send_queued(now=now, max_attempts=3) == 1
    final = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (final["status"], final["error"]["code"]) == ("failed", "503")
    assert message_events(caller) == [("message.failed", message["id"], "failed")]


def test_a_retry_that_succeeds_clears_the_error(caller, chat, fake):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    now = utcnow()
    fake.fail_next(SendError("429", "Rate limited", retryable=True))
    sending.send_queued(now=now)
    assert Message.get_by_id(message["id"]).error["code"] == "429"
    sending.send_queued(now=now + timedelta(seconds=5))
    sent = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (sent["status"], sent["error"]) == ("sent", None)


def test_the_networks_retry_after_is_honoured(caller, chat, fake):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    now = utcnow()
    fake.fail_next(SendError("429", "Too Many Requests", retryable=True, retry_after=42))
    sending.send_queued(now=now)
    assert sending.send_queued(now=now + timedelta(seconds=41)) == 0  # not after 5 s
    assert sending.send_queued(now=now + timedelta(seconds=42)) == 1
    assert Message.get_by_id(message["id"]).status == "sent"


def test_a_crashing_sender_does_not_stop_the_others(caller, chat, fake, caplog):
    message = data(send(caller, chat["conversation"]["id"]), 201)

    class Broken:
        def send(self, channel, msg):
            raise RuntimeError("boom")

    register_sender("whatsapp", Broken())
    sending.send_queued()
    stored = Message.get_by_id(message["id"])
    assert (stored.status, stored.error["code"]) == ("queued", "SENDER_ERROR")
    assert "boom" in caplog.text


def sent_message(caller, chat, fake):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    sending.send_queued()
    channel = Channel.get_by_id(chat["channel"]["id"])
    return channel, message["id"], Message.get_by_id(message["id"]).external_id


def test_receipts_move_the_status_forward_once(caller, chat, fake):
    channel, message_id, external_id = sent_message(caller, chat, fake)
    at = utcnow()
    delivered = receipts.apply_status(channel, external_id, "delivered", at)
    assert (delivered.status, delivered.delivered_at) == ("delivered", at)
    receipts.apply_status(channel, external_id, "delivered", at + timedelta(seconds=1))
    receipts.apply_status(channel, external_id, "read", at + timedelta(seconds=2))
    receipts.apply_status(channel, external_id, "read", at + timedelta(seconds=3))
    message = data(caller.get(f"/v1/messages/{message_id}"))
    assert message["status"] == "read"
    assert message["delivered_at"] == at.isoformat() + "Z"
    assert message_events(caller) == [
        ("message.sent", message_id, "sent"),
        ("message.delivered", message_id, "delivered"),
        ("message.read", message_id, "read"),
    ]


def test_a_late_receipt_is_ignored_but_its_time_kept(caller, chat, fake):
    channel, message_id, external_id = sent_message(caller, chat, fake)
    read_at = utcnow()
    receipts.apply_status(channel, external_id, "read", read_at)
    late = receipts.apply_status(channel, external_id, "delivered", read_at - timedelta(seconds=3))
    assert late.status == "read"
    assert late.delivered_at == read_at - timedelta(seconds=3)
    receipts.apply_status(channel, external_id, "failed", error={"code": "x"})
    assert Message.get_by_id(message_id).status == "read"
    assert [name for name, _, _ in message_events(caller)] == ["message.sent", "message.read"]


@pytest.mark.parametrize("before", ["sent", "delivered"])
def test_failed_from_sent_or_delivered_is_final(caller, chat, fake, before):
    channel, message_id, external_id = sent_message(caller, chat, fake)
    if before == "delivered":
        receipts.apply_status(channel, external_id, "delivered")
    error = {"code": "131047", "title": "Re-engagement message", "details": "24h window"}
    failed = receipts.apply_status(channel, external_id, "failed", error=error)
    assert (failed.status, failed.error) == ("failed", error)
    receipts.apply_status(channel, external_id, "read")
    receipts.apply_status(channel, external_id, "failed")
    assert Message.get_by_id(message_id).status == "failed"
    assert [name for name, _, _ in message_events(caller)][-1] == "message.failed"
    assert [name for name, _, _ in message_events(caller)].count("message.failed") == 1
    assert "message.read" not in [name for name, _, _ in message_events(caller)]


def test_a_receipt_for_an_unknown_or_inbound_message_is_ignored(caller, chat):
    channel = Channel.get_by_id(chat["channel"]["id"])
    assert receipts.apply_status(channel, "wamid.unknown", "read") is None
    incoming = InboundMessage(external_id="wamid.in", sender_id="5511900001111", text="hi")
    inbound.receive_inbound(channel, incoming)
    assert receipts.apply_status(channel, "wamid.in", "read") is None
    with pytest.raises(ValueError):
        receipts.apply_status(channel, "wamid.in", "seen")


def test_receipts_are_per_channel(caller, chat, fake, other):
    channel, message_id, external_id = sent_message(caller, chat, fake)
    foreign_channel = Channel.get_by_id(setup_chat(other)["channel"]["id"])
    assert receipts.apply_status(foreign_channel, external_id, "read") is None
    assert Message.get_by_id(message_id).status == "sent"


def test_status_update_objects(caller, chat, fake):
    channel, message_id, external_id = sent_message(caller, chat, fake)
    receipts.apply_status_update(channel, StatusUpdate(external_id=external_id, status="delivered"))
    assert Message.get_by_id(message_id).status == "delivered"


def test_the_scheduled_job_uses_the_configuration(app, caller, chat, fake):
    data(send(caller, chat["conversation"]["id"]), 201)
    assert sending.send_queued_job() == 1
    assert len(fake.sent) == 1
