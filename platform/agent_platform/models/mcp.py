"""MCP servers (Model Context Protocol), the tools they offer, and which
tools each agent may use."""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, TextField

from .agents import Agent
from .base import BaseModel, JSONField, TimestampedModel, WorkspaceScoped, utcnow
from .encrypted import SecretsJSONField
from .fastsql import Listing
from .streamed import leading_fields, with_the_rest
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


# A tool's columns that may be long, stored last.
_LONG = ("description", "input_schema")


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
    def leading_columns(cls):
        """Every column but the description and input schema (stored last), as fields."""
        return leading_fields(cls, _LONG)

    @classmethod
    def with_the_rest(cls, tools):
        """`tools`, read without their description and input schema, as a
        Streamed that reads each one's when it is reached: they may hold
        10,000 and 65,536 characters, and 200 tools were 84 MB of JSON read
        and encoded whole."""
        return with_the_rest(cls, tools, _LONG)

    def as_dict(self):
        data = self.__data__
        return {
            "id": data["id"],
            "server_id": data["server"],
            "name": data["name"],
            "description": data["description"],
            "input_schema": data["input_schema"],
            "created_at": data["created_at"],
            "updated_at": data["updated_at"],
        }

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
    def tools_of(cls, agent_id, columns=None):
        """The agent's enabled tools with their servers, by server then name
        (only `columns` of the tools, when given)."""
        return (
            McpTool.select(*(columns or [McpTool]), McpServer)
            .join(cls, on=(cls.tool == McpTool.id))
            .switch(McpTool)
            .join(McpServer)
            .where(cls.agent == agent_id)
            .order_by(McpServer.name, McpTool.name)
        )
