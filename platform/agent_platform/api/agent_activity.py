"""An agent's webhooks and history (agents:read covers both, per the spec)."""

from flask import g
from flask.views import MethodView

from ..services import agent_activity
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.webhooks import (
    AgentWebhookCreateSchema,
    AgentWebhookListQuery,
    HistoryEntrySchema,
    HistoryQuery,
    WebhookSchema,
    WebhookWithSecretSchema,
)

blp = ApiBlueprint(
    "agent-activity",
    __name__,
    url_prefix="/agents",
    description="An agent's own webhooks and the history of its events.",
)


@blp.route("/<agent_id>/webhooks")
class AgentWebhooks(MethodView):
    @blp.scope("agents:read", "webhooks:read")
    @blp.arguments(AgentWebhookListQuery, location="query")
    @blp.response(200, paginated(WebhookSchema))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """List the webhooks that get only this agent's events"""
        return agent_activity.list_agent_webhooks(g.workspace_id, agent_id, **query)

    @blp.scope("webhooks:write")
    @blp.arguments(AgentWebhookCreateSchema)
    @blp.response(201, WebhookWithSecretSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, agent_id):
        """Register a webhook for this agent's events only (secret shown only here)"""
        return agent_activity.create_agent_webhook(g.workspace_id, agent_id, values)


@blp.route("/<agent_id>/history")
class AgentHistory(MethodView):
    @blp.scope("agents:read")
    @blp.arguments(HistoryQuery, location="query")
    @blp.response(200, paginated(HistoryEntrySchema))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """The agent's history: the events of its conversations and of itself"""
        return agent_activity.history(g.workspace_id, agent_id, **query)
