"""Idle actions: what the agent does when a customer goes quiet."""

from flask import Response, g
from flask.views import MethodView

from ..services import routing
from ..services.routing import IDLE_ACTIONS
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.routing import (
    IdleActionCreateSchema,
    IdleActionListQuery,
    IdleActionSchema,
    IdleActionUpdateSchema,
)

blp = ApiBlueprint(
    "idle-actions",
    __name__,
    url_prefix="/agents",
    description="An agent's idle actions: a message, or closing, when a customer goes quiet.",
)


@blp.route("/<agent_id>/idle-actions")
class IdleActions(MethodView):
    @blp.scope("idle-actions:read")
    @blp.arguments(IdleActionListQuery, location="query")
    @blp.response(200, paginated(IdleActionSchema))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """List an agent's idle actions"""
        return routing.list_items(IDLE_ACTIONS, g.workspace_id, agent_id, **query)

    @blp.scope("idle-actions:write")
    @blp.arguments(IdleActionCreateSchema)
    @blp.response(201, IdleActionSchema)
    @blp.errors(400, 404)
    def post(self, values, agent_id):
        """Create an idle action"""
        return routing.create_item(IDLE_ACTIONS, g.workspace_id, agent_id, values)


@blp.route("/<agent_id>/idle-actions/<item_id>")
class IdleActionById(MethodView):
    @blp.scope("idle-actions:read")
    @blp.response(200, IdleActionSchema)
    @blp.errors(404)
    def get(self, agent_id, item_id):
        """Get an idle action"""
        return routing.get_item(IDLE_ACTIONS, g.workspace_id, agent_id, item_id)

    @blp.scope("idle-actions:write")
    @blp.arguments(IdleActionUpdateSchema)
    @blp.response(200, IdleActionSchema)
    @blp.errors(400, 404)
    def patch(self, changes, agent_id, item_id):
        """Update an idle action"""
        return routing.update_item(IDLE_ACTIONS, g.workspace_id, agent_id, item_id, changes)

    @blp.scope("idle-actions:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, agent_id, item_id):
        """Delete an idle action"""
        routing.delete_item(IDLE_ACTIONS, g.workspace_id, agent_id, item_id)
        return Response(status=204)
