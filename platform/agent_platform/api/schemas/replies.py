import marshmallow as ma
from marshmallow import fields


class ReplyPreviewSchema(ma.Schema):
    conversation_id = fields.String()
    agent_id = fields.String(allow_none=True)
    would_answer = fields.Boolean(
        metadata={"description": "Whether a customer message now would be answered"}
    )
    silence_reason = fields.String(allow_none=True, metadata={"description": "Why not"})
    provider = fields.String(allow_none=True)
    prompt = fields.Dict(
        allow_none=True,
        metadata={
            "description": "language, customer_text, system_parts, history, knowledge, tools"
        },
    )
    provider_request = fields.Dict(
        allow_none=True,
        metadata={"description": "openai: url and request body; knowledge: its decision"},
    )
