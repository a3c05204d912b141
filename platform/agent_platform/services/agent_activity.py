"""An agent's own webhooks and its history: the events that concern it
(events/__init__._agent_named), as its webhooks receive them."""

from ..models import Event
from ..models.pagination import paginate
from . import agents, webhooks


def list_agent_webhooks(workspace_id, agent_id, paging, status=None, is_active=None):
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    return webhooks.list_webhooks(workspace_id, paging, status, is_active, agent_id)


def create_agent_webhook(workspace_id, agent_id, values):
    return webhooks.create_webhook(workspace_id, {**values, "agent_id": agent_id})


def history(workspace_id, agent_id, paging, event=None):
    """A page of the events of a live agent of the workspace."""
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    return paginate(Event.of_agent(agent_id, event), Event, paging)
