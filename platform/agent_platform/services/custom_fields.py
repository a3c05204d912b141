"""Custom fields: type rules, unique names, archiving."""

from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..models import CustomField
from ..models.pagination import paginate

FIELD_TYPES = (
    "text",
    "number",
    "date",
    "boolean",
    "select",
    "multiselect",
    "email",
    "phone",
    "url",
)
TYPES_WITH_OPTIONS = ("select", "multiselect")


def not_found(field_id):
    return NotFound(f"Custom field {field_id} not found.", code="CUSTOM_FIELD_NOT_FOUND")


def get_field(workspace_id, field_id):
    return CustomField.get_in_workspace(workspace_id, field_id, not_found(field_id))


def list_fields(workspace_id, paging, include_archived=False):
    return paginate(CustomField.listed(workspace_id, include_archived), CustomField, paging)


def create_field(workspace_id, values):
    with transaction():
        _check_options(values["field_type"], values.get("options"))
        _check_name_free(workspace_id, values["name"])
        return CustomField.create(workspace=workspace_id, **values)


def update_field(workspace_id, field_id, changes):
    with transaction():
        field = get_field(workspace_id, field_id)
        field_type = changes.get("field_type", field.field_type)
        options = changes["options"] if "options" in changes else field.options
        if (
            "field_type" in changes
            and field_type not in TYPES_WITH_OPTIONS
            and "options" not in changes
        ):
            options = []
        _check_options(field_type, options)
        if "name" in changes and not field.is_archived:
            _check_name_free(workspace_id, changes["name"], excluding_id=field.id)
        for name, value in changes.items():
            setattr(field, name, value)
        field.options = options
        field.save()
        return field


def set_archived(workspace_id, field_id, archived):
    """Archive or unarchive; doing it twice is harmless and changes nothing."""
    with transaction():
        field = get_field(workspace_id, field_id)
        if field.is_archived == archived:
            return field
        if not archived:
            _check_name_free(workspace_id, field.name, excluding_id=field.id)
        field.is_archived = archived
        field.save()
        return field


def _check_options(field_type, options):
    if field_type in TYPES_WITH_OPTIONS:
        if not options:
            raise ValidationError("options", f"required and non-empty for field_type {field_type}")
        if len(set(options)) != len(options):
            raise ValidationError("options", "must not repeat a value")
    elif options:
        raise ValidationError("options", f"not allowed for field_type {field_type}")


def _check_name_free(workspace_id, name, excluding_id=None):
    if CustomField.active_named(workspace_id, name, excluding_id):
        raise Conflict(
            f"A custom field named '{name}' already exists in this workspace.",
            code="CUSTOM_FIELD_EXISTS",
        )
