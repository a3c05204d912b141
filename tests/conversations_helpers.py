"""Helpers for the channel, contact, conversation, message and chat tests."""

from agent_platform.channels import InboundMessage
from agent_platform.models import Channel, Event
from agent_platform.services import inbound as inbound_service

WA_SETTINGS = {
    "phone_number_id": "106540352242922",
    "business_account_id": "102290129340398",
    "display_phone_number": "+5511987654321",
    "access_token": "EAAG-secret-token-value",
    "app_secret": "app-secret-value",
    "verify_token": "verify-token-value",
}


def make_agent(caller, name="Ana"):
    response = caller.post("/v1/agents", json={"name": name})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["data"]["id"]


def make_channel(caller, name="WhatsApp", type="whatsapp", settings=None, agent_id=None):
    body = {"name": name, "type": type}
    if settings is not None:
        body["settings"] = settings
    response = caller.post("/v1/channels", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    channel = response.get_json()["data"]
    if agent_id:
        connected = caller.post(
            f"/v1/channels/{channel['id']}/connect", json={"agent_id": agent_id}
        )
        assert connected.status_code == 200, connected.get_data(as_text=True)
        channel = connected.get_json()["data"]
    return channel


def make_contact(caller, **values):
    response = caller.post("/v1/contacts", json=values)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["data"]


def make_conversation(caller, contact_id, channel_id, **values):
    body = {"contact_id": contact_id, "channel_id": channel_id, **values}
    response = caller.post("/v1/conversations", json=body)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["data"]


def setup_chat(caller, agent=True):
    """An agent, a connected WhatsApp channel, a contact and their open conversation."""
    agent_id = make_agent(caller) if agent else None
    channel = make_channel(caller, settings=WA_SETTINGS, agent_id=agent_id)
    contact = make_contact(caller, name="Bia", phone="+5511911112222")
    conversation = make_conversation(caller, contact["id"], channel["id"])
    return {
        "agent_id": agent_id,
        "channel": channel,
        "contact": contact,
        "conversation": conversation,
    }


def send(caller, conversation_id, text="Hello", headers=None, **values):
    body = {"text": text, **values} if text is not None else values
    return caller.post(f"/v1/conversations/{conversation_id}/messages", json=body, headers=headers)


def inbound(channel_id, external_id, sender_id="5511933334444", text="Oi", now=None, **values):
    """Deliver a message through the adapters' service function."""
    channel = Channel.get_by_id(channel_id)
    message = InboundMessage(external_id=external_id, sender_id=sender_id, text=text, **values)
    return inbound_service.receive_inbound(channel, message, now=now)


def events(workspace_id, name=None):
    """The workspace's events in the order raised, as (name, data)."""
    query = Event.select().where(Event.workspace == workspace_id).order_by(Event.id)
    found = [(event.name, event.data) for event in query]
    return [pair for pair in found if name is None or pair[0] == name]


def event_names(workspace_id):
    return [name for name, _ in events(workspace_id)]


def data(response, status=200):
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()["data"]


def id_forms(user_id):
    """The forms of one id that path ids accept, canonical first."""
    plain = user_id.replace("-", "")
    return [user_id, user_id.upper(), plain, "{" + user_id + "}", "urn:uuid:" + plain.upper()]
