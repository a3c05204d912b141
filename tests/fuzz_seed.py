"""Objects of every kind in one workspace, for the fuzz test's path ids."""

from datetime import timedelta

from agent_platform.models.base import utcnow
from conversations_helpers import WA_SETTINGS, data, inbound
from webhooks_helpers import deliveries_of

# Nothing listens there: webhook deliveries and MCP syncs fail at once.
CLOSED_PORT_URL = "http://127.0.0.1:9/closed"


class _Client:
    def __init__(self, client, raw_key):
        self.client, self.key = client, raw_key

    def post(self, path, body):
        return data(self.client.post(path, json=body, headers={"x-api-key": self.key}), 201)


def seed_workspace(client, raw_key):
    """{path parameter name: id of a live object} for the workspace of `raw_key`."""
    api = _Client(client, raw_key)
    webhook = api.post("/v1/webhooks", {"url": CLOSED_PORT_URL, "events": ["*"]})
    server = api.post("/v1/mcp-servers", {"name": "Tools", "url": CLOSED_PORT_URL})
    ids = {"webhook_id": webhook["id"], "server_id": server["id"]}
    ids.update(_seed_agent(api))
    ids.update(_seed_chat(api))  # its events queue deliveries to the webhook
    ids.update(_seed_sales(api, ids["contact_id"]))
    ids["appointment_id"] = _seed_appointment(api, ids["contact_id"])
    ids["delivery_id"] = deliveries_of(webhook["id"])[0].id
    return ids


def _seed_agent(api):
    agent_id = api.post("/v1/agents", {"name": "Fuzzed agent"})["id"]
    training = api.post(
        f"/v1/agents/{agent_id}/trainings", {"type": "text", "content": "Hours: 9-5"}
    )
    intention = api.post(
        f"/v1/agents/{agent_id}/intentions",
        {
            "name": "Cancel",
            "examples": ["I want to cancel my order"],
            "action": "reply",
            "reply_text": "Cancelled.",
        },
    )
    return {"agent_id": agent_id, "training_id": training["id"], "item_id": intention["id"]}


def _seed_appointment(api, contact_id):
    start = (utcnow() + timedelta(days=30)).replace(microsecond=0)
    body = {"contact_id": contact_id, "start_at": start.isoformat() + "Z"}
    body["end_at"] = (start + timedelta(hours=1)).isoformat() + "Z"
    return api.post("/v1/appointments", body)["id"]


def _seed_chat(api):
    channel = api.post("/v1/channels", {"name": "WA", "type": "whatsapp", "settings": WA_SETTINGS})
    # The contact writes first (WhatsApp lets the business answer for 24 hours):
    # the contact and the conversation are the ones their message made.
    written = inbound(channel["id"], "wamid.fuzz-1", sender_id="5511911112222").message
    contact = {"id": written.contact_id}
    conversation = {"id": written.conversation_id}
    message = api.post(f"/v1/conversations/{conversation['id']}/messages", {"text": "Hi"})
    field = api.post("/v1/custom-fields", {"name": "Plan", "field_type": "text"})
    return {
        "channel_id": channel["id"],
        "contact_id": contact["id"],
        "conversation_id": conversation["id"],
        "message_id": message["id"],
        "field_id": field["id"],
    }


def _seed_sales(api, contact_id):
    column = api.post("/v1/pipeline/columns", {"name": "New", "probability": 10})
    api.post("/v1/pipeline/columns", {"name": "Won", "probability": 100, "kind": "won"})
    lead = api.post("/v1/leads", {"contact_id": contact_id})
    rule = api.post(
        "/v1/leads/scoring-rules",
        {"name": "Writes", "kind": "messages_received", "points": 10, "params": {"at_least": 2}},
    )
    opportunity = api.post(
        "/v1/opportunities", {"title": "Deal", "value": "10.00", "currency": "EUR"}
    )
    return {
        "column_id": column["id"],
        "lead_id": lead["id"],
        "rule_id": rule["id"],
        "opportunity_id": opportunity["id"],
    }
