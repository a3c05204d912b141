"""Agents: CRUD, activation, settings, conversation context and credit use."""

from flask import Response, g
from flask.views import MethodView

from ..services import agents, credits
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.agents import (
    AgentCreateSchema,
    AgentListQuery,
    AgentSchema,
    AgentSettingsSchema,
    AgentUpdateSchema,
    ContextSchema,
    CreditsQuery,
    CreditsSchema,
    SuccessSchema,
)

blp = ApiBlueprint(
    "agents",
    __name__,
    url_prefix="/agents",
    description="Agents, their settings, conversation context and credit use.",
)


@blp.route("")
class Agents(MethodView):
    @blp.scope("agents:read")
    @blp.arguments(AgentListQuery, location="query")
    @blp.response(200, paginated(AgentSchema))
    @blp.errors(400)
    def get(self, query):
        """List agents"""
        return agents.list_agents(g.workspace_id, **query)

    @blp.scope("agents:write")
    @blp.arguments(AgentCreateSchema)
    @blp.response(201, AgentSchema)
    @blp.errors(400)
    def post(self, values):
        """Create an agent (403 PLAN_LIMIT_REACHED beyond the plan's agents)"""
        return agents.create_agent(g.workspace_id, values)


@blp.route("/<agent_id>")
class AgentById(MethodView):
    @blp.scope("agents:read")
    @blp.response(200, AgentSchema)
    @blp.errors(404)
    def get(self, agent_id):
        """Get an agent"""
        return agents.get_agent(g.workspace_id, agent_id)

    @blp.scope("agents:write")
    @blp.arguments(AgentUpdateSchema)
    @blp.response(200, AgentSchema)
    @blp.errors(400, 404)
    def patch(self, changes, agent_id):
        """Update an agent"""
        return agents.update_agent(g.workspace_id, agent_id, changes)

    @blp.scope("agents:delete", "agents:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, agent_id):
        """Delete an agent (its channels are detached; conversations and credits stay)"""
        agents.delete_agent(g.workspace_id, agent_id)
        return Response(status=204)


@blp.route("/<agent_id>/activate")
class ActivateAgent(MethodView):
    @blp.scope("agents:write")
    @blp.response(200, AgentSchema)
    @blp.errors(404)
    def post(self, agent_id):
        """Activate an agent (idempotent)"""
        return agents.set_active(g.workspace_id, agent_id, active=True)


@blp.route("/<agent_id>/deactivate")
class DeactivateAgent(MethodView):
    @blp.scope("agents:write")
    @blp.response(200, AgentSchema)
    @blp.errors(404)
    def post(self, agent_id):
        """Deactivate an agent (idempotent)"""
        return agents.set_active(g.workspace_id, agent_id, active=False)


@blp.route("/<agent_id>/settings")
class AgentSettings(MethodView):
    @blp.scope("agents:read")
    @blp.response(200, AgentSettingsSchema)
    @blp.errors(404)
    def get(self, agent_id):
        """Get an agent's settings"""
        return agents.get_settings(g.workspace_id, agent_id)

    @blp.scope("agents:write")
    @blp.arguments(AgentSettingsSchema)
    @blp.response(200, AgentSettingsSchema)
    @blp.errors(400, 404)
    def put(self, changes, agent_id):
        """Change an agent's settings (keys left out keep their value)"""
        return agents.update_settings(g.workspace_id, agent_id, changes)


@blp.route("/<agent_id>/context")
class AgentContext(MethodView):
    @blp.scope("agents:write")
    @blp.arguments(ContextSchema)
    @blp.response(200, SuccessSchema)
    @blp.errors(400, 404)
    def post(self, values, agent_id):
        """Add context to a conversation for this agent"""
        conversation_id = str(values.pop("conversation_id"))
        return agents.add_context(g.workspace_id, agent_id, conversation_id, **values)


@blp.route("/<agent_id>/credits")
class AgentCredits(MethodView):
    @blp.scope("agents:read")
    @blp.arguments(CreditsQuery, location="query")
    @blp.response(200, CreditsSchema)
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """Credits the agent used, per day (default: this calendar month, UTC)"""
        return credits.usage_report(g.workspace_id, agent_id, **query)
