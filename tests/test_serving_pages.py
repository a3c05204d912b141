"""`serve` for real on loopback: a page of messages whose edit histories,
of contacts whose custom values, or a list of tools whose descriptions and
input schemas make it tens of megabytes of JSON is written an item at a
time, and never holds the other requests while it is read."""

import json
from concurrent.futures import ThreadPoolExecutor

import mcp_types as types
import pytest
import requests

from mcp_helpers import RunningMcpServer
from test_serving import served  # noqa: F401  (the fixture)
from test_serving_knowledge import SANDBOX, read_beside_me
from whatsapp_helpers import message, messages_payload, sign

SETTINGS = {"RATE_LIMIT_REQUESTS": 100_000}
MESSAGES, EDITS = 100, 20  # each edit a text of 4,096 characters, non-ASCII
TEXT = "é" * 4090


def conversation_with_edited_messages(served, api):  # noqa: F811
    base = served.base
    channel = {"name": "WhatsApp", "type": "whatsapp", "settings": {**SANDBOX, "verify_token": "t"}}
    channel_id = api.post(f"{base}/v1/channels", json=channel).json()["data"]["id"]
    # The customer writes first: WhatsApp's service window opens.
    body = json.dumps(messages_payload(message("text", {"body": "Oi"}))).encode()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign(body)}
    requests.post(f"{base}/inbound/whatsapp/{channel_id}", data=body, headers=headers, timeout=5)
    listed = api.get(f"{base}/v1/conversations", params={"channel_id": channel_id})
    conversation = listed.json()["data"][0]["id"]
    path = f"{base}/v1/conversations/{conversation}/messages"
    sent = []
    for number in range(MESSAGES):
        posted = api.post(path, json={"text": f"m{number}"})
        assert posted.status_code == 201, posted.text
        sent.append(posted.json()["data"]["id"])

    def edit(message_id):
        with requests.Session() as editor:
            editor.headers["X-API-Key"] = served.key
            for number in range(EDITS + 1):
                text = f"v{number:02} {TEXT}"
                edited = editor.patch(f"{base}/v1/messages/{message_id}", json={"text": text})
                assert edited.status_code == 200, edited.text

    with ThreadPoolExecutor(8) as editing:
        list(editing.map(edit, sent))
    return path


@pytest.mark.parametrize("served", [SETTINGS], indirect=True)
def test_a_page_of_long_edit_histories_is_written_a_message_at_a_time(served):  # noqa: F811
    # 100 messages of 20 replaced versions each: a page of 50 MB of JSON was
    # read and encoded whole: the worker grew by 200 MB, and every other
    # request was held 0.26-0.34 s.
    api = requests.Session()
    api.headers["X-API-Key"] = served.key
    path = conversation_with_edited_messages(served, api)
    answer, waits, grown = read_beside_me(served, api, path, {"limit": 100}, 0.12)
    assert answer.status_code == 200, answer.text[:500]
    page = answer.json()["data"]
    page = [item for item in page if item["direction"] == "outbound"]
    # 17 MB in UTF-8 (51 MB while non-ASCII text was written as \u escapes).
    assert len(page) == MESSAGES and len(answer.content) > 15_000_000
    assert all(len(message["edit_history"]) == EDITS for message in page)
    assert all(message["text"] == f"v{EDITS:02} {TEXT}" for message in page)
    assert len(waits) > 2 and all(code == 200 and seconds < 0.12 for code, seconds in waits), waits
    assert grown < 60, grown


@pytest.mark.parametrize("served", [SETTINGS], indirect=True)
def test_a_page_of_contacts_with_long_custom_values_is_written_a_contact_at_a_time(served):  # noqa: F811
    # 100 contacts of 100,000 characters of values each: a page of 60 MB of
    # JSON held every other request 0.33-0.35 s.
    api = requests.Session()
    api.headers["X-API-Key"] = served.key
    base = served.base
    for number in range(10):
        made = api.post(
            f"{base}/v1/custom-fields", json={"name": f"Note {number}", "field_type": "text"}
        )
        assert made.status_code == 201, made.text
    values = {f"Note {number}": "é" * 9_990 for number in range(10)}

    def make(number):
        with requests.Session() as maker:
            maker.headers["X-API-Key"] = served.key
            body = {"name": f"C{number}", "custom_fields": values}
            assert maker.post(f"{base}/v1/contacts", json=body).status_code == 201

    with ThreadPoolExecutor(8) as making:
        list(making.map(make, range(100)))
    answer, waits, grown = read_beside_me(served, api, f"{base}/v1/contacts", {"limit": 100}, 0.12)
    assert answer.status_code == 200, answer.text[:500]
    page = answer.json()["data"]
    assert len(page) == 100 and all(contact["custom_fields"] == values for contact in page)
    assert len(waits) > 2 and all(code == 200 and seconds < 0.12 for code, seconds in waits), waits
    assert grown < 60, grown


@pytest.mark.parametrize("served", [{**SETTINGS, "MCP_ALLOW_PRIVATE_URLS": True}], indirect=True)
def test_an_agents_tools_are_written_a_tool_at_a_time(served):  # noqa: F811
    # 200 tools of the longest description and a long input schema: the
    # agent's list was 84 MB of JSON and held every other request 0.4 s
    # (28 MB since non-ASCII text is written as UTF-8 rather than escapes).
    api = requests.Session()
    api.headers["X-API-Key"] = served.key
    base, schema = served.base, {"type": "object", "description": "é" * 60_000}
    offered = [
        types.Tool(name=f"t{n}", description="é" * 9_990, input_schema=schema) for n in range(200)
    ]
    with RunningMcpServer(tools=offered, per_page=10) as server:
        made = api.post(f"{base}/v1/mcp-servers", json={"name": "Tools", "url": server.url})
        server_id = made.json()["data"]["id"]
        assert api.post(f"{base}/v1/mcp-servers/{server_id}/sync").status_code == 200
    listed = f"{base}/v1/mcp-servers/{server_id}/tools"
    ids = [
        t["id"]
        for page in (1, 2)
        for t in api.get(listed, params={"limit": 100, "page": page}).json()["data"]
    ]
    agent = api.post(f"{base}/v1/agents", json={"name": "Ana"}).json()["data"]["id"]
    assert api.put(f"{base}/v1/agents/{agent}/tools", json={"tool_ids": ids}).status_code == 200
    answer, waits, grown = read_beside_me(served, api, f"{base}/v1/agents/{agent}/tools", {}, 0.12)
    assert answer.status_code == 200 and len(answer.content) > 25_000_000
    tools = answer.json()["data"]
    assert len(tools) == 200 and all(t["input_schema"] == schema for t in tools)
    assert len(waits) > 2 and all(code == 200 and seconds < 0.12 for code, seconds in waits), waits
    assert grown < 60, grown
