"""Leads: contacts in the sales funnel, their scores and qualification."""

from flask import Response, g
from flask.views import MethodView

from ..services import leads
from .actor import actor
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.leads import (
    AdjustmentCreateSchema,
    AdjustmentListQuery,
    AdjustmentSchema,
    ConversionSchema,
    ConvertSchema,
    LeadCreateSchema,
    LeadListQuery,
    LeadSchema,
    LeadUpdateSchema,
    SalesSettingsSchema,
    SalesSettingsUpdateSchema,
)

blp = ApiBlueprint(
    "leads",
    __name__,
    url_prefix="/leads",
    description="Leads: new → contacted → qualified (or unqualified) → converted.",
)


@blp.route("")
class Leads(MethodView):
    @blp.scope("leads:read")
    @blp.arguments(LeadListQuery, location="query")
    @blp.response(200, paginated(LeadSchema))
    @blp.errors(400)
    def get(self, query):
        """List leads"""
        return leads.list_leads(g.workspace_id, **query)

    @blp.scope("leads:write")
    @blp.arguments(LeadCreateSchema)
    @blp.response(201, LeadSchema)
    @blp.errors(400, 404, 409)
    def post(self, values):
        """Make a contact a lead (scored at once from its history)"""
        return leads.create_lead(g.workspace_id, values)


@blp.route("/settings")
class Settings(MethodView):
    @blp.scope("leads:read")
    @blp.response(200, SalesSettingsSchema)
    def get(self):
        """Get the workspace's lead settings"""
        return leads.get_settings(g.workspace_id)

    @blp.scope("leads:write")
    @blp.arguments(SalesSettingsUpdateSchema)
    @blp.response(200, SalesSettingsSchema)
    @blp.errors(400)
    def patch(self, changes):
        """Change the qualification threshold or automatic lead creation"""
        return leads.update_settings(g.workspace_id, changes)


@blp.route("/<lead_id>")
class LeadById(MethodView):
    @blp.scope("leads:read")
    @blp.response(200, LeadSchema)
    @blp.errors(404)
    def get(self, lead_id):
        """Get a lead"""
        return leads.get_lead(g.workspace_id, lead_id)

    @blp.scope("leads:write")
    @blp.arguments(LeadUpdateSchema)
    @blp.response(200, LeadSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, lead_id):
        """Update a lead (status qualified raises lead.qualified)"""
        return leads.update_lead(g.workspace_id, lead_id, changes)

    @blp.scope("leads:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, lead_id):
        """Delete a lead (its contact stays)"""
        leads.delete_lead(g.workspace_id, lead_id)
        return Response(status=204)


@blp.route("/<lead_id>/qualify")
class QualifyLead(MethodView):
    @blp.scope("leads:write")
    @blp.response(200, LeadSchema)
    @blp.errors(404, 409)
    def post(self, lead_id):
        """Qualify a lead by hand (idempotent)"""
        return leads.qualify_lead(g.workspace_id, lead_id)


@blp.route("/<lead_id>/convert")
class ConvertLead(MethodView):
    @blp.scope("leads:write", plus=("pipeline:write",))
    @blp.arguments(ConvertSchema)
    @blp.response(201, ConversionSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, lead_id):
        """Convert a lead into an opportunity on the pipeline"""
        return leads.convert_lead(g.workspace_id, lead_id, values, actor())


@blp.route("/<lead_id>/adjustments")
class Adjustments(MethodView):
    @blp.scope("leads:read")
    @blp.arguments(AdjustmentListQuery, location="query")
    @blp.response(200, paginated(AdjustmentSchema))
    @blp.errors(400, 404)
    def get(self, query, lead_id):
        """List a lead's manual score adjustments"""
        return leads.list_adjustments(g.workspace_id, lead_id, **query)

    @blp.scope("leads:write")
    @blp.arguments(AdjustmentCreateSchema)
    @blp.response(201, LeadSchema)
    @blp.errors(400, 404)
    def post(self, values, lead_id):
        """Adjust a lead's score by hand (recorded with the key and the reason)"""
        return leads.adjust_score(g.workspace_id, lead_id, actor=actor(), **values)
