"""Custom fields: the workspace's own extra attributes for contacts."""

from peewee import BooleanField, CharField, ForeignKeyField, IntegerField

from .base import JSONField, TimestampedModel, WorkspaceScoped
from .fastsql import Listing
from .tenancy import Workspace


class CustomField(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="custom_fields", on_delete="CASCADE")
    name = CharField(max_length=100)
    field_type = CharField(max_length=20)
    options = JSONField(default=list)
    is_required = BooleanField(default=False)
    display_order = IntegerField(default=0)
    is_archived = BooleanField(default=False)

    class Meta:
        # Serves the default listing (newest first) without sorting.
        indexes = ((("workspace", "is_archived", "created_at", "id"), False),)

    @property
    def company_id(self):
        return Workspace.company_of(self.workspace_id)

    def as_dict(self):
        """The API's form of a custom field."""
        return {
            "id": self.id,
            "company_id": self.company_id,
            "name": self.name,
            "field_type": self.field_type,
            "options": self.options,
            "is_required": self.is_required,
            "display_order": self.display_order,
            "is_archived": self.is_archived,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    @classmethod
    def listed(cls, workspace_id, include_archived):
        return Listing(cls, workspace=workspace_id, is_archived=None if include_archived else False)

    @classmethod
    def active_named(cls, workspace_id, name, excluding_id=None):
        """The non-archived field called `name` (case-insensitive), if any."""
        query = cls.in_workspace(workspace_id).where(
            cls.is_archived == False,  # noqa: E712
            cls.name.collate("NOCASE") == name,
        )
        if excluding_id:
            query = query.where(cls.id != excluding_id)
        return query.first()
