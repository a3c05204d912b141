import marshmallow as ma
from marshmallow import fields, validate

from ...models.conversations import STATUSES
from ...models.leads import STATUSES as LEAD_STATUSES
from ...services.interactions import MAX_BULK
from ..pagination import ListQuery
from .channels import CHANNEL_TYPES
from .common import UtcDateTime
from .contacts import ContactListQuery
from .conversations import ConversationSchema
from .rendered import RenderedSchema


class LeadSummarySchema(ma.Schema):
    id = fields.String()
    status = fields.String(metadata={"enum": list(LEAD_STATUSES)})
    score = fields.Integer()


class InteractionSchema(ConversationSchema):
    render = staticmethod(lambda obj: obj)

    lead = fields.Nested(LeadSummarySchema, allow_none=True)
    unread = fields.Boolean(metadata={"description": "Its latest message is the contact's"})


class InteractionListQuery(ListQuery):
    """Every filter combines with the others (AND)."""

    SORT_FIELDS = ("updated_at", "created_at")

    channel_id = fields.UUID()
    channel_type = fields.String(validate=validate.OneOf(CHANNEL_TYPES))
    status = fields.String(validate=validate.OneOf(STATUSES))
    agent_id = fields.UUID()
    assigned_to = fields.String(
        validate=validate.Length(min=1, max=200), metadata={"description": "The assignee"}
    )
    contact_id = fields.UUID()
    lead_status = fields.String(
        validate=validate.OneOf(LEAD_STATUSES),
        metadata={"description": "The contact's lead has this status"},
    )
    handoff = fields.Boolean(metadata={"description": "A human holds it (true) or not (false)"})
    unread = fields.Boolean(metadata={"description": "Its latest message is the contact's"})
    tag = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        validate=validate.Length(max=10),
        metadata={
            "description": "The contact carries the tag (lead_tags), repeat for all of several",
            "explode": True,
        },
    )
    custom_field = ContactListQuery._declared_fields["custom_field"]
    created_from = UtcDateTime(metadata={"description": "Started at or after"})
    created_to = UtcDateTime(metadata={"description": "Started before"})
    active_from = UtcDateTime(metadata={"description": "Last activity at or after"})
    active_to = UtcDateTime(metadata={"description": "Last activity before"})
    q = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "Text some message of the conversation contains"},
    )

    gather_custom_fields = ContactListQuery.gather_custom_fields


class CloseManySchema(ma.Schema):
    conversation_ids = fields.List(
        fields.UUID(), required=True, validate=validate.Length(min=1, max=MAX_BULK)
    )


class CloseOutcomeSchema(RenderedSchema):
    render = staticmethod(lambda obj: obj)

    closed = fields.List(fields.String())
    already_closed = fields.List(fields.String())
    not_found = fields.List(fields.String())
