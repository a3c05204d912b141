"""Agents: allowed values, the one default agent, plan limits, settings,
soft deletion, and context added to a conversation."""

import re

from flask import current_app

from ..db import transaction
from ..errors import Forbidden, NotFound, ValidationError
from ..models import AgentTool, ContextEntry, Conversation, Training
from ..models.agents import SECRET_SETTINGS, Agent
from ..models.base import utcnow
from ..models.pagination import paginate
from ..replies.knowledge import PASSAGE_THRESHOLD, QA_MARGIN, QA_THRESHOLD
from . import channels

WORKFLOW_TYPES = ("support", "sales", "scheduling", "lead_qualification", "faq", "custom")
TONES = ("professional", "friendly", "formal", "casual", "empathetic", "enthusiastic", "neutral")
# Model providers the reply engine may be configured with (replies/providers):
# `knowledge` answers offline from the trainings; the others speak the OpenAI
# chat-completions protocol (openai-compatible, ollama, anthropic and google
# through their OpenAI-compatible endpoints).
MODEL_PROVIDERS = ("knowledge", "openai", "openai-compatible", "ollama", "anthropic", "google")
DEFAULT_SETTINGS = {
    "model_provider": "knowledge",
    "model_name": "gpt-4o-mini",
    "temperature": 0.7,
    "max_reply_length": 1000,
    "knowledge_enabled": True,
    "knowledge_max_results": 5,
    "tools_enabled": True,
    "handoff_keywords": ["human", "operator", "talk to a person"],  # new agents: by language
    # The reply engine's own (issue 7).
    "base_url": None,  # None: the provider's default from the configuration
    "max_tokens": 512,
    "timeout_seconds": None,  # None: REPLIES_MODEL_TIMEOUT_SECONDS
    "history_messages": 20,
    "fallback_message": "",  # "": a short built-in text in the agent's language
    "handoff_message": "",
    "handoff_on_fallback": True,
    "qa_threshold": QA_THRESHOLD,
    "qa_margin": QA_MARGIN,
    "passage_threshold": PASSAGE_THRESHOLD,
    # The knowledge provider asks back when unsure (replies.clarifying).
    "clarify_enabled": True,
}
# The handoff keywords a new agent gets, by its language (others: English).
DEFAULT_HANDOFF = DEFAULT_SETTINGS["handoff_keywords"]
HANDOFF_KEYWORDS = {
    "pt": ["atendente", "humano", "falar com uma pessoa"],
    "es": ["agente humano", "asesor", "hablar con una persona"],
}
CREATE_DEFAULTS = {"workflow_type": "support", "language": "en", "tone": "professional"}

# RFC 5646 language tags: language[-extlang][-script][-region][-variant...]
# (extensions and private use are not accepted: the reply engine has no use for them).
_LANGUAGE_TAG = re.compile(
    r"^(?P<language>[a-z]{2,3}(?:-[a-z]{3}){0,3})"
    r"(?:-(?P<script>[a-z]{4}))?"
    r"(?:-(?P<region>[a-z]{2}|[0-9]{3}))?"
    r"(?P<variants>(?:-(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*)$"
)


def not_found(agent_id):
    return NotFound(f"Agent {agent_id} not found.", code="AGENT_NOT_FOUND")


def get_agent(workspace_id, agent_id):
    """A live agent of the workspace, else 404 AGENT_NOT_FOUND."""
    return Agent.get_in_workspace(workspace_id, agent_id, not_found(agent_id))


def live_agent_id(workspace_id, agent_id):
    """The id of a live agent of the workspace (cheap), else 404 AGENT_NOT_FOUND."""
    found = Agent.live_id(workspace_id, agent_id)
    if found is None:
        raise not_found(agent_id)
    return found


def list_agents(workspace_id, paging, is_active=None, q=None):
    return paginate(Agent.listed(workspace_id, is_active, q), Agent, paging)


def normalize_language(tag):
    """The tag in canonical case (pt-br -> pt-BR), or raise naming `language`."""
    match = _LANGUAGE_TAG.match((tag or "").strip().lower())
    if not match:
        raise ValidationError(
            "language", "must be a BCP 47 language tag such as en, pt-BR or zh-Hant-TW"
        )
    parts = [match["language"]]
    if match["script"]:
        parts.append(match["script"].title())
    if match["region"]:
        parts.append(match["region"].upper())
    if match["variants"]:
        parts.append(match["variants"].lstrip("-"))
    return "-".join(parts)


def _check_values(values):
    if "language" in values:
        values["language"] = normalize_language(values["language"])
    for field, allowed in (("workflow_type", WORKFLOW_TYPES), ("tone", TONES)):
        if field in values and values[field] not in allowed:
            raise ValidationError(field, f"must be one of: {', '.join(allowed)}")
    return values


def create_agent(workspace_id, values):
    values = _check_values({**CREATE_DEFAULTS, **values})
    with transaction():
        _check_plan_limit(workspace_id)
        if values.get("is_default"):
            Agent.clear_default(workspace_id)
        settings = dict(DEFAULT_SETTINGS)
        language = values["language"].split("-")[0]
        settings["handoff_keywords"] = list(HANDOFF_KEYWORDS.get(language, DEFAULT_HANDOFF))
        return Agent.create(workspace=workspace_id, settings=settings, **values)


def update_agent(workspace_id, agent_id, changes):
    changes = _check_values(dict(changes))
    with transaction():
        agent = get_agent(workspace_id, agent_id)
        if changes.get("is_default"):
            Agent.clear_default(workspace_id, except_id=agent.id)
        for name, value in changes.items():
            setattr(agent, name, value)
        agent.save()
        return agent


def set_active(workspace_id, agent_id, active):
    """Activate or deactivate; doing it twice changes nothing the second time."""
    with transaction():
        agent = get_agent(workspace_id, agent_id)
        if agent.is_active != active:
            agent.is_active = active
            agent.save()
        return agent


def delete_agent(workspace_id, agent_id, now=None):
    """Soft-delete: the agent is gone for the API; its channels stay, detached;
    its conversations and credit history keep pointing at it. Its knowledge
    and tool choices are removed with it."""
    now = now or utcnow()
    with transaction():
        agent = get_agent(workspace_id, agent_id)
        channels.detach_agent(workspace_id, agent.id, now)
        Training.delete_of_agent(agent.id)
        AgentTool.delete().where(AgentTool.agent == agent.id).execute()
        agent.deleted_at = now
        agent.is_default = False
        agent.is_active = False
        agent.save()


def _check_plan_limit(workspace_id):
    limit = current_app.config.get("PLAN_MAX_AGENTS")
    if limit is not None and Agent.count_live(workspace_id) >= limit:
        raise Forbidden(
            f"Plan limit reached: this workspace may have at most {limit} agents "
            "(PLAN_MAX_AGENTS).",
            code="PLAN_LIMIT_REACHED",
        )


def settings_of(agent):
    """The agent's settings over the defaults (so new settings get their default)."""
    return {**DEFAULT_SETTINGS, **(agent.settings or {})}


def public_settings(settings):
    """Settings as the API shows them: secrets only as `<name>_set`."""
    shown = {name: value for name, value in settings.items() if name not in SECRET_SETTINGS}
    for name in SECRET_SETTINGS:
        shown[f"{name}_set"] = bool(settings.get(name))
    return shown


def get_settings(workspace_id, agent_id):
    return public_settings(settings_of(get_agent(workspace_id, agent_id)))


def update_settings(workspace_id, agent_id, changes):
    """Set the given settings; those left out keep their value (a secret given
    as null is removed)."""
    if "model_provider" in changes and changes["model_provider"] not in MODEL_PROVIDERS:
        raise ValidationError("model_provider", f"must be one of: {', '.join(MODEL_PROVIDERS)}")
    with transaction():
        agent = get_agent(workspace_id, agent_id)
        settings = {**settings_of(agent), **changes}
        for name in SECRET_SETTINGS:
            if name in settings and settings[name] is None:
                del settings[name]
        agent.settings = settings
        agent.save()
        return public_settings(agent.settings)


def conversation_not_found(conversation_id):
    return NotFound(f"Conversation {conversation_id} not found.", code="CONVERSATION_NOT_FOUND")


def add_context(workspace_id, agent_id, conversation_id, content, role="system"):
    """Store a context entry of the conversation for the agent."""
    with transaction():
        agent = get_agent(workspace_id, agent_id)
        conversation = Conversation.get_in_workspace(
            workspace_id, conversation_id, conversation_not_found(conversation_id)
        )
        ContextEntry.create(
            workspace=workspace_id,
            agent=agent.id,
            conversation=conversation.id,
            role=role,
            content=content,
        )
    return {"success": True}
