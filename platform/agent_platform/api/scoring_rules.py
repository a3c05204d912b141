"""Lead scoring rules: the points each fact is worth."""

from flask import Response, g
from flask.views import MethodView

from ..services import scoring_rules
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.leads import (
    ScoringRuleCreateSchema,
    ScoringRuleListQuery,
    ScoringRuleSchema,
    ScoringRuleUpdateSchema,
)

blp = ApiBlueprint(
    "lead-scoring-rules",
    __name__,
    url_prefix="/leads/scoring-rules",
    description="Scoring rules; a change scores every lead of the workspace again.",
)


@blp.route("")
class ScoringRules(MethodView):
    @blp.scope("leads:read")
    @blp.arguments(ScoringRuleListQuery, location="query")
    @blp.response(200, paginated(ScoringRuleSchema))
    @blp.errors(400)
    def get(self, query):
        """List scoring rules"""
        return scoring_rules.list_rules(g.workspace_id, **query)

    @blp.scope("leads:write")
    @blp.arguments(ScoringRuleCreateSchema)
    @blp.response(201, ScoringRuleSchema)
    @blp.errors(400, 404)
    def post(self, values):
        """Create a scoring rule"""
        return scoring_rules.create_rule(g.workspace_id, values)


@blp.route("/<rule_id>")
class ScoringRuleById(MethodView):
    @blp.scope("leads:read")
    @blp.response(200, ScoringRuleSchema)
    @blp.errors(404)
    def get(self, rule_id):
        """Get a scoring rule"""
        return scoring_rules.get_rule(g.workspace_id, rule_id)

    @blp.scope("leads:write")
    @blp.arguments(ScoringRuleUpdateSchema)
    @blp.response(200, ScoringRuleSchema)
    @blp.errors(400, 404)
    def patch(self, changes, rule_id):
        """Update a scoring rule"""
        return scoring_rules.update_rule(g.workspace_id, rule_id, changes)

    @blp.scope("leads:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, rule_id):
        """Delete a scoring rule"""
        scoring_rules.delete_rule(g.workspace_id, rule_id)
        return Response(status=204)
