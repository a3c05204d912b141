import marshmallow as ma
from marshmallow import fields, validate

from ...models.conversations import ACTIVE_STATUSES, STATUSES
from ..pagination import ListQuery
from .common import UtcDateTime
from .rendered import RenderedSchema


class ConversationSchema(RenderedSchema):
    id = fields.String()
    contact_id = fields.String(allow_none=True)
    channel_id = fields.String(allow_none=True)
    agent_id = fields.String(allow_none=True)
    status = fields.String(
        metadata={"enum": list(STATUSES), "description": "See the state machine in the README"}
    )
    assigned_to = fields.String(
        allow_none=True, metadata={"description": "The human operator it is assigned to"}
    )
    message_count = fields.Integer()
    last_message_at = UtcDateTime(allow_none=True)
    handoff_started_at = UtcDateTime(allow_none=True)
    closed_at = UtcDateTime(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime(metadata={"description": "Last activity (change or message)"})


class ConversationCreateSchema(ma.Schema):
    contact_id = fields.UUID(required=True)
    channel_id = fields.UUID(required=True)
    agent_id = fields.UUID(metadata={"description": "Default: the channel's agent"})
    assigned_to = fields.String(validate=validate.Length(min=1, max=200))


class ConversationListQuery(ListQuery):
    SORT_FIELDS = ("updated_at", "created_at")

    status = fields.String(validate=validate.OneOf(STATUSES))
    agent_id = fields.UUID()
    channel_id = fields.UUID()
    contact_id = fields.UUID()
    assigned_to = fields.String(validate=validate.Length(min=1, max=200))
    updated_since = UtcDateTime(metadata={"description": "Activity at or after this time"})
    q = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "Text that some message of the conversation contains"},
    )


class ChatListQuery(ListQuery):
    SORT_FIELDS = ("updated_at",)

    status = fields.String(validate=validate.OneOf(ACTIVE_STATUSES))
    agent_id = fields.UUID()
    channel_id = fields.UUID()
    assigned_to = fields.String(validate=validate.Length(min=1, max=200))


class AssignSchema(ma.Schema):
    assigned_to = fields.String(
        required=True,
        allow_none=True,
        validate=validate.Length(min=1, max=200),
        metadata={"description": "Name or e-mail of the human operator; null unassigns"},
    )


class TransferSchema(ma.Schema):
    agent_id = fields.UUID(required=True)


class HandoffSchema(ma.Schema):
    assigned_to = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "The human operator who takes it over (optional)"},
    )
