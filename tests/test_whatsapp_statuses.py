"""Statuses of the messages the platform sent, and the other fields of a
WhatsApp number (template and quality updates, value-level errors) kept in
the channel's event log."""

from datetime import datetime

import pytest

from agent_platform.models import ChannelEvent, Message
from conftest import assert_error
from conversations_helpers import data, events, make_contact, make_conversation
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import T0, envelope, received, status, statuses_payload

# (131047, the re-engagement refusal, is mapped: test_whatsapp_templates.py.)
FAILED_ERROR = {
    "code": 131026,
    "title": "Message undeliverable",
    "message": "Message undeliverable",
    "error_data": {"details": "Unable to deliver message to this phone number."},
    "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
}


@pytest.fixture
def outbound(caller, channel):
    """A message the platform sent through the channel, known to Meta as wamid.OUT1."""
    contact = make_contact(caller, name="Bia", phone="+5511933334444")
    conversation = make_conversation(caller, contact["id"], channel["id"])
    sent = caller.post(f"/v1/conversations/{conversation['id']}/messages", json={"text": "Hi"})
    message_id = data(sent, 201)["id"]
    Message.update(status="sent", external_id="wamid.OUT1", sent_at=datetime(2026, 1, 2)).where(
        Message.id == message_id
    ).execute()
    return message_id


def shown(caller, message_id):
    return data(caller.get(f"/v1/messages/{message_id}"))


def status_events(caller):
    return [name for name, _ in events(caller.workspace_id) if name.startswith("message.")]


def test_delivered_then_read(client, caller, channel, outbound):
    received(client, channel["id"], statuses_payload(status("wamid.OUT1", "delivered", T0 + 1)))
    assert shown(caller, outbound)["status"] == "delivered"
    received(client, channel["id"], statuses_payload(status("wamid.OUT1", "read", T0 + 2)))
    message = shown(caller, outbound)
    assert message["status"] == "read"
    assert message["delivered_at"] == "2026-01-02T03:04:06.000000Z"
    assert message["read_at"] == "2026-01-02T03:04:07.000000Z"
    assert status_events(caller) == ["message.delivered", "message.read"]


def test_read_before_delivered_never_goes_back(client, caller, channel, outbound):
    received(client, channel["id"], statuses_payload(status("wamid.OUT1", "read", T0 + 2)))
    received(client, channel["id"], statuses_payload(status("wamid.OUT1", "delivered", T0 + 1)))
    message = shown(caller, outbound)
    assert message["status"] == "read"
    assert message["delivered_at"] == "2026-01-02T03:04:06.000000Z"  # its time is kept
    assert status_events(caller) == ["message.read"]


def test_failed_keeps_the_networks_error(client, caller, channel, outbound):
    failed = status("wamid.OUT1", "failed", T0 + 3, errors=[FAILED_ERROR])
    received(client, channel["id"], statuses_payload(failed))
    message = shown(caller, outbound)
    assert message["status"] == "failed"
    assert message["failed_at"] == "2026-01-02T03:04:08.000000Z"
    assert message["error"] == {
        "code": "131026",
        "title": "Message undeliverable",
        "details": FAILED_ERROR["error_data"]["details"],
    }
    assert status_events(caller) == ["message.failed"]
    assert events(caller.workspace_id, "message.failed")[0][1]["error"]["code"] == "131026"


def test_sent_with_conversation_and_pricing_kept(client, caller, channel, outbound):
    Message.update(status="queued").where(Message.id == outbound).execute()
    conversation = {
        "id": "c2a1f0e1d7e8b9c3",
        "expiration_timestamp": str(T0 + 86400),
        "origin": {"type": "service"},
    }
    pricing = {"billable": True, "pricing_model": "CBP", "category": "service"}
    sent = status("wamid.OUT1", "sent", T0, conversation=conversation, pricing=pricing)
    received(client, channel["id"], statuses_payload(sent))
    message = shown(caller, outbound)
    assert message["status"] == "sent"
    assert message["metadata"]["network_conversation"] == conversation
    assert message["metadata"]["network_pricing"] == pricing
    # Kept even when the status itself changes nothing (a repeated "sent").
    later = {**pricing, "pricing_model": "PMP"}
    received(client, channel["id"], statuses_payload({**sent, "pricing": later}))
    assert shown(caller, outbound)["metadata"]["network_pricing"] == later
    # Optional: statuses without them are fine.
    received(client, channel["id"], statuses_payload(status("wamid.OUT1", "delivered")))
    assert shown(caller, outbound)["status"] == "delivered"


def test_statuses_of_unknown_messages_and_unknown_statuses_are_answered(
    client, caller, channel, outbound
):
    payload = statuses_payload(
        status("wamid.SENT-ELSEWHERE", "read"),
        status("wamid.OUT1", "deleted"),
        {"status": "read"},  # no id
    )
    counts = received(client, channel["id"], payload)
    assert (counts["statuses"], counts["notices"], counts["failed"]) == (1, 2, 0)
    assert shown(caller, outbound)["status"] == "sent"
    assert sorted(e.kind for e in ChannelEvent.select()) == ["malformed", "status_ignored"]


def test_template_status_update_is_logged(client, caller, channel):
    value = {
        "event": "APPROVED",
        "message_template_id": 1234567890,
        "message_template_name": "appointment_reminder",
        "message_template_language": "pt_BR",
        "reason": "NONE",
    }
    counts = received(client, channel["id"], envelope(("message_template_status_update", value)))
    assert counts["notices"] == 1
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert len(logged) == 1
    assert logged[0]["kind"] == "message_template_status_update"
    assert logged[0]["is_error"] is False
    assert logged[0]["payload"] == {"entry_id": "102290129340398", "value": value}
    assert logged[0]["channel_id"] == channel["id"]
    assert "channel.error" not in [name for name, _ in events(caller.workspace_id)]


def test_quality_update_is_logged(client, caller, channel):
    value = {
        "display_phone_number": "5511987654321",
        "event": "DOWNGRADE",
        "current_limit": "TIER_250",
    }
    received(client, channel["id"], envelope(("phone_number_quality_update", value)))
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert [(e["kind"], e["payload"]["value"]) for e in logged] == [
        ("phone_number_quality_update", value)
    ]


def test_value_level_errors_are_logged_and_raise_channel_error(client, caller, channel):
    error = {
        "code": 130501,
        "title": "Recipient phone number not in allowed list",
        "message": "Recipient phone number not in allowed list",
        "error_data": {"details": "Add the number to the allowed list of the test number."},
    }
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "5511987654321", "phone_number_id": "106540352242922"},
        "errors": [error],
    }
    counts = received(client, channel["id"], envelope(("messages", value)))
    assert counts["notices"] == 1
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events?kind=errors"))
    assert len(logged) == 1 and logged[0]["is_error"] is True
    assert logged[0]["payload"]["errors"] == [error]
    raised = events(caller.workspace_id, "channel.error")
    assert len(raised) == 1
    assert raised[0][1]["id"] == channel["id"]
    assert raised[0][1]["error"] == {
        "code": "130501",
        "title": "Recipient phone number not in allowed list",
        "details": "Add the number to the allowed list of the test number.",
    }


def test_the_event_log_is_paginated_filtered_and_scoped(client, caller, channel, other):
    for number in range(5):
        value = {"event": "FLAGGED", "current_limit": f"TIER_{number}"}
        received(client, channel["id"], envelope(("phone_number_quality_update", value)))
    received(client, channel["id"], envelope(("account_update", {"event": "VERIFIED_ACCOUNT"})))
    path = f"/v1/channels/{channel['id']}/events"
    page = caller.get(path + "?limit=2&page=2&order=asc").get_json()
    assert page["pagination"] == {"page": 2, "limit": 2, "total": 6, "total_pages": 3}
    assert [e["payload"]["value"]["current_limit"] for e in page["data"]] == ["TIER_2", "TIER_3"]
    newest = data(caller.get(path + "?limit=1"))
    assert newest[0]["kind"] == "account_update"
    filtered = caller.get(path + "?kind=phone_number_quality_update").get_json()
    assert filtered["pagination"]["total"] == 5
    assert_error(caller.get(path + "?sort=kind"), 400, "VALIDATION_ERROR", "sort")
    assert_error(caller.get(path + "?nope=1"), 400, "VALIDATION_ERROR")
    assert_error(other.get(path), 404, "CHANNEL_NOT_FOUND")
    assert_error(caller.get("/v1/channels/not-an-id/events"), 404, "CHANNEL_NOT_FOUND")
