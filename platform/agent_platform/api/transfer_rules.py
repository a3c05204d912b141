"""Transfer rules: when a customer message hands the conversation to a human or another agent."""

from flask import Response, g
from flask.views import MethodView

from ..services import routing
from ..services.routing import TRANSFER_RULES
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.routing import (
    TransferRuleCreateSchema,
    TransferRuleListQuery,
    TransferRuleSchema,
    TransferRuleUpdateSchema,
)

blp = ApiBlueprint(
    "transfer-rules",
    __name__,
    url_prefix="/agents",
    description="An agent's transfer rules: when to hand a conversation over.",
)


@blp.route("/<agent_id>/transfer-rules")
class TransferRules(MethodView):
    @blp.scope("transfer-rules:read")
    @blp.arguments(TransferRuleListQuery, location="query")
    @blp.response(200, paginated(TransferRuleSchema))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """List an agent's transfer rules"""
        return routing.list_items(TRANSFER_RULES, g.workspace_id, agent_id, **query)

    @blp.scope("transfer-rules:write")
    @blp.arguments(TransferRuleCreateSchema)
    @blp.response(201, TransferRuleSchema)
    @blp.errors(400, 404)
    def post(self, values, agent_id):
        """Create a transfer rule"""
        return routing.create_item(TRANSFER_RULES, g.workspace_id, agent_id, values)


@blp.route("/<agent_id>/transfer-rules/<item_id>")
class TransferRuleById(MethodView):
    @blp.scope("transfer-rules:read")
    @blp.response(200, TransferRuleSchema)
    @blp.errors(404)
    def get(self, agent_id, item_id):
        """Get a transfer rule"""
        return routing.get_item(TRANSFER_RULES, g.workspace_id, agent_id, item_id)

    @blp.scope("transfer-rules:write")
    @blp.arguments(TransferRuleUpdateSchema)
    @blp.response(200, TransferRuleSchema)
    @blp.errors(400, 404)
    def patch(self, changes, agent_id, item_id):
        """Update a transfer rule"""
        return routing.update_item(TRANSFER_RULES, g.workspace_id, agent_id, item_id, changes)

    @blp.scope("transfer-rules:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, agent_id, item_id):
        """Delete a transfer rule"""
        routing.delete_item(TRANSFER_RULES, g.workspace_id, agent_id, item_id)
        return Response(status=204)
