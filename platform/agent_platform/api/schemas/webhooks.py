import marshmallow as ma
from marshmallow import fields, validate

from ...events.catalog import CATEGORIES, EVENTS
from ...models.webhooks import DELIVERY_STATUSES, WEBHOOK_STATUSES
from ..pagination import ListQuery
from .common import UtcDateTime

EVENTS_HELP = "Event names (message.received), category names (messages) or *"


class WebhookSchema(ma.Schema):
    id = fields.String()
    url = fields.String()
    events = fields.List(fields.String(), metadata={"description": EVENTS_HELP})
    description = fields.String()
    is_active = fields.Boolean()
    status = fields.String(metadata={"enum": list(WEBHOOK_STATUSES)})
    consecutive_failures = fields.Integer(
        metadata={"description": "Deliveries that failed every retry since the last success"}
    )
    last_success_at = UtcDateTime(allow_none=True)
    last_failure_at = UtcDateTime(allow_none=True)
    previous_secret_expires_at = UtcDateTime(
        allow_none=True,
        metadata={"description": "Until then the rotated-out secret also signs"},
    )
    agent_id = fields.String(
        allow_none=True,
        metadata={"description": "Set: the webhook gets only this agent's events"},
    )
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class WebhookWithSecretSchema(WebhookSchema):
    """Returned at creation and rotation only: the secret is never shown again."""

    secret = fields.String(metadata={"description": "whsec_ followed by base64 random bytes"})


class AgentWebhookCreateSchema(ma.Schema):
    """A webhook's fields (POST /v1/agents/{id}/webhooks takes the agent from its path)."""

    url = fields.String(
        required=True,
        validate=validate.Length(min=1, max=2048),
        metadata={"description": "http or https URL on a public address", "format": "uri"},
    )
    events = fields.List(
        fields.String(
            validate=validate.Length(min=1, max=64),
            metadata={"enum": ["*", *CATEGORIES, *EVENTS]},
        ),
        required=True,
        validate=validate.Length(min=1, max=100),
        metadata={"description": EVENTS_HELP},
    )
    description = fields.String(validate=validate.Length(max=1000))
    is_active = fields.Boolean()


class WebhookCreateSchema(AgentWebhookCreateSchema):
    agent_id = fields.UUID(
        metadata={"description": "Only this agent's events (see docs/webhooks.md); fixed once set"}
    )


class WebhookUpdateSchema(AgentWebhookCreateSchema):
    """Every field optional (PATCH); the agent of a webhook does not change."""

    def __init__(self, **kwargs):
        # Top-level fields only: nested objects given keep their required fields.
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class WebhookListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at", "url")

    status = fields.String(validate=validate.OneOf(WEBHOOK_STATUSES))
    is_active = fields.Boolean()
    agent_id = fields.UUID(metadata={"description": "Only the webhooks of this agent"})


class DeliveryAttemptSchema(ma.Schema):
    number = fields.Integer()
    attempted_at = UtcDateTime()
    success = fields.Boolean()
    http_status = fields.Integer(allow_none=True)
    response_time_ms = fields.Integer(allow_none=True)
    error = fields.String(allow_none=True)
    response_body = fields.String(
        allow_none=True, metadata={"description": "The first 1 KB of the answer"}
    )


class DeliverySchema(ma.Schema):
    id = fields.String()
    webhook_id = fields.String()
    event = fields.String()
    event_id = fields.String()
    status = fields.String(metadata={"enum": list(DELIVERY_STATUSES)})
    attempt_count = fields.Integer()
    next_attempt_at = UtcDateTime(allow_none=True)
    completed_at = UtcDateTime(allow_none=True)
    created_at = UtcDateTime()
    updated_at = UtcDateTime()
    attempts = fields.List(fields.Nested(DeliveryAttemptSchema), attribute="attempt_list")


class DeliveryListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at")

    status = fields.String(validate=validate.OneOf(DELIVERY_STATUSES))
    event = fields.String(validate=validate.Length(min=1, max=64))


class TestResultSchema(ma.Schema):
    success = fields.Boolean()
    http_status = fields.Integer(allow_none=True)
    response_time_ms = fields.Integer()
    error = fields.String(allow_none=True)
    response_body = fields.String(allow_none=True)
    event_id = fields.String()


class RecoverQuery(ma.Schema):
    since = UtcDateTime(required=True, metadata={"description": "ISO 8601 time"})


class RecoverResultSchema(ma.Schema):
    redelivered = fields.Integer()
    since = UtcDateTime()


class AgentWebhookListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "updated_at", "url")

    status = fields.String(validate=validate.OneOf(WEBHOOK_STATUSES))
    is_active = fields.Boolean()


class HistoryEntrySchema(ma.Schema):
    """An event of the agent, as its webhooks received it."""

    event_id = fields.String(attribute="id")
    event = fields.String(attribute="name", metadata={"enum": list(EVENTS)})
    data = fields.Dict()
    created_at = UtcDateTime()


class HistoryQuery(ListQuery):
    SORT_FIELDS = ("created_at",)

    event = fields.String(validate=validate.OneOf(list(EVENTS)))
