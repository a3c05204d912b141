"""Issue 21's differences from the specification, against the running
service: one `agent-platform serve` (gunicorn, its scheduler inside) on a
fresh database, keys made with the CLI, every call over real HTTP. The
Graph API stand-in and the webhook receiver are loopback peers; only the
served process's own jobs send messages and deliver events."""

import json
import os

import pytest
import requests
from click.testing import CliRunner

from agent_platform.cli import main
from conversations_helpers import WA_SETTINGS
from graph_stub import GraphStub
from test_cli import free_port, serving
from test_service_jobs import Api, wait_for
from webhooks_helpers import Receiver
from whatsapp_helpers import CUSTOMER, TEMPLATE, TEMPLATE_SENT


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The served app, its first admin key, the CLI's environment and the peers."""
    tmp = tmp_path_factory.mktemp("spec")
    graph = GraphStub(
        token=WA_SETTINGS["access_token"], phone_number_id=WA_SETTINGS["phone_number_id"]
    )
    receiver = Receiver()
    settings = {
        "DATABASE_PATH": str(tmp / "served.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_CHECK_SERVICE_WINDOW": True,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "WEBHOOKS_POLL_SECONDS": 0.3,
        "MESSAGES_SEND_POLL_SECONDS": 0.3,
    }
    environ = {f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()}
    port = free_port()
    try:
        with serving(["--port", str(port)], {**os.environ, **environ}, port) as (base, lines):
            yield {"api": Api(base, lines[1].strip()), "env": environ}, graph, receiver
    finally:
        receiver.close()
        graph.close()


def cli(service, *args):
    result = CliRunner().invoke(main, [*args, "--json"], env=service["env"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def key_with(service, *scopes, workspace=None):
    """A key made by the operator's CLI; an Api speaking with it."""
    api = service["api"]
    workspace = workspace or api.call("GET", "/v1/me")["workspace_id"]
    made = cli(service, "keys", "create", "--workspace", workspace, "--name", "t",
               "--scopes", ",".join(scopes))  # fmt: skip
    return Api(api.base, made["key"])


def refused(api, method, path, status, code, body=None):
    response = requests.request(method, api.base + path, json=body, headers=api.headers, timeout=10)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (code, status)
    return error["message"]


def conversation(api, channel_id, **contact):
    contact_id = api.call("POST", "/v1/contacts", {"name": "Bia", **contact}, 201)["id"]
    body = {"contact_id": contact_id, "channel_id": channel_id}
    return api.call("POST", "/v1/conversations", body, 201)["id"]


def site_channel(api, name, agent_id=None):
    channel = api.call("POST", "/v1/channels", {"name": name, "type": "website"}, 201)["id"]
    if agent_id:
        api.call("POST", f"/v1/channels/{channel}/connect", {"agent_id": agent_id})
    return channel


def test_a_variant_scope_opens_sending_and_deleting(service):
    svc = service[0]
    admin = svc["api"]
    chat = conversation(admin, site_channel(admin, "Scopes"))
    chats = key_with(svc, "chats:write")
    sent = chats.call("POST", f"/v1/conversations/{chat}/messages", {"text": "Variant"}, 201)
    assert sent["text"] == "Variant"
    deleted = chats.call("DELETE", f"/v1/messages/{sent['id']}")
    assert deleted["id"] == sent["id"] and deleted["deleted_at"].endswith("Z")
    agent = admin.call("POST", "/v1/agents", {"name": "Gone"}, 201)["id"]
    response = requests.delete(
        f"{admin.base}/v1/agents/{agent}", headers=key_with(svc, "agents:write").headers, timeout=10
    )
    assert response.status_code == 204, response.text
    refused(admin, "GET", f"/v1/agents/{agent}", 404, "AGENT_NOT_FOUND")
    neither = key_with(svc, "messages:read", "agents:read")
    kept = admin.call("POST", "/v1/agents", {"name": "Kept"}, 201)["id"]
    message = refused(neither, "DELETE", f"/v1/agents/{kept}", 403, "INSUFFICIENT_SCOPE")
    assert "agents:delete or agents:write" in message
    body = {"text": "No"}
    path = f"/v1/conversations/{chat}/messages"
    message = refused(neither, "POST", path, 403, "INSUFFICIENT_SCOPE", body)
    assert "messages:write or chats:write" in message
    assert admin.call("GET", f"/v1/agents/{kept}")["id"] == kept


def test_a_permission_shows_its_secret_once_and_revoked_it_is_401(service):
    admin = service[0]["api"]
    body = {"name": "reader", "scopes": ["agents:read"]}
    made = admin.call("POST", "/workspaces/permissions", body, 201)["permission"]
    assert made["key"].startswith("apk_") and made["scopes"] == ["agents:read"]
    reader = Api(admin.base, made["key"])
    reader.call("GET", "/v1/agents", status=200)  # the new key works
    response = requests.get(
        admin.base + "/workspaces/permissions", headers=admin.headers, timeout=10
    )
    assert response.status_code == 200 and made["key"] not in response.text
    [listed] = [key for key in response.json()["data"] if key["id"] == made["id"]]
    assert "key" not in listed and made["key"].startswith(listed["key_prefix"] + "_")
    assert (listed["scopes"], listed["revoked_at"]) == (["agents:read"], None)
    revoked = admin.call("DELETE", f"/workspaces/permissions/{made['id']}")["permission"]
    assert revoked["id"] == made["id"] and revoked["revoked_at"].endswith("Z")
    assert "key" not in revoked
    refused(reader, "GET", "/v1/agents", 401, "INVALID_API_KEY")


def test_an_agents_webhook_gets_its_events_by_the_served_scheduler(service):
    admin, receiver = service[0]["api"], service[2]
    ours, theirs = (admin.call("POST", "/v1/agents", {"name": n}, 201)["id"] for n in "AB")
    hook = {"url": receiver.url, "events": ["*"]}
    made = admin.call("POST", f"/v1/agents/{ours}/webhooks", hook, 201)
    assert made["agent_id"] == ours and made["secret"].startswith("whsec_")
    site = site_channel(admin, "Site A", ours)
    mine = conversation(admin, site)
    conversation(admin, site_channel(admin, "Site B", theirs), name="Other")
    admin.call("POST", f"/v1/conversations/{mine}/close")

    def events():
        return [json.loads(seen.body) for seen in receiver.requests if seen.method == "POST"]

    wait_for(lambda: len(events()) >= 3, "delivered the agent's three events")
    delivered = events()
    assert [event["event"] for event in delivered] == [
        "channel.connected",
        "conversation.created",
        "conversation.closed",
    ]
    assert [event["data"]["id"] for event in delivered] == [site, mine, mine]
    history = admin.call("GET", f"/v1/agents/{ours}/history")
    assert [entry["event"] for entry in history] == [
        "conversation.closed",
        "conversation.created",
        "channel.connected",
    ]
    assert history[0]["data"]["id"] == mine
    assert len(events()) == 3  # B's conversation never reached A's webhook


def test_outside_the_window_text_is_refused_and_a_template_is_sent(service):
    admin, graph = service[0]["api"], service[1]
    channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
    channel_id = admin.call("POST", "/v1/channels", channel, 201)["id"]
    quiet = conversation(admin, channel_id, phone="+" + CUSTOMER)
    path = f"/v1/conversations/{quiet}/messages"
    message = refused(admin, "POST", path, 409, "OUTSIDE_SERVICE_WINDOW", {"text": "Hi"})
    assert "never written" in message
    assert admin.call("GET", path) == [] and graph.requests == []
    body = {"type": "template", "template": TEMPLATE}
    queued = admin.call("POST", path, body, 201)
    assert (queued["type"], queued["status"]) == ("template", "queued")
    wait_for(graph.sent, "sent the template to the Graph API")
    assert graph.sent() == [TEMPLATE_SENT]
    wait_for(
        lambda: admin.call("GET", f"/v1/messages/{queued['id']}")["status"] == "sent",
        "marked the template sent",
    )


def test_a_listing_without_order_is_newest_first(service):
    svc = service[0]
    workspace = cli(svc, "workspaces", "create", "--name", "Order", "--company", "ACME")["id"]
    own = key_with(svc, "all", workspace=workspace)
    made = [own.call("POST", "/v1/contacts", {"name": f"C{i}"}, 201)["id"] for i in range(3)]
    assert [contact["id"] for contact in own.call("GET", "/v1/contacts")] == made[::-1]
    assert [contact["id"] for contact in own.call("GET", "/v1/contacts?order=asc")] == made
    chat = conversation(own, site_channel(own, "Site"))
    path = f"/v1/conversations/{chat}/messages"
    sent = [own.call("POST", path, {"text": f"M{i}"}, 201)["id"] for i in range(3)]
    assert [message["id"] for message in own.call("GET", path)] == sent[::-1]
