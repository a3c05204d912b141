"""Bodies of the variant address form: {"success": true, "data": {...}}."""

import marshmallow as ma
from marshmallow import fields, validate

from ...scopes import SCOPES
from ...services.keys import KEY_PREFIX
from ..pagination import ListQuery, PageBodySchema
from .agents import AgentBaseSchema, AgentSchema, AgentSettingsSchema
from .common import BareSchema, Name, UtcDateTime
from .trainings import TrainingSchema


class VariantAgentCreateSchema(AgentBaseSchema):
    """name is required; the other fields have the defaults of POST /v1/agents."""


class _AgentData(ma.Schema):
    agent = fields.Nested(AgentSchema)


class VariantAgentSchema(BareSchema):
    success = fields.Boolean()
    data = fields.Nested(_AgentData)


class QaCreateSchema(ma.Schema):
    agent_id = fields.UUID(required=True)
    question = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    answer = fields.String(required=True, validate=validate.Length(min=1, max=20000))


class _TrainingData(ma.Schema):
    training = fields.Nested(TrainingSchema)


class VariantTrainingSchema(BareSchema):
    success = fields.Boolean()
    data = fields.Nested(_TrainingData)


class VariantSettingsSchema(BareSchema):
    success = fields.Boolean()
    data = fields.Nested(AgentSettingsSchema)


class PermissionCreateSchema(ma.Schema):
    name = Name(required=True, validate=validate.Length(min=1, max=200))
    scopes = fields.List(
        fields.String(
            validate=validate.OneOf(
                sorted(SCOPES), error="unknown scope {input}; the scopes are: {choices}."
            )
        ),
        required=True,
        validate=validate.Length(min=1),
        metadata={"description": "Each must be held by the calling key"},
    )
    workspace_id = fields.UUID(
        metadata={"description": "Optional; when given it must be the key's workspace"}
    )


def _parent_id():
    return fields.String(
        allow_none=True,
        metadata={
            "description": "The key that minted this one through POST /workspaces/permissions "
            "(null: made by the CLI or at first start). Revoking a key revokes the keys minted "
            "from it, and they share its root's rate limit."
        },
    )


class PermissionSchema(ma.Schema):
    id = fields.String()
    name = fields.String()
    workspace_id = fields.String()
    scopes = fields.List(fields.String())
    parent_id = _parent_id()
    key = fields.String(metadata={"description": "The API key itself, shown only here"})
    created_at = UtcDateTime()


class _PermissionData(ma.Schema):
    permission = fields.Nested(PermissionSchema)


class VariantPermissionSchema(BareSchema):
    success = fields.Boolean()
    data = fields.Nested(_PermissionData)


class PermissionListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "last_used_at")
    is_revoked = fields.Boolean(metadata={"description": "Only revoked (true) or live keys"})


class PermissionListedSchema(ma.Schema):
    """A key as listed: never the key itself, which is shown once, at creation."""

    id = fields.String()
    name = fields.String()
    workspace_id = fields.String()
    scopes = fields.List(fields.String())
    key_prefix = fields.Function(
        lambda key: KEY_PREFIX + key.lookup_id,
        metadata={"description": "The key's public start, to tell keys apart (not a secret)"},
    )
    parent_id = _parent_id()
    created_at = UtcDateTime()
    last_used_at = UtcDateTime(allow_none=True)
    revoked_at = UtcDateTime(allow_none=True)


class VariantPermissionPageSchema(PageBodySchema):
    success = fields.Boolean()
    data = fields.List(fields.Nested(PermissionListedSchema), attribute="items")

    def get_attribute(self, obj, attr, default):
        return True if attr == "success" else super().get_attribute(obj, attr, default)


class _RevokedData(ma.Schema):
    permission = fields.Nested(PermissionListedSchema)


class VariantRevokedSchema(BareSchema):
    success = fields.Boolean()
    data = fields.Nested(_RevokedData)
