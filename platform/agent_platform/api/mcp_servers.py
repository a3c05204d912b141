"""MCP servers, their tools, and the tools each agent may use."""

from flask import Response, g
from flask.views import MethodView

from ..services import mcp
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.mcp import (
    AgentToolSchema,
    AgentToolsSchema,
    McpServerCreateSchema,
    McpServerListQuery,
    McpServerSchema,
    McpServerUpdateSchema,
    McpToolListQuery,
    McpToolSchema,
)

blp = ApiBlueprint(
    "mcp-servers",
    __name__,
    url_prefix="/mcp-servers",
    description="Model Context Protocol servers and their tools.",
)
agent_tools_blp = ApiBlueprint(
    "agent-tools",
    __name__,
    url_prefix="/agents",
    description="The MCP tools an agent may use.",
)


@blp.route("")
class McpServers(MethodView):
    @blp.scope("mcp:read")
    @blp.arguments(McpServerListQuery, location="query")
    @blp.response(200, paginated(McpServerSchema))
    @blp.errors(400)
    def get(self, query):
        """List MCP servers"""
        return mcp.list_servers(g.workspace_id, **query)

    @blp.scope("mcp:write")
    @blp.arguments(McpServerCreateSchema)
    @blp.response(201, McpServerSchema)
    @blp.errors(400)
    def post(self, values):
        """Register an MCP server (then sync it to load its tools)"""
        return mcp.create_server(g.workspace_id, values)


@blp.route("/<server_id>")
class McpServerById(MethodView):
    @blp.scope("mcp:read")
    @blp.response(200, McpServerSchema)
    @blp.errors(404)
    def get(self, server_id):
        """Get an MCP server"""
        return mcp.get_server(g.workspace_id, server_id)

    @blp.scope("mcp:write")
    @blp.arguments(McpServerUpdateSchema)
    @blp.response(200, McpServerSchema)
    @blp.errors(400, 404)
    def patch(self, changes, server_id):
        """Update an MCP server (headers, when given, replace all headers)"""
        return mcp.update_server(g.workspace_id, server_id, changes)

    @blp.scope("mcp:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, server_id):
        """Delete an MCP server and its tools"""
        mcp.delete_server(g.workspace_id, server_id)
        return Response(status=204)


@blp.route("/<server_id>/sync")
class SyncMcpServer(MethodView):
    @blp.scope("mcp:write")
    @blp.response(200, McpServerSchema)
    @blp.errors(404, 502)
    def post(self, server_id):
        """Connect to the server, list its tools and store them (502 MCP_SYNC_FAILED)"""
        return mcp.sync_server(g.workspace_id, server_id)


@blp.route("/<server_id>/tools")
class McpServerTools(MethodView):
    @blp.scope("mcp:read")
    @blp.arguments(McpToolListQuery, location="query")
    @blp.response(200, paginated(McpToolSchema))
    @blp.errors(400, 404)
    def get(self, query, server_id):
        """List the tools of an MCP server (as of its last sync)"""
        return mcp.list_tools(g.workspace_id, server_id, **query)


@agent_tools_blp.route("/<agent_id>/tools")
class AgentTools(MethodView):
    @agent_tools_blp.scope("mcp:read")
    @agent_tools_blp.response(200, AgentToolSchema(many=True))
    @agent_tools_blp.errors(404)
    def get(self, agent_id):
        """List the tools an agent may use"""
        return mcp.agent_tools(g.workspace_id, agent_id)

    @agent_tools_blp.scope("mcp:write")
    @agent_tools_blp.arguments(AgentToolsSchema)
    @agent_tools_blp.response(200, AgentToolSchema(many=True))
    @agent_tools_blp.errors(400, 404)
    def put(self, values, agent_id):
        """Set the tools an agent may use (replaces the set)"""
        return mcp.set_agent_tools(g.workspace_id, agent_id, values["tool_ids"])
