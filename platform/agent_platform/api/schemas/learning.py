"""Clarifying questions on a conversation, and the unanswered questions a
human answered (services.clarifications, services.unanswered)."""

import marshmallow as ma
from marshmallow import fields, validate

from ...models.base import utcnow
from ...models.clarifications import STATUSES
from .common import UtcDateTime


class ChoiceSchema(ma.Schema):
    training_id = fields.String()
    label = fields.String(metadata={"description": "The training's question as offered"})


class ClarificationSchema(ma.Schema):
    id = fields.String()
    conversation_id = fields.String()
    agent_id = fields.String()
    message_id = fields.String(metadata={"description": "The agent's question"})
    asked_about_id = fields.String(metadata={"description": "The customer's message asked about"})
    choices = fields.List(fields.Nested(ChoiceSchema))
    status = fields.Method(
        "shown_status",
        metadata={
            "enum": list(STATUSES),
            "description": "pending; chosen (answered with chosen_training_id); none (none "
            "of these: the fallback followed); other (the customer wrote something else, "
            "answered as a new message); expired (unanswered for 24 hours)",
        },
    )
    chosen_training_id = fields.String(allow_none=True)
    reply_message_id = fields.String(
        allow_none=True, metadata={"description": "The customer's message that answered it"}
    )
    created_at = UtcDateTime()
    resolved_at = UtcDateTime(allow_none=True)
    expires_at = UtcDateTime()

    def shown_status(self, clarification):
        return clarification.shown_status(utcnow())


class UnansweredQuestionSchema(ma.Schema):
    message_id = fields.String()
    conversation_id = fields.String()
    text = fields.String()
    created_at = UtcDateTime()


class HumanReplySchema(ma.Schema):
    message_id = fields.String()
    text = fields.String()
    created_at = UtcDateTime()


class UnansweredGroupSchema(ma.Schema):
    id = fields.String(metadata={"description": "The id of the group's oldest question"})
    count = fields.Integer()
    questions = fields.List(fields.Nested(UnansweredQuestionSchema))
    reply = fields.Nested(
        HumanReplySchema, metadata={"description": "The human's reply to the latest question"}
    )


class LearnSchema(ma.Schema):
    question = fields.String(
        validate=validate.Length(min=1, max=2000),
        metadata={"description": "Default: the group's questions, one per line (variants)"},
    )
    answer = fields.String(
        validate=validate.Length(min=1, max=20000),
        metadata={"description": "Default: the human's reply"},
    )
