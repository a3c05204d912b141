"""The spec's variant scope listing: agents:write also deletes agents,
chats:write also sends and deletes messages. Either scope opens the
operation; a key with neither is 403 naming both. mcp:write's connections
and channels:write's settings need no second scope: the one scope opens them.
"""

import pytest

from conftest import assert_error
from conversations_helpers import WA_SETTINGS, data, make_agent, make_channel, send, setup_chat
from mcp_helpers import RunningMcpServer


@pytest.fixture
def settings(tmp_path):
    # The MCP server of the connections test is on loopback.
    return {"DATABASE_PATH": str(tmp_path / "test.db"), "MCP_ALLOW_PRIVATE_URLS": True}


@pytest.fixture
def chat(caller):
    return setup_chat(caller)


@pytest.mark.parametrize("scope", ["agents:delete", "agents:write"])
def test_either_scope_deletes_an_agent(caller, make_caller, scope):
    agent_id = make_agent(caller)
    limited = make_caller([scope], workspace_id=caller.workspace_id)
    assert limited.delete(f"/v1/agents/{agent_id}").status_code == 204
    assert_error(caller.get(f"/v1/agents/{agent_id}"), 404, "AGENT_NOT_FOUND")


def test_neither_scope_cannot_delete_an_agent(caller, make_caller):
    agent_id = make_agent(caller)
    limited = make_caller(["agents:read"], workspace_id=caller.workspace_id)
    error = assert_error(limited.delete(f"/v1/agents/{agent_id}"), 403, "INSUFFICIENT_SCOPE")
    assert "agents:delete or agents:write" in error["message"]
    assert caller.get(f"/v1/agents/{agent_id}").status_code == 200


@pytest.mark.parametrize("scope", ["messages:write", "chats:write"])
def test_either_scope_sends_a_message(caller, make_caller, chat, scope):
    limited = make_caller([scope], workspace_id=caller.workspace_id)
    sent = data(send(limited, chat["conversation"]["id"], text="From a variant key"), 201)
    assert sent["text"] == "From a variant key"


def test_neither_scope_cannot_send(caller, make_caller, chat):
    limited = make_caller(["messages:read"], workspace_id=caller.workspace_id)
    response = send(limited, chat["conversation"]["id"])
    error = assert_error(response, 403, "INSUFFICIENT_SCOPE")
    assert "messages:write or chats:write" in error["message"]


@pytest.mark.parametrize("scope", ["messages:delete", "chats:write"])
def test_either_scope_deletes_a_message(caller, make_caller, chat, scope):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    limited = make_caller([scope], workspace_id=caller.workspace_id)
    deleted = data(limited.delete(f"/v1/messages/{message['id']}"))
    assert deleted["id"] == message["id"] and deleted["deleted_at"]


def test_a_variant_scope_opens_nothing_else(caller, make_caller, chat):
    limited = make_caller(["chats:write"], workspace_id=caller.workspace_id)
    conversation_id = chat["conversation"]["id"]
    response = limited.get(f"/v1/conversations/{conversation_id}/messages")
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "messages:read")
    agent_only = make_caller(["agents:write"], workspace_id=caller.workspace_id)
    assert_error(agent_only.get("/v1/agents"), 403, "INSUFFICIENT_SCOPE", "agents:read")


def test_channels_write_alone_changes_a_channels_settings(caller, make_caller):
    channel = make_channel(caller, settings=WA_SETTINGS)
    path = f"/v1/channels/{channel['id']}/settings"
    writer = make_caller(["channels:write"], workspace_id=caller.workspace_id)
    assert data(writer.put(path, json={"phone_number_id": "7"}))["phone_number_id"] == "7"
    reader = make_caller(["channels:read"], workspace_id=caller.workspace_id)
    error = assert_error(reader.put(path, json={"phone_number_id": "8"}), 403, "INSUFFICIENT_SCOPE")
    assert "channels:write" in error["message"]
    assert data(caller.get(path))["phone_number_id"] == "7"


def test_mcp_write_alone_connects_to_a_server_and_loads_its_tools(caller, make_caller):
    writer = make_caller(["mcp:write"], workspace_id=caller.workspace_id)
    reader = make_caller(["mcp:read"], workspace_id=caller.workspace_id)
    with RunningMcpServer(json_response=True) as mcp_server:
        body = {"name": "Tools", "url": mcp_server.url}
        server = data(writer.post("/v1/mcp-servers", json=body), 201)
        path = f"/v1/mcp-servers/{server['id']}/sync"
        assert_error(reader.post(path), 403, "INSUFFICIENT_SCOPE", "mcp:write")
        assert data(writer.post(path))["tools_count"] == 2


def test_openapi_lists_every_accepted_scope(client):
    spec = client.get("/openapi.json").get_json()
    for path, method, accepted in (
        ("/v1/agents/{agent_id}", "delete", ["agents:delete", "agents:write"]),
        ("/v1/conversations/{conversation_id}/messages", "post", ["messages:write", "chats:write"]),
        ("/v1/messages/{message_id}", "delete", ["messages:delete", "chats:write"]),
    ):
        operation = spec["paths"][path][method]
        assert operation["x-required-scope"] == accepted[0]
        assert operation["x-accepted-scopes"] == accepted
        alternatives = [
            scopes for requirement in operation["security"] for scopes in requirement.values()
        ]
        assert alternatives == [[scope] for scope in accepted for _ in range(2)]
        assert " or ".join(f"scope `{scope}`" for scope in accepted) in operation["description"]
    single = spec["paths"]["/v1/agents/{agent_id}"]["patch"]
    assert "x-accepted-scopes" not in single
    assert single["security"] == [
        {"ApiKeyHeader": ["agents:write"]},
        {"BearerAuth": ["agents:write"]},
    ]
