"""Real WhatsApp Cloud API webhook payloads, signed as Meta signs them, and a
channel set up against the local Graph API stand-in (tests/graph_stub.py)."""

import hashlib
import hmac
import json

import pytest

from conversations_helpers import WA_SETTINGS, data, make_agent, make_channel
from graph_stub import GraphStub

APP_SECRET = WA_SETTINGS["app_secret"]
PHONE_NUMBER_ID = WA_SETTINGS["phone_number_id"]
WABA_ID = WA_SETTINGS["business_account_id"]
CUSTOMER = "5511933334444"
T0 = 1767323045  # 2026-01-02 03:04:05 UTC

# `from whatsapp_helpers import *` brings the fixtures (and only them).
__all__ = ["channel", "graph", "settings"]


@pytest.fixture
def graph():
    stub = GraphStub(token=WA_SETTINGS["access_token"], phone_number_id=PHONE_NUMBER_ID)
    yield stub
    stub.close()


@pytest.fixture
def settings(tmp_path, graph):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_TIMEOUT_SECONDS": 2,
        "MEDIA_DIR": str(tmp_path / "media"),
        "SERVER_PUBLIC_URL": "https://agents.example.com",
    }


@pytest.fixture
def channel(caller):
    """A WhatsApp channel with every setting, connected to an agent."""
    return make_channel(caller, settings=dict(WA_SETTINGS), agent_id=make_agent(caller))


def sign(body, secret=APP_SECRET):
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(client, channel_id, payload, secret=APP_SECRET, signature=None, raw=None):
    """POST a payload to the channel's callback URL, signed over the exact bytes."""
    body = raw if raw is not None else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    signature = sign(body, secret) if signature is None else signature
    if signature:
        headers["X-Hub-Signature-256"] = signature
    return client.post(f"/inbound/whatsapp/{channel_id}", data=body, headers=headers)


def received(client, channel_id, payload):
    """POST and return the counts of the 200 answer."""
    return data(post(client, channel_id, payload))


def envelope(*values, entry_id=WABA_ID):
    """A webhook body with one entry whose changes are `values` (field, value)."""
    changes = [{"field": field, "value": value} for field, value in values]
    return {"object": "whatsapp_business_account", "entry": [{"id": entry_id, "changes": changes}]}


def messages_value(messages=(), statuses=(), contacts=None, number_id=PHONE_NUMBER_ID, **extra):
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "5511987654321", "phone_number_id": number_id},
    }
    if messages:
        senders = {message["from"] for message in messages if "from" in message}
        value["contacts"] = contacts or [
            {"profile": {"name": f"Customer {wa_id[-4:]}"}, "wa_id": wa_id} for wa_id in senders
        ]
        value["messages"] = list(messages)
    if statuses:
        value["statuses"] = list(statuses)
    value.update(extra)
    return value


def messages_payload(*messages, **options):
    return envelope(("messages", messages_value(messages, **options)))


def statuses_payload(*statuses):
    return envelope(("messages", messages_value(statuses=statuses)))


def message(kind, content=None, wamid="wamid.IN1", sender=CUSTOMER, timestamp=T0, **extra):
    """One entry of value.messages: {"type": kind, kind: content, ...}."""
    item = {"from": sender, "id": wamid, "timestamp": str(timestamp), "type": kind}
    if content is not None:
        item[kind] = content
    item.update(extra)
    return item


def text(body="Oi, tudo bem?", **options):
    return message("text", {"body": body}, **options)


def status(wamid, kind, timestamp=T0, recipient=CUSTOMER, **extra):
    return {
        "id": wamid,
        "status": kind,
        "timestamp": str(timestamp),
        "recipient_id": recipient,
        **extra,
    }


# A template message as the API takes it, and as the Cloud API receives it.
CUSTOMER = "5511933334444"
TEMPLATE = {"name": "order_update", "language": "pt_BR", "parameters": ["Bia", "#1234"]}
TEMPLATE_SENT = {
    "messaging_product": "whatsapp",
    "recipient_type": "individual",
    "to": CUSTOMER,
    "type": "template",
    "template": {
        "name": "order_update",
        "language": {"code": "pt_BR"},
        "components": [
            {
                "type": "body",
                "parameters": [{"type": "text", "text": "Bia"}, {"type": "text", "text": "#1234"}],
            }
        ],
    },
}
