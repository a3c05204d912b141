"""Opportunities: deals on the sales pipeline."""

from flask import Response, g
from flask.views import MethodView

from ..services import opportunities
from .actor import actor
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.opportunities import (
    MoveListQuery,
    MoveRecordSchema,
    MoveSchema,
    OpportunityCreateSchema,
    OpportunityListQuery,
    OpportunitySchema,
    OpportunityUpdateSchema,
)

blp = ApiBlueprint(
    "opportunities",
    __name__,
    url_prefix="/opportunities",
    description="Deals with an exact value (ISO 4217), moved between pipeline columns.",
)


@blp.route("")
class Opportunities(MethodView):
    @blp.scope("pipeline:read")
    @blp.arguments(OpportunityListQuery, location="query")
    @blp.response(200, paginated(OpportunitySchema))
    @blp.errors(400)
    def get(self, query):
        """List opportunities"""
        return opportunities.list_opportunities(g.workspace_id, **query)

    @blp.scope("pipeline:write")
    @blp.arguments(OpportunityCreateSchema)
    @blp.response(201, OpportunitySchema)
    @blp.errors(400, 404, 409)
    def post(self, values):
        """Create an opportunity (in the first open column unless column_id is given)"""
        return opportunities.create_opportunity(g.workspace_id, values, actor())


@blp.route("/<opportunity_id>")
class OpportunityById(MethodView):
    @blp.scope("pipeline:read")
    @blp.response(200, OpportunitySchema)
    @blp.errors(404)
    def get(self, opportunity_id):
        """Get an opportunity"""
        return opportunities.get_opportunity(g.workspace_id, opportunity_id)

    @blp.scope("pipeline:write")
    @blp.arguments(OpportunityUpdateSchema)
    @blp.response(200, OpportunitySchema)
    @blp.errors(400, 404)
    def patch(self, changes, opportunity_id):
        """Update an opportunity (moves go through .../move)"""
        return opportunities.update_opportunity(g.workspace_id, opportunity_id, changes)

    @blp.scope("pipeline:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, opportunity_id):
        """Delete an opportunity and its history"""
        opportunities.delete_opportunity(g.workspace_id, opportunity_id)
        return Response(status=204)


@blp.route("/<opportunity_id>/move")
class MoveOpportunity(MethodView):
    @blp.scope("pipeline:write")
    @blp.arguments(MoveSchema)
    @blp.response(200, OpportunitySchema)
    @blp.errors(400, 404, 409)
    def post(self, values, opportunity_id):
        """Move to another column (won or lost when the column's kind says so)"""
        return opportunities.move_opportunity(
            g.workspace_id, opportunity_id, values["column_id"], actor(), values.get("lost_reason")
        )


@blp.route("/<opportunity_id>/history")
class OpportunityHistory(MethodView):
    @blp.scope("pipeline:read")
    @blp.arguments(MoveListQuery, location="query")
    @blp.response(200, paginated(MoveRecordSchema))
    @blp.errors(400, 404)
    def get(self, query, opportunity_id):
        """An opportunity's moves between columns, first to last"""
        return opportunities.list_moves(g.workspace_id, opportunity_id, **query)
