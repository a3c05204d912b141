import marshmallow as ma
from marshmallow import fields, validate

from ...models.leads import RULE_KINDS, STATUSES
from ...services.leads import SETTABLE_STATUSES
from ..pagination import ListQuery
from .channels import CHANNEL_TYPES
from .common import Name, UtcDateTime
from .opportunities import OpportunityCreateSchema, OpportunitySchema
from .rendered import RenderedSchema

POINTS = validate.Range(min=-100, max=100)
# api, or the type of the channel whose first inbound conversation made the lead.
SOURCES = ("api", *CHANNEL_TYPES)


class ScoreReasonSchema(ma.Schema):
    rule_id = fields.String(allow_none=True, metadata={"description": "null for manual"})
    name = fields.String()
    kind = fields.String(metadata={"enum": [*RULE_KINDS, "manual"]})
    points = fields.Integer()


class LeadSchema(RenderedSchema):
    id = fields.String()
    contact_id = fields.String()
    status = fields.String(metadata={"enum": list(STATUSES)})
    source = fields.String(metadata={"enum": list(SOURCES)})
    owner = fields.String(allow_none=True)
    notes = fields.String()
    score = fields.Integer(metadata={"description": "0 to 100: the sum of score_reasons, bounded"})
    score_reasons = fields.List(fields.Nested(ScoreReasonSchema))
    qualified_at = UtcDateTime(allow_none=True)
    converted_at = UtcDateTime(allow_none=True)
    opportunity_id = fields.String(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class LeadCreateSchema(ma.Schema):
    contact_id = fields.UUID(required=True)
    status = fields.String(validate=validate.OneOf(SETTABLE_STATUSES))
    source = fields.String(validate=validate.OneOf(SOURCES))
    owner = Name(allow_none=True, validate=validate.Length(min=1, max=200))
    notes = fields.String(validate=validate.Length(max=10000))


class LeadUpdateSchema(ma.Schema):
    status = fields.String(
        validate=validate.OneOf(SETTABLE_STATUSES),
        metadata={"description": "converted is reached by POST /v1/leads/{lead_id}/convert"},
    )
    source = fields.String(validate=validate.OneOf(SOURCES))
    owner = Name(allow_none=True, validate=validate.Length(min=1, max=200))
    notes = fields.String(validate=validate.Length(max=10000))


class LeadListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at", "score")

    status = fields.String(validate=validate.OneOf(STATUSES))
    source = fields.String(validate=validate.OneOf(SOURCES))
    owner = fields.String(validate=validate.Length(min=1, max=200))
    min_score = fields.Integer(validate=validate.Range(min=0, max=100))


class AdjustmentSchema(RenderedSchema):
    id = fields.String()
    points = fields.Integer()
    reason = fields.String()
    actor = fields.String(metadata={"description": "The API key that made it: name (id)"})
    created_at = UtcDateTime()


def _not_zero(points):
    if points == 0:
        raise ma.ValidationError("must not be 0 (an adjustment changes the score)")


class AdjustmentCreateSchema(ma.Schema):
    points = fields.Integer(
        required=True,
        validate=[POINTS, _not_zero],
        metadata={"description": "-100 to 100, not 0"},
    )
    reason = fields.String(required=True, validate=validate.Length(min=1, max=1000))


class AdjustmentListQuery(ListQuery):
    SORT_FIELDS = ("created_at",)


class ConvertSchema(OpportunityCreateSchema):
    """The opportunity to create; title defaults to "Deal with <contact>",
    the column to the first open one, the contact to the lead's."""

    def __init__(self, **kwargs):
        super().__init__(partial=("title",), **kwargs)


class ConversionSchema(RenderedSchema):
    render = staticmethod(lambda obj: obj)

    lead = fields.Nested(LeadSchema)
    opportunity = fields.Nested(OpportunitySchema)


class RuleParamsSchema(ma.Schema):
    at_least = fields.Integer(
        validate=validate.Range(min=1, max=1_000_000),
        metadata={"description": "messages_received: at least this many messages"},
    )
    seconds = fields.Integer(
        validate=validate.Range(min=1, max=30 * 86400),
        metadata={"description": "replied_within: the contact answered within this many seconds"},
    )
    intention_id = fields.UUID(metadata={"description": "intention_matched: the intention"})
    custom_field_id = fields.UUID(metadata={"description": "custom_field_value: the field"})
    value = fields.Raw(
        validate=lambda value: isinstance(value, str | int | float | bool),
        metadata={
            "description": "custom_field_value: the value (for a multiselect, one option)",
            "oneOf": [
                {"type": "string", "maxLength": 10000},
                {"type": "number"},
                {"type": "boolean"},
            ],
        },
    )


class ScoringRuleSchema(RenderedSchema):
    id = fields.String()
    name = fields.String()
    kind = fields.String(metadata={"enum": list(RULE_KINDS)})
    points = fields.Integer()
    params = fields.Dict(metadata={"description": "As given, for the kind"})
    is_active = fields.Boolean()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class ScoringRuleCreateSchema(ma.Schema):
    name = Name(required=True, validate=validate.Length(min=1, max=100))
    kind = fields.String(required=True, validate=validate.OneOf(RULE_KINDS))
    points = fields.Integer(required=True, validate=POINTS)
    params = fields.Nested(
        RuleParamsSchema,
        required=True,
        metadata={"description": "Exactly the params of the kind (see docs/sales.md)"},
    )
    is_active = fields.Boolean()


class ScoringRuleUpdateSchema(ScoringRuleCreateSchema):
    def __init__(self, **kwargs):
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class ScoringRuleListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at")

    is_active = fields.Boolean()


class SalesSettingsSchema(RenderedSchema):
    qualify_threshold = fields.Integer(
        allow_none=True, metadata={"description": "null: leads are qualified by hand only"}
    )
    auto_create_leads = fields.Boolean()


class SalesSettingsUpdateSchema(ma.Schema):
    qualify_threshold = fields.Integer(allow_none=True, validate=validate.Range(min=0, max=100))
    auto_create_leads = fields.Boolean()
