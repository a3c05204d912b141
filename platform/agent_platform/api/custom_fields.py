"""Custom fields: the workspace's own contact attributes."""

from flask import g
from flask.views import MethodView

from ..services import custom_fields
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.custom_fields import (
    CustomFieldCreateSchema,
    CustomFieldListQuery,
    CustomFieldSchema,
    CustomFieldUpdateSchema,
)

blp = ApiBlueprint(
    "custom-fields",
    __name__,
    url_prefix="/custom-fields",
    description="Custom fields of contacts.",
)


@blp.route("")
class CustomFields(MethodView):
    @blp.scope("custom-fields:read")
    @blp.arguments(CustomFieldListQuery, location="query")
    @blp.response(200, paginated(CustomFieldSchema))
    @blp.errors(400)
    def get(self, query):
        """List custom fields"""
        return custom_fields.list_fields(g.workspace_id, **query)

    @blp.scope("custom-fields:write")
    @blp.arguments(CustomFieldCreateSchema)
    @blp.response(201, CustomFieldSchema)
    @blp.errors(400, 409)
    def post(self, values):
        """Create a custom field"""
        return custom_fields.create_field(g.workspace_id, values)


@blp.route("/<field_id>")
class CustomFieldById(MethodView):
    @blp.scope("custom-fields:read")
    @blp.response(200, CustomFieldSchema)
    @blp.errors(404)
    def get(self, field_id):
        """Get a custom field"""
        return custom_fields.get_field(g.workspace_id, field_id)

    @blp.scope("custom-fields:write")
    @blp.arguments(CustomFieldUpdateSchema)
    @blp.response(200, CustomFieldSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, field_id):
        """Update a custom field"""
        return custom_fields.update_field(g.workspace_id, field_id, changes)


@blp.route("/<field_id>/archive")
class ArchiveCustomField(MethodView):
    @blp.scope("custom-fields:write")
    @blp.response(200, CustomFieldSchema)
    @blp.errors(404)
    def put(self, field_id):
        """Archive a custom field (idempotent)"""
        return custom_fields.set_archived(g.workspace_id, field_id, archived=True)


@blp.route("/<field_id>/unarchive")
class UnarchiveCustomField(MethodView):
    @blp.scope("custom-fields:write")
    @blp.response(200, CustomFieldSchema)
    @blp.errors(404, 409)
    def put(self, field_id):
        """Unarchive a custom field (idempotent)"""
        return custom_fields.set_archived(g.workspace_id, field_id, archived=False)
