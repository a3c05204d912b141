import marshmallow as ma
from marshmallow import fields, validate

from ...models.context import ROLES
from ...services.agents import MODEL_PROVIDERS, TONES, WORKFLOW_TYPES
from ..pagination import ListQuery
from .common import HttpUrl, Name, UtcDate, UtcDateTime

# What services.agents.normalize_language accepts, in any case.
LANGUAGE_PATTERN = (
    r"^[A-Za-z]{2,3}(-[A-Za-z]{3}){0,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?"
    r"(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$"
)
LANGUAGE_DOC = "A BCP 47 language tag (en, pt-BR, zh-Hant-TW), stored in canonical case"


class AgentSchema(ma.Schema):
    id = fields.String()
    name = fields.String()
    description = fields.String()
    is_active = fields.Boolean()
    is_default = fields.Boolean()
    workflow_type = fields.String(metadata={"enum": list(WORKFLOW_TYPES)})
    language = fields.String(metadata={"description": LANGUAGE_DOC})
    tone = fields.String(metadata={"enum": list(TONES)})
    personality = fields.String()
    greeting_message = fields.String()
    custom_instructions = fields.String()
    business_context = fields.String()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


def _text(maximum, **kwargs):
    return fields.String(validate=validate.Length(max=maximum), **kwargs)


class AgentBaseSchema(ma.Schema):
    """The fields of the variant creation form (all strings)."""

    name = Name(required=True, validate=validate.Length(min=1, max=200))
    description = _text(2000)
    workflow_type = fields.String(
        validate=validate.OneOf(WORKFLOW_TYPES), metadata={"description": "Default support"}
    )
    language = fields.String(
        validate=validate.Length(min=1, max=35),
        metadata={"description": LANGUAGE_DOC + "; default en", "pattern": LANGUAGE_PATTERN},
    )
    tone = fields.String(
        validate=validate.OneOf(TONES), metadata={"description": "Default professional"}
    )
    personality = _text(5000)
    greeting_message = _text(2000)


class AgentCreateSchema(AgentBaseSchema):
    custom_instructions = _text(20000)
    business_context = _text(20000)
    is_active = fields.Boolean(metadata={"description": "Default true"})
    is_default = fields.Boolean(
        metadata={"description": "Making an agent the default clears the previous default"}
    )


class AgentUpdateSchema(AgentCreateSchema):
    """Every field optional (PATCH)."""

    def __init__(self, **kwargs):
        # Top-level fields only: nested objects given keep their required fields.
        super().__init__(partial=tuple(self._declared_fields), **kwargs)


class AgentListQuery(ListQuery):
    SORT_FIELDS = ("created_at", "name", "updated_at")

    is_active = fields.Boolean()
    q = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "Part of the name (case-insensitive)"},
    )


class AgentSettingsSchema(ma.Schema):
    """What the reply engine uses; PUT sets the given keys, the others keep their value."""

    model_provider = fields.String(validate=validate.OneOf(MODEL_PROVIDERS))
    model_name = fields.String(validate=validate.Length(min=1, max=100))
    temperature = fields.Float(validate=validate.Range(min=0, max=2))
    max_reply_length = fields.Integer(
        validate=validate.Range(min=1, max=10000),
        metadata={"description": "Longest reply, in characters"},
    )
    knowledge_enabled = fields.Boolean(
        metadata={"description": "Answer from the agent's trainings"}
    )
    knowledge_max_results = fields.Integer(
        validate=validate.Range(min=1, max=20),
        metadata={"description": "Trainings retrieved per reply"},
    )
    tools_enabled = fields.Boolean(metadata={"description": "Let the agent call its MCP tools"})
    handoff_keywords = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        validate=validate.Length(max=50),
        metadata={"description": "A customer message containing one asks for a human"},
    )
    # The reply engine's settings (see README, "How the agent answers").
    base_url = HttpUrl(
        allow_none=True,
        require_tld=False,
        metadata={
            "description": "Chat-completions base URL; null: the provider's default",
            "format": "uri",
        },
    )
    api_key = fields.String(
        load_only=True,
        allow_none=True,
        validate=validate.Length(min=1, max=1000),
        metadata={"description": "Write-only; null removes it (reads show api_key_set)"},
    )
    api_key_set = fields.Boolean(dump_only=True)
    max_tokens = fields.Integer(
        validate=validate.Range(min=1, max=128000),
        metadata={"description": "Longest model answer, in tokens"},
    )
    timeout_seconds = fields.Float(
        allow_none=True,
        validate=validate.Range(min=1, max=600),
        metadata={"description": "Per model call; null: REPLIES_MODEL_TIMEOUT_SECONDS"},
    )
    history_messages = fields.Integer(
        validate=validate.Range(min=0, max=100),
        metadata={"description": "Last messages of the conversation put in the prompt"},
    )
    fallback_message = _text(
        2000, metadata={"description": "Sent when no answer can be given; empty: built-in"}
    )
    handoff_message = _text(
        2000, metadata={"description": "Sent when a handoff keyword is used; empty: built-in"}
    )
    handoff_on_fallback = fields.Boolean(
        metadata={"description": "Hand the conversation to a human when the fallback is sent"}
    )
    qa_threshold = fields.Float(validate=validate.Range(min=0, max=1))
    qa_margin = fields.Float(validate=validate.Range(min=0, max=1))
    passage_threshold = fields.Float(validate=validate.Range(min=0, max=1))
    clarify_enabled = fields.Boolean(
        metadata={
            "description": "The knowledge provider asks the customer to choose between its "
            "best Q&A trainings when unsure, instead of guessing"
        }
    )


class ContextSchema(ma.Schema):
    conversation_id = fields.UUID(required=True)
    content = fields.String(required=True, validate=validate.Length(min=1, max=20000))
    role = fields.String(load_default="system", validate=validate.OneOf(ROLES))


class SuccessSchema(ma.Schema):
    success = fields.Boolean()


class CreditsQuery(ma.Schema):
    date_from = UtcDate(
        data_key="from",
        metadata={"description": "First day (YYYY-MM-DD, UTC); default the 1st of the month"},
    )
    date_to = UtcDate(
        data_key="to",
        metadata={"description": "Last day, included; default the last day of the month"},
    )


class CreditDaySchema(ma.Schema):
    date = fields.String(metadata={"description": "YYYY-MM-DD (UTC)"})
    credits = fields.Float()
    conversations = fields.Integer(metadata={"description": "Distinct conversations that day"})


class CreditsSchema(ma.Schema):
    total_credits = fields.Float()
    period_start = UtcDateTime()
    period_end = UtcDateTime()
    breakdown = fields.List(fields.Nested(CreditDaySchema))
