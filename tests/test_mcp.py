import os

import mcp_types as types
import pytest
import requests

from agent_platform.models import McpServer
from agent_platform.services import mcp
from conftest import assert_error
from loopback import QuietHandler, serving
from mcp_helpers import RunningMcpServer
from test_cli import free_port
from test_cli import serving as serving_app

MISSING_ID = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"


@pytest.fixture(scope="module", params=[False, True], ids=["event-stream", "json"])
def mcp_server(request):
    with RunningMcpServer(json_response=request.param) as server:
        yield server


DEEP = b'{"jsonrpc": "2.0", "id": 1, "result": ' + b"[" * 5000 + b"]" * 5000 + b"}"


class NotMcp(QuietHandler):
    """Answers like an ordinary web site: HTML, or JSON that is not JSON-RPC."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/json":
            body, kind, status = b'{"hello": "world"}', "application/json", 200
        elif self.path == "/deep":  # json.loads would raise RecursionError
            body, kind, status = DEEP, "application/json", 200
        elif self.path == "/deep-stream":
            body, kind, status = b"data: " + DEEP + b"\n\n", "text/event-stream", 200
        elif self.path == "/error":
            body, kind, status = b"upstream broke", "text/plain", 500
        else:
            body, kind, status = b"<html>Welcome</html>", "text/html", 200
        self.reply(status, kind, body)


@pytest.fixture(scope="module")
def web_site():
    with serving(NotMcp) as url:
        yield url


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "MCP_ALLOW_PRIVATE_URLS": True,
        "MCP_TIMEOUT_SECONDS": 5,
    }


def register(caller, url, **values):
    body = {"name": "Tools", "url": url, **values}
    response = caller.post("/v1/mcp-servers", json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]


def test_register_hides_header_values(caller):
    server = register(
        caller,
        "https://203.0.113.7/mcp",
        headers={"Authorization": "Bearer s3cret", "X-Team": "a"},
    )
    assert server["header_names"] == ["Authorization", "X-Team"]
    assert server["transport"] == "streamable-http" and server["is_active"] is True
    assert server["tools_count"] == 0 and server["last_synced_at"] is None
    assert server["last_sync_error"] is None
    for body in (server, caller.get(f"/v1/mcp-servers/{server['id']}").get_json()["data"]):
        assert "headers" not in body and "s3cret" not in str(body)
    listed = caller.get("/v1/mcp-servers").get_json()
    assert [s["id"] for s in listed["data"]] == [server["id"]]
    assert "s3cret" not in str(listed)


def test_update_and_delete(caller):
    server = register(caller, "https://203.0.113.7/mcp", headers={"X-A": "1"})
    path = f"/v1/mcp-servers/{server['id']}"
    changed = caller.patch(path, json={"name": "CRM", "is_active": False, "headers": {"X-B": "2"}})
    assert changed.status_code == 200
    body = changed.get_json()["data"]
    assert (body["name"], body["is_active"], body["header_names"]) == ("CRM", False, ["X-B"])
    assert McpServer.get_by_id(server["id"]).headers == {"X-B": "2"}
    assert caller.get("/v1/mcp-servers?is_active=true").get_json()["data"] == []
    assert_error(
        caller.patch(path, json={"url": "ftp://x.example/"}), 400, "VALIDATION_ERROR", "url"
    )
    response = caller.patch(path, json={"headers": {"Host": "evil.example"}})
    assert_error(response, 400, "VALIDATION_ERROR", "headers")
    assert_error(
        caller.patch(path, json={"transport": "sse"}), 400, "VALIDATION_ERROR", "transport"
    )
    assert McpServer.get_by_id(server["id"]).headers == {"X-B": "2"}
    assert caller.delete(path).status_code == 204
    assert_error(caller.get(path), 404, "MCP_SERVER_NOT_FOUND")


@pytest.mark.parametrize(
    "values, code, field",
    [
        ({"url": "https://x.example/mcp"}, "MISSING_REQUIRED_FIELD", "name"),
        ({"name": "x"}, "MISSING_REQUIRED_FIELD", "url"),
        ({"name": "x", "url": "ftp://x.example/"}, "VALIDATION_ERROR", "url"),
        (
            {"name": "x", "url": "https://x.example/", "transport": "stdio"},
            "VALIDATION_ERROR",
            "transport",
        ),
        (
            {"name": "x", "url": "https://x.example/", "headers": {"Bad Name": "1"}},
            "VALIDATION_ERROR",
            "headers",
        ),
        (
            {"name": "x", "url": "https://x.example/", "headers": {"X": "a\r\nb"}},
            "VALIDATION_ERROR",
            "headers",
        ),
        (
            {"name": "x", "url": "https://x.example/", "headers": {"Mcp-Session-Id": "1"}},
            "VALIDATION_ERROR",
            "headers",
        ),
        (
            {"name": "x", "url": "https://x.example/", "headers": {"X": 5}},
            "VALIDATION_ERROR",
            "headers",
        ),
        ({"name": "", "url": "https://x.example/"}, "VALIDATION_ERROR", "name"),
        ({"name": "x", "url": "https://x.example/", "token": "t"}, "VALIDATION_ERROR", "token"),
    ],
)
def test_invalid_servers_are_400_naming_the_field(caller, values, code, field):
    assert_error(caller.post("/v1/mcp-servers", json=values), 400, code, field)


def test_sync_lists_every_page_of_tools(caller, mcp_server):
    server = register(caller, mcp_server.url, headers={"Authorization": "Bearer t0ken"})
    response = caller.post(f"/v1/mcp-servers/{server['id']}/sync")
    assert response.status_code == 200, response.get_json()
    synced = response.get_json()["data"]
    assert synced["tools_count"] == 2 and synced["last_sync_error"] is None
    assert synced["last_synced_at"] is not None
    assert synced["server_info"] == {
        "name": "test-tools",
        "version": "1.2.3",
        "protocol_version": "2025-06-18",
    }
    tools = caller.get(f"/v1/mcp-servers/{server['id']}/tools?sort=name&order=asc").get_json()
    assert [t["name"] for t in tools["data"]] == ["add", "lookup_order"]
    add = tools["data"][0]
    assert add["description"] == "Add two numbers" and add["server_id"] == server["id"]
    assert add["input_schema"]["required"] == ["a", "b"]
    assert tools["pagination"]["total"] == 2
    newest_first = caller.get(f"/v1/mcp-servers/{server['id']}/tools").get_json()["data"]
    by_time = sorted(tools["data"], key=lambda t: (t["created_at"], t["id"]), reverse=True)
    assert [t["id"] for t in newest_first] == [t["id"] for t in by_time]
    # The stored headers were sent to the server.
    assert any(h.get("authorization") == "Bearer t0ken" for h in mcp_server.seen_headers)


def test_a_second_sync_keeps_tool_ids_and_drops_vanished_tools(caller, mcp_server):
    server = register(caller, mcp_server.url)
    caller.post(f"/v1/mcp-servers/{server['id']}/sync")
    first = {
        t["name"]: t["id"]
        for t in caller.get(f"/v1/mcp-servers/{server['id']}/tools?sort=name&order=asc").get_json()[
            "data"
        ]
    }
    agent = caller.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]
    caller.put(f"/v1/agents/{agent}/tools", json={"tool_ids": list(first.values())})
    removed = mcp_server.tools.pop()
    try:
        assert caller.post(f"/v1/mcp-servers/{server['id']}/sync").status_code == 200
    finally:
        mcp_server.tools.append(removed)
    second = {
        t["name"]: t["id"]
        for t in caller.get(f"/v1/mcp-servers/{server['id']}/tools?sort=name&order=asc").get_json()[
            "data"
        ]
    }
    assert second == {"add": first["add"]}
    assert [t["name"] for t in caller.get(f"/v1/agents/{agent}/tools").get_json()["data"]] == [
        "add"
    ]


def test_call_tool(app, caller, mcp_server):
    server = register(caller, mcp_server.url)
    result = mcp.call_tool(McpServer.get_by_id(server["id"]), "add", {"a": 2, "b": 40})
    assert result["content"] == [{"type": "text", "text": "42"}]
    assert result.get("isError") is False


@pytest.mark.parametrize(
    "path, problem",
    [
        ("/", "not an MCP server (it answered text/html)"),
        ("/json", "not an MCP server (no JSON-RPC answer to initialize)"),
        ("/error", "HTTP 500: upstream broke"),
        ("/deep", "the answer is nested deeper than 32 levels"),
        ("/deep-stream", "the answer is nested deeper than 32 levels"),
    ],
)
def test_a_non_mcp_url_is_a_clear_error_on_the_record(caller, web_site, path, problem):
    server = register(caller, web_site + path)
    response = caller.post(f"/v1/mcp-servers/{server['id']}/sync")
    error = assert_error(response, 502, "MCP_SYNC_FAILED", problem)
    record = caller.get(f"/v1/mcp-servers/{server['id']}").get_json()["data"]
    assert problem in record["last_sync_error"]
    assert record["last_sync_attempt_at"] is not None and record["last_synced_at"] is None
    assert server["id"] in error["message"]


def tool(name, description="A tool", schema=None):
    return types.Tool(name=name, description=description, input_schema=schema or {"type": "object"})


def test_a_page_of_tools_and_an_agents_tools_show_each_tool_whole(caller):
    # Both read each tool's description and input schema as the answer
    # reaches it (McpTool.with_the_rest).
    schema = {"type": "object", "properties": {"n": {"type": "string"}}}
    offered = [tool(f"t{number}", f"Tool é {number}", schema) for number in range(30)]
    with RunningMcpServer(tools=offered, per_page=10) as server:
        synced = register(caller, server.url)
        assert caller.post(f"/v1/mcp-servers/{synced['id']}/sync").status_code == 200
    page = caller.get(f"/v1/mcp-servers/{synced['id']}/tools?sort=name&order=asc&limit=100")
    listed = page.get_json()["data"]
    assert [(t["name"], t["description"], t["input_schema"]) for t in listed] == sorted(
        (f"t{number}", f"Tool é {number}", schema) for number in range(30)
    )
    agent = caller.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]
    chosen = [t["id"] for t in listed]
    put = caller.put(f"/v1/agents/{agent}/tools", json={"tool_ids": chosen})
    assert put.get_json() == caller.get(f"/v1/agents/{agent}/tools").get_json()
    assert put.get_json()["data"] == [{**t, "server_name": "Tools"} for t in listed]


def test_what_a_server_offers_is_bounded(caller):
    # Each tool is stored, listed and offered to the model at every answer.
    wordy = tool("wordy", "w" * 20_000)
    large = tool("large", schema={"type": "object", "description": "s" * 70_000})
    with RunningMcpServer(tools=[tool("add"), wordy]) as server:
        synced = register(caller, server.url)
        assert caller.post(f"/v1/mcp-servers/{synced['id']}/sync").status_code == 200
        tools = caller.get(f"/v1/mcp-servers/{synced['id']}/tools?sort=name").get_json()["data"]
        assert tools[0]["description"] == "w" * 10_000  # cut there
    with RunningMcpServer(tools=[tool("add"), large]) as server:
        refused = register(caller, server.url)
        answer = caller.post(f"/v1/mcp-servers/{refused['id']}/sync")
        problem = "tool large has an input schema of 70,034 characters; at most 65,536"
        assert_error(answer, 502, "MCP_SYNC_FAILED", problem)
    many = [tool(f"t{number}") for number in range(1001)]
    with RunningMcpServer(tools=many, per_page=250) as server:
        refused = register(caller, server.url)
        answer = caller.post(f"/v1/mcp-servers/{refused['id']}/sync")
        assert_error(answer, 502, "MCP_SYNC_FAILED", "tools/list offers more than 1,000 tools")
    assert caller.get(f"/v1/mcp-servers/{refused['id']}/tools").get_json()["data"] == []


def test_an_unreachable_server_is_a_clear_error(caller, mcp_server):
    server = register(caller, "http://127.0.0.1:9/mcp")
    assert_error(
        caller.post(f"/v1/mcp-servers/{server['id']}/sync"),
        502,
        "MCP_SYNC_FAILED",
        "cannot connect",
    )
    # A later successful sync clears the error.
    caller.patch(f"/v1/mcp-servers/{server['id']}", json={"url": mcp_server.url})
    synced = caller.post(f"/v1/mcp-servers/{server['id']}/sync").get_json()["data"]
    assert synced["last_sync_error"] is None and synced["tools_count"] == 2


def test_agent_tools(caller, other, mcp_server):
    server = register(caller, mcp_server.url)
    caller.post(f"/v1/mcp-servers/{server['id']}/sync")
    tools = caller.get(f"/v1/mcp-servers/{server['id']}/tools?sort=name&order=asc").get_json()[
        "data"
    ]
    agent = caller.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]
    assert caller.get(f"/v1/agents/{agent}/tools").get_json()["data"] == []
    response = caller.put(f"/v1/agents/{agent}/tools", json={"tool_ids": [tools[1]["id"]]})
    assert response.status_code == 200
    enabled = response.get_json()["data"]
    assert [(t["name"], t["server_name"]) for t in enabled] == [("lookup_order", "Tools")]
    assert caller.get(f"/v1/agents/{agent}/tools").get_json()["data"] == enabled
    both = [tool["id"] for tool in tools] * 2  # repeats are harmless
    assert (
        len(caller.put(f"/v1/agents/{agent}/tools", json={"tool_ids": both}).get_json()["data"])
        == 2
    )
    assert caller.put(f"/v1/agents/{agent}/tools", json={"tool_ids": []}).get_json()["data"] == []
    path = f"/v1/agents/{agent}/tools"
    assert_error(
        caller.put(path, json={"tool_ids": [MISSING_ID]}), 404, "MCP_TOOL_NOT_FOUND", MISSING_ID
    )
    assert_error(caller.put(path, json={"tool_ids": ["nope"]}), 400, "VALIDATION_ERROR", "tool_ids")
    assert_error(caller.put(path, json={}), 400, "MISSING_REQUIRED_FIELD", "tool_ids")
    # Another workspace can neither use these tools nor see this agent.
    theirs = other.post("/v1/agents", json={"name": "Bo"}).get_json()["data"]["id"]
    response = other.put(f"/v1/agents/{theirs}/tools", json={"tool_ids": [tools[0]["id"]]})
    assert_error(response, 404, "MCP_TOOL_NOT_FOUND")
    assert_error(other.get(path), 404, "AGENT_NOT_FOUND")
    assert_error(other.put(path, json={"tool_ids": []}), 404, "AGENT_NOT_FOUND")
    assert_error(caller.get(f"/v1/agents/{MISSING_ID}/tools"), 404, "AGENT_NOT_FOUND")


def test_deleting_a_server_removes_its_tools_from_agents(caller, mcp_server):
    server = register(caller, mcp_server.url)
    caller.post(f"/v1/mcp-servers/{server['id']}/sync")
    tool_ids = [
        t["id"]
        for t in caller.get(f"/v1/mcp-servers/{server['id']}/tools?sort=name&order=asc").get_json()[
            "data"
        ]
    ]
    agent = caller.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]
    caller.put(f"/v1/agents/{agent}/tools", json={"tool_ids": tool_ids})
    caller.delete(f"/v1/mcp-servers/{server['id']}")
    assert caller.get(f"/v1/agents/{agent}/tools").get_json()["data"] == []


def test_another_workspace_sees_nothing(caller, other):
    server = register(caller, "https://203.0.113.7/mcp")
    for method, path in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/sync"),
        ("GET", "/tools"),
    ):
        body = {"name": "x"} if method == "PATCH" else {}
        response = other.request(method, f"/v1/mcp-servers/{server['id']}{path}", json=body)
        assert_error(response, 404, "MCP_SERVER_NOT_FOUND")
    assert other.get("/v1/mcp-servers").get_json()["data"] == []
    assert_error(caller.get("/v1/mcp-servers/not-a-uuid"), 404, "MCP_SERVER_NOT_FOUND")


def test_scopes(make_caller):
    reader = make_caller(scopes=["mcp:read", "agents:write"])
    writer = make_caller(scopes=["mcp:write"], workspace_id=reader.workspace_id)
    server = register(writer, "https://203.0.113.7/mcp")
    agent = reader.post("/v1/agents", json={"name": "Ana"}).get_json()["data"]["id"]
    body = {"name": "x", "url": "https://x.example/"}
    assert_error(reader.post("/v1/mcp-servers", json=body), 403, "INSUFFICIENT_SCOPE", "mcp:write")
    assert_error(reader.post(f"/v1/mcp-servers/{server['id']}/sync"), 403, "INSUFFICIENT_SCOPE")
    assert_error(
        reader.put(f"/v1/agents/{agent}/tools", json={"tool_ids": []}), 403, "INSUFFICIENT_SCOPE"
    )
    assert_error(writer.get("/v1/mcp-servers"), 403, "INSUFFICIENT_SCOPE", "mcp:read")
    assert_error(writer.get(f"/v1/agents/{agent}/tools"), 403, "INSUFFICIENT_SCOPE", "mcp:read")
    assert reader.get(f"/v1/mcp-servers/{server['id']}").status_code == 200
    assert writer.put(f"/v1/agents/{agent}/tools", json={"tool_ids": []}).status_code == 200


class TestPrivateAddressesRefusedByDefault:
    @pytest.fixture
    def settings(self, tmp_path):
        return {"DATABASE_PATH": str(tmp_path / "test.db")}

    def test_a_loopback_server_is_refused_when_written(self, caller, mcp_server):
        body = {"name": "Tools", "url": mcp_server.url}
        error = assert_error(caller.post("/v1/mcp-servers", json=body), 400, "VALIDATION_ERROR")
        assert error["message"].startswith("url: refused: port")
        assert "set mcp.allow_private_urls" in error["message"]
        assert "AGENT_PLATFORM_MCP_ALLOW_PRIVATE_URLS" in error["message"]
        assert McpServer.select().count() == 0

    def test_an_update_to_a_private_address_is_refused(self, caller):
        server = register(caller, "https://8.8.8.8/mcp")
        path = f"/v1/mcp-servers/{server['id']}"
        refused = caller.patch(path, json={"url": "https://10.0.0.5/mcp"})
        assert_error(refused, 400, "VALIDATION_ERROR", "a private address")
        assert McpServer.get_by_id(server["id"]).url == "https://8.8.8.8/mcp"

    def test_sync_refuses_a_loopback_server_stored_before(self, caller, mcp_server):
        # Stored before URLs were checked when written (or the name now resolves there).
        server = register(caller, "https://8.8.8.8/mcp")
        McpServer.update(url=mcp_server.url).execute()
        response = caller.post(f"/v1/mcp-servers/{server['id']}/sync")
        assert_error(response, 502, "MCP_SYNC_FAILED", "refused")
        assert "mcp.allow_private_urls" in McpServer.get_by_id(server["id"]).last_sync_error


def test_sync_works_in_the_served_app(tmp_path):
    """`serve`'s worker runs monkey-patched by gevent: the client there reads
    an event-stream answer and follows the tools' pages as in this process."""
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "served.db"),
        "AGENT_PLATFORM_MCP_ALLOW_PRIVATE_URLS": "true",
    }
    port = free_port()
    with (
        RunningMcpServer(json_response=False) as tools,
        serving_app(["--port", str(port)], environ, port) as (base, lines),
    ):
        headers = {"X-API-Key": lines[1].strip()}
        body = {"name": "Tools", "url": tools.url}
        made = requests.post(f"{base}/v1/mcp-servers", json=body, headers=headers, timeout=10)
        assert made.status_code == 201, made.text
        url = f"{base}/v1/mcp-servers/{made.json()['data']['id']}/sync"
        synced = requests.post(url, headers=headers, timeout=30).json()["data"]
    assert (synced["tools_count"], synced["last_sync_error"]) == (2, None)
