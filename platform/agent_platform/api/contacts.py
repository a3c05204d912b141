"""Contacts: the customers of a workspace."""

from flask import Response, g
from flask.views import MethodView

from ..services import contacts
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.contacts import (
    ContactCreateSchema,
    ContactListQuery,
    ContactSchema,
    ContactUpdateSchema,
)

blp = ApiBlueprint(
    "contacts",
    __name__,
    url_prefix="/contacts",
    description="Contacts, their custom field values and network identities.",
)


@blp.route("")
class Contacts(MethodView):
    @blp.scope("contacts:read")
    @blp.arguments(ContactListQuery, location="query")
    @blp.response(200, paginated(ContactSchema))
    @blp.errors(400)
    def get(self, query):
        """List contacts (filters q, phone, email, channel_id, custom_field.<name>)"""
        return contacts.list_contacts(g.workspace_id, **query)

    @blp.scope("contacts:write")
    @blp.arguments(ContactCreateSchema)
    @blp.response(201, ContactSchema)
    @blp.errors(400, 409)
    def post(self, values):
        """Create a contact"""
        return contacts.create_contact(g.workspace_id, values)


@blp.route("/<contact_id>")
class ContactById(MethodView):
    @blp.scope("contacts:read")
    @blp.response(200, ContactSchema)
    @blp.errors(404)
    def get(self, contact_id):
        """Get a contact"""
        return contacts.get_contact(g.workspace_id, contact_id)

    @blp.scope("contacts:write")
    @blp.arguments(ContactUpdateSchema)
    @blp.response(200, ContactSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, contact_id):
        """Update a contact (custom_fields are merged; identities replaced)"""
        return contacts.update_contact(g.workspace_id, contact_id, changes)

    @blp.scope("contacts:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, contact_id):
        """Delete a contact with its identities, conversations and messages"""
        contacts.delete_contact(g.workspace_id, contact_id)
        return Response(status=204)
