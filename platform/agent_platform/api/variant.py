"""The variant address form of the spec: paths without /v1, the same key,
scope, rate-limit and tenancy checks, bodies as {"success": true, "data": ...}."""

from flask import g
from flask.views import MethodView

from ..services import agents, permissions, trainings
from .blueprint import ANY_SCOPE, ApiBlueprint
from .schemas.variant import (
    PermissionCreateSchema,
    PermissionListQuery,
    QaCreateSchema,
    VariantAgentCreateSchema,
    VariantAgentSchema,
    VariantPermissionPageSchema,
    VariantPermissionSchema,
    VariantRevokedSchema,
    VariantSettingsSchema,
    VariantTrainingSchema,
)

blp = ApiBlueprint(
    "variant",
    __name__,
    url_prefix="",
    description="The variant address form: the same service without the /v1 prefix.",
)


@blp.route("/workspace/<workspaceId>/agents")
class VariantAgents(MethodView):
    @blp.scope("agents:write")
    @blp.arguments(VariantAgentCreateSchema)
    @blp.response(201, VariantAgentSchema)
    @blp.errors(400)
    def post(self, values, workspaceId):  # noqa: N803 - the spec's name; the pipeline checks it
        """Create an agent in the key's workspace (403 WORKSPACE_ACCESS_DENIED otherwise)"""
        agent = agents.create_agent(g.workspace_id, values)
        return {"success": True, "data": {"agent": agent}}


@blp.route("/training/qa")
class VariantQa(MethodView):
    @blp.scope("trainings:write")
    @blp.arguments(QaCreateSchema)
    @blp.response(201, VariantTrainingSchema)
    @blp.errors(400, 404)
    def post(self, values):
        """Add a question-and-answer training to an agent"""
        agent_id = str(values.pop("agent_id"))
        training = trainings.create_training(g.workspace_id, agent_id, {"type": "qa", **values})
        return {"success": True, "data": {"training": training}}


@blp.route("/agent/<agent_id>/settings")
class VariantSettings(MethodView):
    @blp.scope("agents:read")
    @blp.response(200, VariantSettingsSchema)
    @blp.errors(404)
    def get(self, agent_id):
        """Get an agent's settings"""
        return {"success": True, "data": agents.get_settings(g.workspace_id, agent_id)}


@blp.route("/workspaces/permissions")
class VariantPermissions(MethodView):
    @blp.scope(ANY_SCOPE)
    @blp.arguments(PermissionCreateSchema)
    @blp.response(201, VariantPermissionSchema)
    @blp.errors(400)
    def post(self, values):
        """Create a permission: an API key of this workspace with some of the caller's scopes"""
        key, raw_key = permissions.create_permission(g.api_key, **values)
        permission = {"key": raw_key, "workspace_id": key.workspace_id}
        for name in ("id", "name", "scopes", "parent_id", "created_at"):
            permission[name] = getattr(key, name)
        return {"success": True, "data": {"permission": permission}}

    @blp.scope("permissions:read")
    @blp.arguments(PermissionListQuery, location="query")
    @blp.response(200, VariantPermissionPageSchema)
    @blp.errors(400)
    def get(self, query):
        """List the workspace's API keys, newest first (never the keys themselves)"""
        return permissions.list_permissions(g.api_key, **query)


@blp.route("/workspaces/permissions/<permission_id>")
class VariantPermissionById(MethodView):
    @blp.scope("permissions:write")
    @blp.response(200, VariantRevokedSchema)
    @blp.errors(403, 404)
    def delete(self, permission_id):
        """Revoke an API key of the workspace, at once (again: unchanged)"""
        key = permissions.revoke_permission(g.api_key, permission_id)
        return {"success": True, "data": {"permission": key}}
