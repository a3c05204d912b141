"""The admins' pages of the agents: the list (with the credits each used
this month), create, edit (its words and its model provider, the key
write-only), activate or deactivate, and make one the default. Each form is
read through the API's own schema and saved by the API's own service call."""

from flask import redirect, render_template, request, url_for

from ..api.schemas.agents import AgentCreateSchema, AgentSettingsSchema, AgentUpdateSchema
from ..errors import ApiError
from ..models.pagination import PageRequest
from ..services import agents, credits, model_trial
from . import forms, session
from .blueprint import blp

LISTED = PageRequest(page=1, limit=100, order="asc", sort="created_at")
AGENT_FIELDS = ("name", "language", "tone", "greeting_message")
SETTING_FIELDS = ("fallback_message", "model_provider", "model_name", "base_url")
DONE = {
    "created": "The agent is created. Teach it under Knowledge, then try it in the test chat.",
    "saved": "The agent's changes are saved.",
    "activated": "The agent is active: it answers on its channels.",
    "deactivated": "The agent is inactive: it no longer answers on its channels.",
    "default": "This agent is the default now.",
}


@blp.route("/agents")
@session.signed_in(role="admin")
def agents_page():
    return _list_page()


@blp.route("/agents", methods=["POST"])
@session.signed_in(role="admin")
def create_agent():
    entered = forms.filled(AGENT_FIELDS)
    try:
        values = forms.load(AgentCreateSchema(), entered)
        agent = agents.create_agent(_workspace_id(), values)
    except ApiError as error:
        return _list_page(error=error.message, status=error.status, entered=entered)
    return redirect(url_for("web.agent_page", agent_id=agent.id, done="created"), forms.SEE_OTHER)


@blp.route("/agents/<agent_id>")
@session.signed_in(role="admin")
def agent_page(agent_id):
    return _agent_page(agents.get_agent(_workspace_id(), agent_id))


@blp.route("/agents/<agent_id>", methods=["POST"])
@session.signed_in(role="admin")
def save_agent(agent_id):
    agent = agents.get_agent(_workspace_id(), agent_id)
    try:
        changes = forms.load(AgentUpdateSchema(), _agent_fields())
        settings = forms.load(AgentSettingsSchema(), _settings_fields())
        agents.update_agent(_workspace_id(), agent.id, changes)
        agents.update_settings(_workspace_id(), agent.id, settings)
    except ApiError as error:
        return _agent_page(agent, error=error.message, status=error.status)
    return _back(agent.id, "saved")


@blp.route("/agents/<agent_id>/active", methods=["POST"])
@session.signed_in(role="admin")
def set_agent_active(agent_id):
    active = request.form.get("active") == "true"
    agent = agents.set_active(_workspace_id(), agent_id, active=active)
    return _back(agent.id, "activated" if active else "deactivated")


@blp.route("/agents/<agent_id>/model-test", methods=["POST"])
@session.signed_in(role="admin")
def test_agent_model(agent_id):
    """What the agent's model answered a tiny prompt, or why it did not."""
    agent = agents.get_agent(_workspace_id(), agent_id)
    return _agent_page(agent, model_test=model_trial.try_model(_workspace_id(), agent.id))


@blp.route("/agents/<agent_id>/default", methods=["POST"])
@session.signed_in(role="admin")
def make_default(agent_id):
    agent = agents.update_agent(_workspace_id(), agent_id, {"is_default": True})
    return _back(agent.id, "default")


def _workspace_id():
    return session.current_user().workspace_id


def _agent_fields():
    """The agent's own fields; an empty greeting clears it, an empty name is refused."""
    values = forms.filled(AGENT_FIELDS)
    for name in ("name", "greeting_message"):
        values[name] = request.form.get(name, "").strip()
    return values


def _settings_fields():
    """The settings of the form: an empty fallback or base URL means the
    built-in one; the key is kept unless a new one is typed or removal ticked."""
    form = request.form
    values = {name: form.get(name, "").strip() for name in SETTING_FIELDS}
    values["base_url"] = values["base_url"] or None
    values["handoff_on_fallback"] = form.get("handoff_on_fallback") == "on"
    if not values["model_name"]:
        del values["model_name"]
    if form.get("api_key"):
        values["api_key"] = form["api_key"]
    elif form.get("remove_api_key") == "on":
        values["api_key"] = None
    return values


def _back(agent_id, done):
    return redirect(url_for("web.agent_page", agent_id=agent_id, done=done), forms.SEE_OTHER)


def _list_page(error=None, status=200, entered=None):
    user = session.current_user()
    listed = agents.list_agents(user.workspace_id, LISTED).items
    rows = [{"agent": agent, "credits": _used(agent)} for agent in listed]
    page = render_template(
        "app/agents/list.html",
        user=user,
        workspace=user.workspace,
        rows=rows,
        tones=agents.TONES,
        error=error,
        entered=entered or {},
    )
    return page, status


def _used(agent):
    return credits.usage_report(agent.workspace_id, agent.id)["total_credits"]


def _agent_page(agent, error=None, status=200, model_test=None):
    user = session.current_user()
    page = render_template(
        "app/agents/agent.html",
        user=user,
        workspace=user.workspace,
        agent=agent,
        settings=agents.get_settings(user.workspace_id, agent.id),
        used=_used(agent),
        tones=agents.TONES,
        providers=agents.MODEL_PROVIDERS,
        error=error,
        notice=forms.notice(DONE),
        model_test=model_test,
    )
    return page, status
