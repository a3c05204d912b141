"""Custom fields: the workspace's own extra attributes for contacts."""

from peewee import BooleanField, CharField, ForeignKeyField, IntegerField

from .base import JSONField, TimestampedModel, WorkspaceScoped
from .fastsql import Listing
from .names import same_name
from .sqljson import JsonForm
from .tenancy import Workspace


class CustomField(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="custom_fields", on_delete="CASCADE")
    name = CharField(max_length=100)
    field_type = CharField(max_length=20)
    options = JSONField(default=list)
    is_required = BooleanField(default=False)
    display_order = IntegerField(default=0)
    is_archived = BooleanField(default=False)

    # Counted per workspace and archived or not (models/counts.py, migration 0010).
    COUNTED_BY = "is_archived"

    class Meta:
        # Serves the default listing (newest first) without sorting.
        indexes = ((("workspace", "is_archived", "created_at", "id"), False),)

    @property
    def company_id(self):
        return Workspace.company_of(self.workspace_id)

    # The API's form of a custom field: as_dict() for one, SQL for a page.
    API_FORM = (
        "id",
        "company_id",
        "name",
        "field_type",
        "options",
        "is_required",
        "display_order",
        "is_archived",
        "created_at",
        "updated_at",
    )

    def as_dict(self):
        return {name: getattr(self, name) for name in self.API_FORM}

    @classmethod
    def listed(cls, workspace_id, include_archived):
        listing = Listing(
            cls, workspace=workspace_id, is_archived=None if include_archived else False
        )
        company_id = Workspace.company_of(workspace_id)
        return listing.rendered(JsonForm(cls, cls.API_FORM, company_id=company_id))

    @classmethod
    def active_named(cls, workspace_id, name, excluding_id=None):
        """The non-archived field called `name` (any case, Unicode folding), if any."""
        query = cls.in_workspace(workspace_id).where(
            cls.is_archived == False,  # noqa: E712
            same_name(cls.name, name),
        )
        if excluding_id:
            query = query.where(cls.id != excluding_id)
        return query.first()

    @classmethod
    def archived_named(cls, workspace_id, name):
        """An archived field called `name` (any case, as active_named folds it), if any."""
        return (
            cls.in_workspace(workspace_id)
            .where(cls.is_archived == True, same_name(cls.name, name))  # noqa: E712
            .first()
        )
