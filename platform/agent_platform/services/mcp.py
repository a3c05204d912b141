"""MCP servers: registration, syncing their tools over the real protocol,
choosing the tools each agent may use, and calling a tool."""

from flask import current_app

from .. import netguard
from ..db import transaction
from ..errors import ApiError, NotFound, ValidationError
from ..models import AgentTool, McpServer, McpTool
from ..models.base import canonical_uuid, utcnow
from ..models.pagination import paginate
from . import agents
from .mcp_client import PRIVATE_URLS_SETTING, McpError, McpSession

__all__ = ["McpError", "call_tool", "sync_server"]

# Headers the client sets itself; a server record may not override them.
RESERVED_HEADERS = {
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "mcp-protocol-version",
    "mcp-session-id",
    "transfer-encoding",
}


def not_found(server_id):
    return NotFound(f"MCP server {server_id} not found.", code="MCP_SERVER_NOT_FOUND")


def get_server(workspace_id, server_id):
    return McpServer.get_in_workspace(workspace_id, server_id, not_found(server_id))


def list_servers(workspace_id, paging, is_active=None):
    return paginate(McpServer.listed(workspace_id, is_active), McpServer, paging)


def create_server(workspace_id, values):
    _check_headers(values.get("headers"))
    _check_url(values["url"])
    with transaction():
        return McpServer.create(workspace=workspace_id, **values)


def update_server(workspace_id, server_id, changes):
    """Change fields; `headers`, when given, replaces every header."""
    _check_headers(changes.get("headers"))
    if "url" in changes:
        _check_url(changes["url"])
    with transaction():
        server = get_server(workspace_id, server_id)
        for name, value in changes.items():
            setattr(server, name, value)
        server.save()
        return server


def delete_server(workspace_id, server_id):
    """Delete the server with its tools (agents stop using them)."""
    with transaction():
        get_server(workspace_id, server_id).delete_instance(recursive=False)


def _check_url(url):
    """Refuse, when written, what the guard refuses when connecting (400 naming url)."""
    allow_private = current_app.config["MCP_ALLOW_PRIVATE_URLS"]
    try:
        netguard.check_url(
            url, allow_private=allow_private, allowed_ports=() if allow_private else None
        )
    except netguard.UnsafeURL as error:
        reason = netguard.refusal(error, PRIVATE_URLS_SETTING, PRIVATE_URLS_SETTING)
        raise ValidationError("url", f"refused: {reason}") from None


def _check_headers(headers):
    for name in headers or {}:
        if name.lower() in RESERVED_HEADERS:
            raise ValidationError("headers", f"{name} is set by the service and cannot be given")


def open_session(server):
    """An McpSession to `server` with the configured guard and bounds."""
    config = current_app.config
    return McpSession(
        server.url,
        server.headers,
        allow_private=config["MCP_ALLOW_PRIVATE_URLS"],
        timeout=config["MCP_TIMEOUT_SECONDS"],
        max_bytes=config["MCP_MAX_RESPONSE_BYTES"],
    )


def sync_server(workspace_id, server_id, now=None):
    """Connect (initialize, tools/list with every page) and store the tools.

    Tools keep their ids across syncs (matched by name), so an agent's choice
    survives; tools the server no longer offers are removed. A failure is
    recorded on the server (last_sync_error) and answered as 502 MCP_SYNC_FAILED.
    """
    now = now or utcnow()
    server = get_server(workspace_id, server_id)
    try:
        with open_session(server) as session:
            tools = session.list_tools()
            info = session.server_info
    except McpError as error:
        _record_failure(workspace_id, server.id, str(error), now)
        raise ApiError(
            f"Syncing MCP server {server.id} failed: {error}", code="MCP_SYNC_FAILED", status=502
        ) from None
    with transaction():
        server = get_server(workspace_id, server_id)
        _store_tools(server, tools, now)
        server.server_info = info
        server.last_synced_at = server.last_sync_attempt_at = now
        server.last_sync_error = None
        server.save()
        return server


def _record_failure(workspace_id, server_id, message, now):
    with transaction():
        McpServer.update(last_sync_attempt_at=now, last_sync_error=message).where(
            McpServer.id == server_id, McpServer.workspace == workspace_id
        ).execute()


def _store_tools(server, tools, now):
    existing = {tool.name: tool for tool in McpTool.of_server(server.id)}
    offered = {}
    for tool in tools:
        offered.setdefault(tool["name"], tool)  # a repeated name: the first wins
    for name, tool in offered.items():
        row = existing.get(name)
        if row is None:
            McpTool.create(server=server.id, created_at=now, updated_at=now, **tool)
        elif (row.description, row.input_schema) != (tool["description"], tool["input_schema"]):
            row.description, row.input_schema = tool["description"], tool["input_schema"]
            row.save()
    gone = [row.id for name, row in existing.items() if name not in offered]
    if gone:
        McpTool.delete().where(McpTool.id.in_(gone)).execute()


def list_tools(workspace_id, server_id, paging):
    """A page of the server's tools, each one's description and input
    schema read as the page is written."""
    server = get_server(workspace_id, server_id)
    listed = McpTool.of_server(server.id)
    page = paginate(listed, McpTool, paging, columns=McpTool.leading_columns())
    page.items = McpTool.with_the_rest(page.items)
    return page


def agent_tools(workspace_id, agent_id):
    """The agent's tools, each one's description and input schema read as
    the answer is written."""
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    return McpTool.with_the_rest(list(AgentTool.tools_of(agent_id, McpTool.leading_columns())))


def set_agent_tools(workspace_id, agent_id, tool_ids):
    """Enable exactly these tools (of this workspace's servers) for the agent."""
    with transaction():
        agent = agents.get_agent(workspace_id, agent_id)
        wanted = list(dict.fromkeys(str(tool_id) for tool_id in tool_ids))
        found = {
            tool.id
            for tool in McpTool.in_workspace(workspace_id).where(
                McpTool.id.in_([canonical_uuid(t) for t in wanted])
            )
        }
        for tool_id in wanted:
            if tool_id not in found:
                raise NotFound(f"MCP tool {tool_id} not found.", code="MCP_TOOL_NOT_FOUND")
        AgentTool.delete().where(AgentTool.agent == agent.id).execute()
        for tool_id in wanted:
            AgentTool.create(agent=agent.id, tool=tool_id)
    return agent_tools(workspace_id, agent_id)


def call_tool(server, name, arguments=None):
    """Call tool `name` on `server` (an McpServer row) with `arguments`.

    Returns the MCP CallToolResult dict ({"content": [...], "isError": ...});
    raises McpError when the server cannot be used. For the reply engine.
    """
    with open_session(server) as session:
        return session.call_tool(name, arguments)
