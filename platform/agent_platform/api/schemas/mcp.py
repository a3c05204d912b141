import re

import marshmallow as ma
from marshmallow import fields, validate

from ...models.mcp import TRANSPORTS
from ..pagination import ListQuery
from .common import HttpUrl, Name, UtcDateTime
from .rendered import RenderedSchema

_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")


def _check_headers(headers):
    if len(headers) > 20:
        raise ma.ValidationError("At most 20 headers.")
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            raise ma.ValidationError(f"{name!r} is not a valid header name.")
        if len(value) > 4000 or any(char in value for char in "\r\n\x00"):
            raise ma.ValidationError(f"The value of {name} is too long or has line breaks.")


class McpServerSchema(ma.Schema):
    id = fields.String()
    name = fields.String()
    url = fields.String()
    transport = fields.String(metadata={"enum": list(TRANSPORTS)})
    header_names = fields.List(
        fields.String(), metadata={"description": "Names of the headers sent (values are secret)"}
    )
    is_active = fields.Boolean()
    server_info = fields.Dict(
        allow_none=True,
        metadata={"description": "name, version and protocol_version from the last sync"},
    )
    tools_count = fields.Integer()
    last_synced_at = UtcDateTime(allow_none=True)
    last_sync_attempt_at = UtcDateTime(allow_none=True)
    last_sync_error = fields.String(
        allow_none=True, metadata={"description": "Why the last sync failed; null after a success"}
    )
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class McpServerCreateSchema(ma.Schema):
    name = Name(required=True, validate=validate.Length(min=1, max=200))
    url = HttpUrl(
        required=True,
        require_tld=False,
        metadata={"description": "The server's streamable HTTP endpoint, e.g. https://host/mcp"},
    )
    transport = fields.String(
        validate=validate.OneOf(TRANSPORTS), metadata={"description": "Default streamable-http"}
    )
    headers = fields.Dict(
        keys=fields.String(),
        # What _check_headers allows of a value, documented (a name's rule
        # needs propertyNames, which OpenAPI 3.0 lacks: it is in the description).
        values=fields.String(metadata={"maxLength": 4000, "pattern": r"^[^\r\n\x00]*$"}),
        validate=_check_headers,
        load_only=True,
        metadata={
            "description": "Sent with every request (e.g. Authorization); write-only. At most "
            "20; names are HTTP header names (letters, digits, !#$%&'*+.^_`|~-, 1 to 100)",
            "maxProperties": 20,
        },
    )
    is_active = fields.Boolean()


class McpServerUpdateSchema(McpServerCreateSchema):
    """Every field optional (PATCH); `headers` replaces all headers."""

    def __init__(self, **kwargs):
        # Top-level fields only: nested objects given keep their required fields.
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class McpServerListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "updated_at")

    is_active = fields.Boolean()


class McpToolSchema(RenderedSchema):
    id = fields.String()
    server_id = fields.String()
    name = fields.String()
    description = fields.String()
    input_schema = fields.Dict(metadata={"description": "JSON Schema of the tool's arguments"})
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class AgentToolSchema(McpToolSchema):
    @staticmethod
    def render(tool):
        return {**tool.as_dict(), "server_name": tool.server.name}

    server_name = fields.Function(lambda tool: tool.server.name)


class McpToolListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name")


class AgentToolsSchema(ma.Schema):
    tool_ids = fields.List(
        fields.UUID(),
        required=True,
        validate=validate.Length(max=200),
        metadata={"description": "Every tool the agent may use (replaces the set)"},
    )
