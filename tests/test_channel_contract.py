"""Adding a channel type is adding one module under channels/: an SMS adapter
(tests/channel_types/sms.py), put on the channels package's path before the
app is built, is offered by the whole API (types, settings and their
secrets, the settings a connected channel keeps, links, identities,
connecting, sending, its callback URL, the OpenAPI document) with no other
file touched.

The probe runs in a process of its own: channel types register once per
process, and the API's schemas are built from them when it is imported."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def probe(database_path):
    """Run in the child: the SMS type loaded, the API driven as a user would."""
    import agent_platform.channels as package

    package.__path__.append(str(HERE / "channel_types"))
    from agent_platform import create_app
    from agent_platform.db import database
    from agent_platform.migrate import apply_migrations
    from agent_platform.services import keys, sending

    app = create_app({"DATABASE_PATH": database_path, "REPLIES_DEBOUNCE_SECONDS": 0})
    seen = {}
    with app.app_context():
        apply_migrations()
        workspace = keys.create_workspace("W").id
        _, key = keys.create_key(workspace, "k", keys.all_scopes())
        client, headers = app.test_client(), {"x-api-key": key}

        def call(method, path, body=None):
            response = client.open(path, method=method, json=body, headers=headers)
            return response.status_code, response.get_json()

        settings = {"sender_id": "LOJA", "api_key": "s3cret"}
        _, created = call(
            "POST", "/v1/channels", {"name": "SMS", "type": "sms", "settings": settings}
        )
        channel = created["data"]
        seen["created"] = channel["settings"]
        seen["stored"] = database.execute_sql('SELECT "settings" FROM "channel"').fetchone()[0]
        seen["bad_setting"] = call(
            "PATCH", f"/v1/channels/{channel['id']}", {"settings": {"sender_id": "x" * 12}}
        )
        qr = client.get(f"/v1/channels/{channel['id']}/qrcode", headers=headers)
        seen["link"] = qr.headers.get("X-Channel-Link")
        _, agent = call("POST", "/v1/agents", {"name": "Ana"})
        seen["connect"] = call(
            "POST", f"/v1/channels/{channel['id']}/connect", {"agent_id": agent["data"]["id"]}
        )[0]
        seen["put_without_key"] = call(
            "PUT", f"/v1/channels/{channel['id']}/settings", {"sender_id": "LOJA", "api_key": None}
        )
        update = {"id": "m-1", "from": "5511999887766", "text": "Oi"}
        seen["callback"] = client.post(f"/inbound/sms/{channel['id']}", json=update).status_code
        seen["bad_identity"] = call(
            "POST",
            "/v1/contacts",
            {"name": "X", "identities": [{"type": "sms", "external_id": "abc"}]},
        )
        _, conversations = call("GET", "/v1/conversations")
        conversation = conversations["data"][0]["id"]
        seen["posted"] = call(
            "POST", f"/v1/conversations/{conversation}/messages", {"text": "Olá!"}
        )[0]
        sending.send_queued()
        seen["sent"] = list(sys.modules["agent_platform.channels.sms"].SENT)
        _, messages = call("GET", f"/v1/conversations/{conversation}/messages")
        seen["statuses"] = sorted((m["direction"], m["status"]) for m in messages["data"])
        spec = client.get("/openapi.json").get_json()
        schema = spec["components"]["schemas"]["ChannelCreate"]["properties"]
        seen["enum"] = schema["type"]["enum"]
        seen["settings_doc"] = schema["settings"]["description"]
    print(json.dumps(seen))


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    database = tmp_path_factory.mktemp("contract") / "probe.db"
    done = subprocess.run(
        [sys.executable, __file__, str(database)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_its_settings_are_checked_and_its_secrets_hidden(seen):
    assert seen["created"] == {"sender_id": "LOJA", "api_key_set": True}
    assert "LOJA" in seen["stored"] and "s3cret" not in seen["stored"]  # encrypted at rest
    status, body = seen["bad_setting"]
    assert status == 400 and "settings.sender_id" in json.dumps(body)


def test_it_has_a_link_and_an_identity_format(seen):
    assert seen["link"] == "sms:LOJA"
    status, body = seen["bad_identity"]
    assert status == 400 and "identities[0].external_id" in json.dumps(body)


def test_a_connected_channel_keeps_the_settings_it_says_it_needs(seen):
    status, body = seen["put_without_key"]
    assert (status, body["error"]["code"]) == (409, "CHANNEL_SETTINGS_INCOMPLETE")
    assert "settings.api_key" in body["error"]["message"]


def test_it_connects_receives_and_sends(seen):
    assert (seen["connect"], seen["callback"], seen["posted"]) == (200, 200, 201)
    assert seen["sent"] == ["Olá!"]
    assert seen["statuses"] == [["inbound", "received"], ["outbound", "sent"]]


def test_the_openapi_document_offers_it(seen):
    assert seen["enum"] == ["whatsapp", "telegram", "email", "website", "sms"]
    assert "website: allowed_origins" in seen["settings_doc"]
    assert "sms: sender_id, api_key*." in seen["settings_doc"]


if __name__ == "__main__":
    probe(sys.argv[1])
