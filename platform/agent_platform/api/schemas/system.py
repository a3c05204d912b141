from marshmallow import fields

from .common import BareSchema
from .rendered import RenderedSchema


class HealthSchema(BareSchema):
    status = fields.String(metadata={"enum": ["ok", "maintenance", "degraded"]})
    timestamp = fields.String(metadata={"description": "ISO 8601 time of the check"})
    reason = fields.String(
        metadata={
            "description": "Only when degraded: why, e.g. "
            '"the database cannot take writes: the disk is full"'
        }
    )


class KeyInfoSchema(RenderedSchema):
    """Documents services.keys.describe_key(), which builds the body."""

    render = staticmethod(dict)

    key_name = fields.String()
    company_id = fields.String()
    workspace_id = fields.String()
    scopes = fields.List(fields.String())
    permissions = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": 'Allowed actions per resource, e.g. {"agents": ["read"]}'},
    )
