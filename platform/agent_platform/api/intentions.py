"""Intentions: an agent's named intents, with example phrases and an action."""

from flask import Response, g
from flask.views import MethodView

from ..services import routing
from ..services.routing import INTENTIONS
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.routing import (
    IntentionCreateSchema,
    IntentionListQuery,
    IntentionSchema,
    IntentionUpdateSchema,
)

blp = ApiBlueprint(
    "intentions",
    __name__,
    url_prefix="/agents",
    description="An agent's intentions: example phrases and an action.",
)


@blp.route("/<agent_id>/intentions")
class Intentions(MethodView):
    @blp.scope("intentions:read")
    @blp.arguments(IntentionListQuery, location="query")
    @blp.response(200, paginated(IntentionSchema))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """List an agent's intentions"""
        return routing.list_items(INTENTIONS, g.workspace_id, agent_id, **query)

    @blp.scope("intentions:write")
    @blp.arguments(IntentionCreateSchema)
    @blp.response(201, IntentionSchema)
    @blp.errors(400, 404)
    def post(self, values, agent_id):
        """Create an intention"""
        return routing.create_item(INTENTIONS, g.workspace_id, agent_id, values)


@blp.route("/<agent_id>/intentions/<item_id>")
class IntentionById(MethodView):
    @blp.scope("intentions:read")
    @blp.response(200, IntentionSchema)
    @blp.errors(404)
    def get(self, agent_id, item_id):
        """Get an intention"""
        return routing.get_item(INTENTIONS, g.workspace_id, agent_id, item_id)

    @blp.scope("intentions:write")
    @blp.arguments(IntentionUpdateSchema)
    @blp.response(200, IntentionSchema)
    @blp.errors(400, 404)
    def patch(self, changes, agent_id, item_id):
        """Update an intention"""
        return routing.update_item(INTENTIONS, g.workspace_id, agent_id, item_id, changes)

    @blp.scope("intentions:write")
    @blp.response(204)
    @blp.errors(404, 409)
    def delete(self, agent_id, item_id):
        """Delete an intention"""
        routing.delete_item(INTENTIONS, g.workspace_id, agent_id, item_id)
        return Response(status=204)
