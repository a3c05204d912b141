"""Schemas of an agent's routing rules: intentions, transfer rules, idle actions."""

import marshmallow as ma
from marshmallow import fields, validate

from ...models.routing import IDLE_ACTIONS, INTENTION_ACTIONS, MATCH_TYPES, TRANSFER_ACTIONS
from ..pagination import ListQuery
from .common import Name, UtcDateTime
from .rendered import RenderedSchema

MAX_TEXT = 4096


def _text(maximum, **kwargs):
    return fields.String(validate=validate.Length(min=1, max=maximum), **kwargs)


def _name(**kwargs):
    return Name(validate=validate.Length(min=1, max=200), **kwargs)


def _choice(values, description):
    return fields.String(
        required=True,
        validate=validate.OneOf(values),
        metadata={"description": description},
    )


class _Partial:
    """Every field optional (PATCH)."""

    def __init__(self, **kwargs):
        # Top-level fields only: nested objects given keep their required fields.
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


# --- intentions -----------------------------------------------------------------------


class IntentionSchema(RenderedSchema):
    id = fields.String()
    agent_id = fields.String()
    name = fields.String()
    description = fields.String()
    examples = fields.List(fields.String())
    action = fields.String(metadata={"enum": list(INTENTION_ACTIONS)})
    reply_text = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    tag = fields.String(allow_none=True)
    target_agent_id = fields.String(allow_none=True)
    is_active = fields.Boolean()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class IntentionCreateSchema(ma.Schema):
    name = _name(required=True)
    description = fields.String(validate=validate.Length(max=2000))
    examples = fields.List(
        _text(500),
        required=True,
        validate=validate.Length(min=1, max=100),
        metadata={"description": "Phrases a customer with this intent might write"},
    )
    action = _choice(
        INTENTION_ACTIONS,
        "reply (reply_text), webhook (url, POSTed through the SSRF guard), tag (tag, added to "
        "the contact's lead_tags), transfer (target_agent_id; none: a human)",
    )
    reply_text = _text(MAX_TEXT, allow_none=True)
    url = _text(
        2048,
        allow_none=True,
        metadata={"format": "uri", "pattern": "^[hH][tT][tT][pP][sS]?://[^/?#]"},
    )
    tag = _text(100, allow_none=True)
    target_agent_id = fields.UUID(allow_none=True)
    is_active = fields.Boolean()


class IntentionUpdateSchema(_Partial, IntentionCreateSchema):
    pass


class IntentionListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "updated_at")

    is_active = fields.Boolean()


# --- transfer rules ---------------------------------------------------------------------


class TransferRuleSchema(RenderedSchema):
    id = fields.String()
    agent_id = fields.String()
    name = fields.String()
    priority = fields.Integer()
    match_type = fields.String(metadata={"enum": list(MATCH_TYPES)})
    keywords = fields.List(fields.String())
    pattern = fields.String(allow_none=True)
    intention_id = fields.String(allow_none=True)
    action = fields.String(metadata={"enum": list(TRANSFER_ACTIONS)})
    target_agent_id = fields.String(allow_none=True)
    message = fields.String(allow_none=True)
    is_active = fields.Boolean()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class TransferRuleCreateSchema(ma.Schema):
    name = _name(required=True)
    priority = fields.Integer(
        validate=validate.Range(min=0, max=1000),
        metadata={"description": "Rules are tried lowest first (default 0), then oldest first"},
    )
    match_type = _choice(
        MATCH_TYPES, "keywords (keywords), regex (pattern) or intention (intention_id)"
    )
    keywords = fields.List(_text(100), validate=validate.Length(min=1, max=50))
    pattern = _text(
        500,
        allow_none=True,
        metadata={"description": "RE2 syntax, any case (no look-around or back-references)"},
    )
    intention_id = fields.UUID(allow_none=True)
    action = _choice(TRANSFER_ACTIONS, "handoff (to a human) or transfer (target_agent_id)")
    target_agent_id = fields.UUID(allow_none=True)
    message = _text(
        MAX_TEXT, allow_none=True, metadata={"description": "Sent to the customer first"}
    )
    is_active = fields.Boolean()


class TransferRuleUpdateSchema(_Partial, TransferRuleCreateSchema):
    pass


class TransferRuleListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "priority", "updated_at")

    is_active = fields.Boolean()


# --- idle actions ---------------------------------------------------------------------


class IdleActionSchema(RenderedSchema):
    id = fields.String()
    agent_id = fields.String()
    name = fields.String()
    minutes = fields.Integer()
    action = fields.String(metadata={"enum": list(IDLE_ACTIONS)})
    message = fields.String(allow_none=True)
    is_active = fields.Boolean()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class IdleActionCreateSchema(ma.Schema):
    name = _name(required=True)
    minutes = fields.Integer(
        required=True,
        validate=validate.Range(min=1, max=43200),
        metadata={"description": "Minutes without a customer message (1 to 30 days)"},
    )
    action = _choice(IDLE_ACTIONS, "message (send `message`) or close (after `message`, if any)")
    message = _text(MAX_TEXT, allow_none=True)
    is_active = fields.Boolean()


class IdleActionUpdateSchema(_Partial, IdleActionCreateSchema):
    pass


class IdleActionListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "minutes", "name", "updated_at")

    is_active = fields.Boolean()
