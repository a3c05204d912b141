"""End to end through the HTTP API and the Graph API stand-in: a customer's
signed text arrives, a human answers through the API, the send job posts it
to the Graph API, Meta's statuses move it to read, every event is raised."""

from datetime import timedelta

from agent_platform.models import Contact, Conversation, Event, Message
from agent_platform.models.base import utcnow
from agent_platform.services import sending
from conversations_helpers import WA_SETTINGS, data, events
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import T0, messages_payload, post, status, statuses_payload, text


def test_a_customer_writes_a_human_answers_and_reads_arrive(client, caller, channel, graph):
    # 1. A signed text arrives at the channel's callback URL.
    payload = messages_payload(text("Hi! Do you deliver on Sundays?", wamid="wamid.HBgN1"))
    response = post(client, channel["id"], payload)
    assert response.status_code == 200
    assert response.get_json()["data"]["messages"] == 1

    # 2. Contact, conversation and message exist.
    contact = Contact.get(Contact.phone == "+5511933334444")
    assert contact.name == "Customer 4444"
    conversation = Conversation.get(Conversation.contact == contact.id)
    assert (conversation.channel_id, conversation.status) == (channel["id"], "open")
    inbound = Message.get(Message.external_id == "wamid.HBgN1")
    assert (inbound.conversation_id, inbound.text) == (
        conversation.id,
        "Hi! Do you deliver on Sundays?",
    )

    # 3. message.received is in the outbox, with the message as the API shows it.
    [(_, received)] = events(caller.workspace_id, "message.received")
    assert received["id"] == inbound.id
    assert received["contact"]["phone"] == "+5511933334444"
    assert Event.select().where(Event.name == "message.received").count() == 1

    # 4. A human replies through the API; the send job posts it to the Graph API.
    reply = data(
        caller.post(
            f"/v1/conversations/{conversation.id}/messages",
            json={"text": "Yes, 9am to 1pm.", "reply_to_id": inbound.id},
        ),
        201,
    )
    assert reply["status"] == "queued"
    sent_at = utcnow()
    assert sending.send_queued_job(now=sent_at) == 1
    [request] = graph.requests
    assert request.path == f"/v21.0/{WA_SETTINGS['phone_number_id']}/messages"
    assert request.headers["authorization"] == f"Bearer {WA_SETTINGS['access_token']}"
    assert request.json == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "5511933334444",
        "type": "text",
        "text": {"body": "Yes, 9am to 1pm.", "preview_url": False},
        "context": {"message_id": "wamid.HBgN1"},
    }
    sent = data(caller.get(f"/v1/messages/{reply['id']}"))
    assert (sent["status"], sent["external_id"]) == ("sent", "wamid.OUT1")

    # 5. Meta's "sent" then "read" statuses arrive, signed.
    pricing = {"billable": True, "pricing_model": "PMP", "category": "service"}
    sent_status = status("wamid.OUT1", "sent", T0 + 60, pricing=pricing)
    assert post(client, channel["id"], statuses_payload(sent_status)).status_code == 200
    read_status = status("wamid.OUT1", "read", T0 + 120)
    assert post(client, channel["id"], statuses_payload(read_status)).status_code == 200

    # 6. The message reads "read", and the events were raised once each.
    final = data(caller.get(f"/v1/messages/{reply['id']}"))
    assert final["status"] == "read"
    assert final["read_at"] == "2026-01-02T03:06:05.000000Z"
    assert final["metadata"]["network_pricing"] == pricing
    message_events = [
        (name, body["id"], body["status"])
        for name, body in events(caller.workspace_id)
        if name.startswith("message.")
    ]
    assert message_events == [
        ("message.received", inbound.id, "received"),
        ("message.sent", reply["id"], "sent"),
        ("message.read", reply["id"], "read"),
    ]
    assert sending.send_queued_job(now=sent_at + timedelta(minutes=1)) == 0
    assert len(graph.requests) == 1
