"""MCP servers (Model Context Protocol), the tools they offer, and which
tools each agent may use."""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, TextField

from .agents import Agent
from .base import BaseModel, JSONField, TimestampedModel, WorkspaceScoped, utcnow
from .encrypted import SecretsJSONField
from .fastsql import Listing
from .tenancy import Workspace

TRANSPORTS = ("streamable-http",)


class McpServer(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="mcp_servers", on_delete="CASCADE")
    name = CharField(max_length=200)
    url = TextField()
    transport = CharField(max_length=30, default="streamable-http")
    # Sent with every request (e.g. Authorization); never rendered, only their
    # names. Every value is encrypted at rest.
    headers = SecretsJSONField(default=dict)
    is_active = BooleanField(default=True)
    server_info = JSONField(null=True)
    last_synced_at = DateTimeField(null=True)
    last_sync_attempt_at = DateTimeField(null=True)
    last_sync_error = TextField(null=True)

    class Meta:
        table_name = "mcp_server"

    @classmethod
    def listed(cls, workspace_id, is_active=None):
        return Listing(cls, workspace=workspace_id, is_active=is_active)

    @property
    def header_names(self):
        return sorted(self.headers or {})

    @property
    def tools_count(self):
        return McpTool.select().where(McpTool.server == self.id).count()


class McpTool(TimestampedModel):
    server = ForeignKeyField(McpServer, backref="tools", on_delete="CASCADE")
    name = CharField(max_length=200)
    description = TextField(default="")
    input_schema = JSONField(default=dict)

    class Meta:
        table_name = "mcp_tool"
        indexes = ((("server", "name"), True),)

    @classmethod
    def of_server(cls, server_id):
        return cls.select().where(cls.server == server_id)

    @classmethod
    def in_workspace(cls, workspace_id):
        return cls.select(cls, McpServer).join(McpServer).where(McpServer.workspace == workspace_id)


class AgentTool(BaseModel):
    """A tool an agent is allowed to call."""

    # Indexed with tool below.
    agent = ForeignKeyField(Agent, backref="tool_links", on_delete="CASCADE", index=False)
    tool = ForeignKeyField(McpTool, backref="agent_links", on_delete="CASCADE")
    created_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "agent_tool"
        indexes = ((("agent", "tool"), True),)

    @classmethod
    def tools_of(cls, agent_id):
        """The agent's enabled tools with their servers, by server then name."""
        return (
            McpTool.select(McpTool, McpServer)
            .join(cls, on=(cls.tool == McpTool.id))
            .switch(McpTool)
            .join(McpServer)
            .where(cls.agent == agent_id)
            .order_by(McpServer.name, McpTool.name)
        )
